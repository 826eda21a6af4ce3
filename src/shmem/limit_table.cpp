// The shared table of limit counts: see limit_table.hpp. PostgreSQL side: the counts in a fixed
// array of slots, each with a spinlock made once at startup, and a dynahash in shared memory that
// finds a caller's slot, under one LWLock. Between a lock's acquire and release there is only
// plain arithmetic and hash lookups that cannot fail (HASH_ENTER_NULL), so no error can leave a
// lock held.
//
// A process remembers the slots of the callers it charged last (Remembered), with the slot's
// generation when it looked, and charges a remembered slot under the slot's spinlock alone: no
// LWLock, no hash of the 80-byte key. A slot's generation changes, under its spinlock, when its
// caller is forgotten, so a slot since given to another caller is seen as changed and looked up
// again. That is why a slot's spinlock is made once and never again: a process holding it while
// checking the generation must not have it made anew under it (dynahash's entries are reused for
// new keys, which is why the counts are not kept in them). Measured on a kept scale-10 bench
// cluster, lookups at 32 connections with a key's limits on against off (ABBA, perf): the LWLock
// pair, the hash and the key's compare were about half of what limits cost a call.
#include "shmem/limit_table.hpp"

#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
}

#include <algorithm>
#include <cstring>

namespace limit_table {

namespace {

constexpr std::size_t name_bytes = 64;

// The hash key: zero-filled, so equal subjects are equal bytes.
struct EntryKey {
    uint8 kind;
    uint8 pad[7];
    int64 key_id;
    char name[name_bytes];
};

// One caller's counts. Every field but `mutex` and `in_flight` is read and written under `mutex`.
struct alignas(64) Slot {
    slock_t mutex;     // made once, at startup
    uint64 generation; // changes when the slot's caller is forgotten
    // Calls admitted and not yet answered. Raised only under `mutex` (by a charge), lowered
    // without it (release): a call takes the spinlock once, not twice. Under the spinlock a count
    // of 0 stays 0 (only a charge raises it), so forget_idle may judge it there; a release that
    // lowers it meanwhile only makes a charge refuse as it would have a moment earlier. (Both
    // workers charge a busy key's slot: with the spinlock taken twice a call, perf put a tenth
    // of a microsecond a call in spinning on it.)
    pg_atomic_uint32 in_flight;
    rate_limits::Bucket bucket;
    double rate; // the rate and size the bucket was last charged under
    long capacity;
    bool quota_loaded;   // period_start and used hold the catalog's count (or a newer one)
    int64 period_start;  // of `used`, Unix microseconds
    int64 used;          // calls counted in that period
    int64 written_start; // what the catalog was last given
    int64 written_used;
    EntryKey key; // whose it is: an address slot's, to take it from its caller (make_address)
};

// The index: a caller's slot.
struct Entry {
    EntryKey key; // first: dynahash's key
    uint32 slot;
};

// The slots: first querygate.limit_entries for keys and policies, then querygate.address_entries
// for addresses, so that no number of addresses can take a key's place.
struct Shared {
    LWLock *lock;
    // Under the lock, exclusively:
    uint32 address_used; // address slots given out so far (the first ones, in order)
    uint32 address_hand; // the address slot given out longest ago, taken next (make_address)
    uint32 nfree;        // key slots not in use, their numbers in free[0..nfree)
    uint32 free[FLEXIBLE_ARRAY_MEMBER];
};

// The slots of the callers this process charged last, with the generation each had then.
struct Remembered {
    Slot *slot = nullptr;
    uint64 generation = 0;
    Kind kind = Kind::key;
    int64 key_id = 0;
    char name[name_bytes] = {}; // as the key keeps it: cut to 63 bytes
};
constexpr int remembered_most = 8;
Remembered remembered[remembered_most];
int next_remembered = 0; // the one replaced next

const char tranche[] = "querygate limits";
Shared *shared = nullptr;
Slot *slots = nullptr;
HTAB *table = nullptr;
std::vector<uintptr_t> *held = nullptr; // this process's holds not yet given back
bool exit_registered = false;

EntryKey key_of(const Subject &who)
{
    EntryKey k;
    std::memset(&k, 0, sizeof(k));
    k.kind = static_cast<uint8>(who.kind);
    k.key_id = who.key_id;
    // A key is counted by its id: its name is empty, and may have no data at all (memcpy from a
    // null pointer is undefined even for no bytes).
    if (!who.name.empty())
        std::memcpy(k.name, who.name.data(), std::min(who.name.size(), name_bytes - 1));
    return k;
}

// Whether the key names `who` (its name cut as key_of cuts it).
bool names(const char (&name)[name_bytes], const Subject &who)
{
    const std::size_t n = std::min(who.name.size(), name_bytes - 1);
    return (n == 0 || std::memcmp(name, who.name.data(), n) == 0) && name[n] == '\0';
}

// The slot this process charged `who` in last, with its generation then; nullptr if none.
Remembered *remembered_for(const Subject &who)
{
    for (Remembered &r : remembered)
        if (r.slot != nullptr && r.kind == who.kind && r.key_id == who.key_id && names(r.name, who))
            return &r;
    return nullptr;
}

void remember(const EntryKey &key, Slot *slot, uint64 generation)
{
    Remembered &r = remembered[next_remembered];
    next_remembered = (next_remembered + 1) % remembered_most;
    r.slot = slot;
    r.generation = generation;
    r.kind = static_cast<Kind>(key.kind);
    r.key_id = key.key_id;
    std::memcpy(r.name, key.name, sizeof(r.name));
}

// Forgets every entry that is as good as new. Under the lock, exclusively.
void forget_idle(int64 now_us)
{
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (Entry *e = static_cast<Entry *>(hash_seq_search(&scan))) {
        if (static_cast<int>(e->slot) >= settings::limit_entries)
            continue; // an address's: that pool takes its slots back itself
        Slot &s = slots[e->slot];
        SpinLockAcquire(&s.mutex);
        // Judged under the rate and size it was last charged under: a full bucket is what a new
        // one would be.
        const bool bucket_idle = s.bucket.refilled_us == 0 || s.rate <= 0 ||
                                 rate_limits::full(s.bucket, s.rate, s.capacity, now_us);
        const bool quota_kept =
            !s.quota_loaded || (s.used == s.written_used && s.period_start == s.written_start);
        const bool idle = pg_atomic_read_u32(&s.in_flight) == 0 && bucket_idle && quota_kept;
        if (idle)
            s.generation++; // what a process remembers of it is out of date
        SpinLockRelease(&s.mutex);
        if (idle) {
            shared->free[shared->nfree++] = e->slot;
            (void)hash_search(table, &e->key, HASH_REMOVE, nullptr);
        }
    }
}

// Slot `index`, empty, for key. Under the lock, exclusively.
Slot &make_slot(uint32 index, const EntryKey &key)
{
    Slot &s = slots[index];
    // Under its spinlock, never made anew: a process may be checking its generation.
    SpinLockAcquire(&s.mutex);
    pg_atomic_write_u32(&s.in_flight, 0); // no call holds a free slot: nothing lowers it now
    s.bucket = rate_limits::Bucket();
    s.rate = 0;
    s.capacity = 0;
    s.quota_loaded = false;
    s.period_start = s.used = s.written_start = s.written_used = 0;
    s.key = key;
    SpinLockRelease(&s.mutex);
    return s;
}

// An address's slot, in constant time: a free one while any is left, else the one given out
// longest ago (its address is forgotten: it starts again with a full bucket, as a new address
// would). Never a scan: a flood of new addresses costs each request the same. A slot with a call
// in flight is passed over (a call without credentials holds one only while it is refused or not),
// a few at most. Under the lock, exclusively; nullptr when none could be taken.
Slot *make_address(const EntryKey &key)
{
    const uint32 first = static_cast<uint32>(settings::limit_entries);
    const uint32 n = static_cast<uint32>(settings::address_entries);
    bool found = false;
    Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_ENTER_NULL, &found));
    if (e == nullptr)
        return nullptr;
    if (found)
        return &slots[e->slot];
    if (shared->address_used < n) {
        e->slot = first + shared->address_used++;
        return &make_slot(e->slot, key);
    }
    for (int tries = 0; tries < 8; tries++) {
        const uint32 index = first + shared->address_hand;
        shared->address_hand = (shared->address_hand + 1) % n;
        Slot &old = slots[index];
        // Judged under its spinlock, where a count of 0 stays 0 (Slot).
        SpinLockAcquire(&old.mutex);
        const bool idle = pg_atomic_read_u32(&old.in_flight) == 0;
        if (idle)
            old.generation++; // what a process remembers of it is out of date
        const EntryKey forgotten = old.key;
        SpinLockRelease(&old.mutex);
        if (!idle)
            continue;
        (void)hash_search(table, &forgotten, HASH_REMOVE, nullptr);
        e->slot = index;
        return &make_slot(index, key);
    }
    (void)hash_search(table, &key, HASH_REMOVE, nullptr);
    return nullptr;
}

// The slot for key, made (empty) if there is none. Under the lock, exclusively. nullptr when
// every slot holds a caller that matters.
Slot *find_or_make(const EntryKey &key, int64 now_us)
{
    bool found = false;
    if (Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr)))
        return &slots[e->slot];
    if (static_cast<Kind>(key.kind) == Kind::address)
        return make_address(key);
    if (shared->nfree == 0)
        forget_idle(now_us);
    if (shared->nfree == 0)
        return nullptr;
    Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_ENTER_NULL, &found));
    if (e == nullptr)
        return nullptr;
    if (found) // not after the search above, under the same lock; kept as it is if ever
        return &slots[e->slot];
    e->slot = shared->free[--shared->nfree];
    return &make_slot(e->slot, key);
}

void give_back_all(int, Datum)
{
    if (held == nullptr)
        return;
    while (!held->empty()) {
        Hold h;
        h.entry = held->back();
        release(h);
    }
}

ApiError refusal(ErrorCode code, const char *message)
{
    return api_errors::make(code, message);
}

enum class Outcome { admitted, over_quota, too_many_at_once, too_fast };

// What charging a call leaves to say in its headers.
struct Charged {
    Outcome outcome = Outcome::admitted;
    int64 used = 0;
    double tokens = 0;
    long bucket_left = 0;
    int64 wait_us = 0;
};

// Charges one call to slot s: its quota, its in-flight count and its bucket, in that order. Under
// the slot's spinlock.
Charged charge(Slot &s, const rate_limits::Limits &limits, int64 now_us, int64 period_start,
               long capacity)
{
    Charged c;
    const bool quota = limits.quota > 0;
    if (quota && s.period_start != period_start) {
        s.period_start = period_start; // a new day or month: the count starts again
        s.used = 0;
    }
    if (quota && s.used >= limits.quota)
        c.outcome = Outcome::over_quota;
    else if (limits.max_in_flight > 0 &&
             static_cast<long>(pg_atomic_read_u32(&s.in_flight)) >= limits.max_in_flight)
        c.outcome = Outcome::too_many_at_once;
    else if (limits.rate_per_second > 0 &&
             !rate_limits::take(s.bucket, limits.rate_per_second, capacity, now_us, c.wait_us,
                                c.bucket_left))
        c.outcome = Outcome::too_fast;
    if (limits.rate_per_second > 0) {
        s.rate = limits.rate_per_second;
        s.capacity = capacity;
    }
    if (c.outcome == Outcome::admitted) {
        (void)pg_atomic_fetch_add_u32(&s.in_flight, 1);
        if (quota)
            s.used++;
    }
    c.used = s.used;
    c.tokens = s.bucket.tokens;
    return c;
}

// Charges the call to the slot this process remembers for `who`, under that slot's spinlock
// alone; nullptr (nothing charged) when it remembers none, or the slot has since been given to
// another caller, or its quota count is not loaded yet.
Slot *charge_remembered(const Subject &who, const rate_limits::Limits &limits, int64 now_us,
                        int64 period_start, long capacity, Charged &charged)
{
    Remembered *r = remembered_for(who);
    if (r == nullptr)
        return nullptr;
    Slot &s = *r->slot;
    SpinLockAcquire(&s.mutex);
    const bool same = s.generation == r->generation && (limits.quota <= 0 || s.quota_loaded);
    if (same)
        charged = charge(s, limits, now_us, period_start, capacity);
    SpinLockRelease(&s.mutex);
    if (!same)
        r->slot = nullptr;
    return same ? &s : nullptr;
}

// Charges the call to `who`'s slot, found under the table's lock (and made, its quota count
// loaded, when there is none); remembered for the next call. nullptr when no slot is free.
Slot *charge_found(const Subject &who, const rate_limits::Limits &limits, int64 now_us,
                   int64 period_start, long capacity, const LoadQuota &load, Charged &charged)
{
    const EntryKey key = key_of(who);
    const bool quota = limits.quota > 0;
    Slot *s = nullptr;
    pg::guard([&] {
        LWLockAcquire(shared->lock, LW_SHARED);
        if (Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr)))
            s = &slots[e->slot];
        if (s != nullptr && quota) {
            SpinLockAcquire(&s->mutex);
            const bool loaded = s->quota_loaded;
            SpinLockRelease(&s->mutex);
            if (!loaded)
                s = nullptr; // made by a call without a quota: its count is loaded below
        }
        if (s == nullptr)
            LWLockRelease(shared->lock);
    });
    // The catalog's count, read with no lock held when the slot has none; if another worker
    // loads it first, the first one loaded wins and this one is dropped.
    int64 kept_start = 0, kept_used = 0;
    bool from_catalog = false; // the slot takes kept_start and kept_used unless it has a count
    if (s == nullptr) {
        if (quota && load)
            load(kept_start, kept_used);
        pg::guard([&] {
            LWLockAcquire(shared->lock, LW_EXCLUSIVE);
            s = find_or_make(key, now_us);
            if (s == nullptr)
                LWLockRelease(shared->lock);
        });
        if (s == nullptr)
            return nullptr;
        from_catalog = quota;
    }

    // The lock is held (shared or exclusive): the slot keeps its caller.
    SpinLockAcquire(&s->mutex);
    if (from_catalog && !s->quota_loaded) {
        s->quota_loaded = true;
        s->period_start = s->written_start = kept_start;
        s->used = s->written_used = kept_used;
    }
    charged = charge(*s, limits, now_us, period_start, capacity);
    const uint64 generation = s->generation;
    SpinLockRelease(&s->mutex);
    LWLockRelease(shared->lock);
    remember(key, s, generation);
    return s;
}

// Shared with its free list, then the slots (with room to align them).
Size head_size()
{
    return add_size(offsetof(Shared, free),
                    mul_size(sizeof(uint32), static_cast<Size>(settings::limit_entries)));
}

long all_entries()
{
    return static_cast<long>(settings::limit_entries) + settings::address_entries;
}

Size struct_size()
{
    return add_size(add_size(head_size(), alignof(Slot)),
                    mul_size(sizeof(Slot), static_cast<Size>(all_entries())));
}

} // namespace

std::size_t shmem_size()
{
    return add_size(struct_size(), hash_estimate_size(all_entries(), sizeof(Entry)));
}

void shmem_request()
{
    RequestNamedLWLockTranche(tranche, 1);
}

void shmem_init()
{
    bool found = false;
    const uint32 n = static_cast<uint32>(settings::limit_entries);
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    char *base = static_cast<char *>(ShmemInitStruct("querygate limits", struct_size(), &found));
    shared = reinterpret_cast<Shared *>(base);
    slots = reinterpret_cast<Slot *>(TYPEALIGN(alignof(Slot), base + head_size()));
    if (!found) {
        shared->lock = &GetNamedLWLockTranche(tranche)->lock;
        shared->address_used = 0;
        shared->address_hand = 0;
        shared->nfree = n;
        for (uint32 i = 0; i < n; i++)
            shared->free[i] = n - 1 - i; // the first slots first
        for (long i = 0; i < all_entries(); i++) {
            SpinLockInit(&slots[i].mutex);
            pg_atomic_init_u32(&slots[i].in_flight, 0);
            slots[i].generation = 0;
        }
    }
    HASHCTL info;
    std::memset(&info, 0, sizeof(info));
    info.keysize = sizeof(EntryKey);
    info.entrysize = sizeof(Entry);
    table = ShmemInitHash("querygate limit counts", all_entries(), all_entries(), &info,
                          HASH_ELEM | HASH_BLOBS);
    LWLockRelease(AddinShmemInitLock);
}

ApiError admit(const Subject &who, const rate_limits::Limits &limits, int64 now_us,
               LimitReport &report, Hold &hold, const LoadQuota &load)
{
    hold = Hold();
    if (!limits.any() || table == nullptr)
        return ApiError();
    const bool quota = limits.quota > 0;
    // Everything that allocates or registers comes before anything is counted: once a call is
    // counted in flight, nothing may fail before its hold is handed back.
    if (held == nullptr)
        held = new std::vector<uintptr_t>();
    held->reserve(held->size() + 1);
    if (!exit_registered) {
        pg::guard([] { on_shmem_exit(give_back_all, 0); });
        exit_registered = true;
    }

    const int64 period_start = quota ? rate_limits::period_start(limits.quota_period, now_us) : 0;
    const int64 period_end = quota ? rate_limits::period_end(limits.quota_period, now_us) : 0;
    const long capacity = rate_limits::capacity(limits);
    Charged c;
    Slot *s = charge_remembered(who, limits, now_us, period_start, capacity, c);
    if (s == nullptr)
        s = charge_found(who, limits, now_us, period_start, capacity, load, c);
    if (s == nullptr) {
        report.retry_after_seconds = 1;
        return refusal(error_code::rate_limited,
                       "too many callers are being counted at once; try again");
    }

    // The headers speak of the limit closest to refusing: the quota when it has fewer calls left
    // than the bucket.
    report.present = true;
    const long long quota_left = quota ? std::max<int64>(0, limits.quota - c.used) : 0;
    const bool speak_quota =
        quota && (limits.rate_per_second <= 0 || c.outcome == Outcome::over_quota ||
                  quota_left < c.bucket_left);
    if (speak_quota) {
        report.policy = limits.quota_period == rate_limits::Period::day
                            ? LimitReport::Policy::daily
                            : LimitReport::Policy::monthly;
        report.limit = limits.quota;
        report.remaining = quota_left;
        report.reset_seconds = rate_limits::seconds_up(period_end - now_us);
        report.window_seconds = rate_limits::quota_window_seconds(limits.quota_period, now_us);
    } else if (limits.rate_per_second > 0) {
        report.policy = LimitReport::Policy::rate;
        report.limit = capacity;
        report.remaining = c.bucket_left;
        report.reset_seconds = rate_limits::seconds_up(static_cast<int64>(
            (static_cast<double>(capacity) - c.tokens) / limits.rate_per_second * 1e6));
        report.window_seconds = rate_limits::rate_window_seconds(limits);
    } else {
        report.present = false; // an in-flight limit alone has no window to speak of
    }

    switch (c.outcome) {
    case Outcome::over_quota:
        report.retry_after_seconds = rate_limits::seconds_up(period_end - now_us);
        return refusal(error_code::quota_exceeded, limits.quota_period == rate_limits::Period::day
                                                       ? "the caller's daily quota is used up"
                                                       : "the caller's monthly quota is used up");
    case Outcome::too_many_at_once:
        report.retry_after_seconds = 1;
        return refusal(error_code::rate_limited, "too many calls of this caller are running");
    case Outcome::too_fast:
        report.retry_after_seconds = rate_limits::seconds_up(c.wait_us);
        return refusal(error_code::rate_limited, "too many calls: slow down");
    case Outcome::admitted:
        break;
    }
    hold.entry = reinterpret_cast<uintptr_t>(s);
    hold.rate_per_second = limits.rate_per_second;
    hold.capacity = capacity;
    held->push_back(hold.entry); // reserved above: cannot throw
    return ApiError();
}

void owe(const Hold &hold, int64 now_us, double calls) noexcept
{
    if (!hold.held() || table == nullptr || hold.rate_per_second <= 0 || calls <= 0)
        return;
    // A held slot keeps its caller (only a slot with nothing in flight is forgotten).
    Slot &s = *reinterpret_cast<Slot *>(hold.entry);
    SpinLockAcquire(&s.mutex);
    rate_limits::owe(s.bucket, hold.rate_per_second, hold.capacity, now_us, calls);
    SpinLockRelease(&s.mutex);
}

void release(Hold &hold) noexcept
{
    if (!hold.held() || table == nullptr) {
        hold = Hold();
        return;
    }
    Slot *s = reinterpret_cast<Slot *>(hold.entry);
    if (held != nullptr)
        for (auto it = held->begin(); it != held->end(); ++it)
            if (*it == hold.entry) {
                held->erase(it);
                break;
            }
    hold = Hold();
    // Lowered without the spinlock (Slot): never below 0.
    uint32 n = pg_atomic_read_u32(&s->in_flight);
    while (n > 0 && !pg_atomic_compare_exchange_u32(&s->in_flight, &n, n - 1)) {
    }
}

std::vector<QuotaCount> unwritten_quotas()
{
    std::vector<QuotaCount> out;
    if (table == nullptr)
        return out;
    // Room first, with no lock held: nothing below allocates while the lock is.
    LWLockAcquire(shared->lock, LW_SHARED);
    const long entries = hash_get_num_entries(table);
    LWLockRelease(shared->lock);
    out.reserve(static_cast<std::size_t>(entries) + 16);
    LWLockAcquire(shared->lock, LW_SHARED);
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (Entry *e = static_cast<Entry *>(hash_seq_search(&scan))) {
        Slot &s = slots[e->slot];
        SpinLockAcquire(&s.mutex);
        const bool changed =
            s.quota_loaded && (s.used != s.written_used || s.period_start != s.written_start);
        const int64 start = s.period_start, used = s.used;
        SpinLockRelease(&s.mutex);
        if (changed && static_cast<Kind>(e->key.kind) != Kind::address &&
            out.size() < out.capacity()) { // the rest waits for the next pass
            QuotaCount &q = out.emplace_back();
            q.kind = static_cast<Kind>(e->key.kind);
            q.key_id = e->key.key_id;
            std::memcpy(q.policy, e->key.name, sizeof(q.policy));
            q.period_start_us = start;
            q.used = used;
        }
    }
    LWLockRelease(shared->lock);
    return out;
}

void quotas_written(const std::vector<QuotaCount> &written)
{
    if (table == nullptr)
        return;
    LWLockAcquire(shared->lock, LW_SHARED);
    for (const QuotaCount &q : written) {
        Subject who;
        who.kind = q.kind;
        who.key_id = q.key_id;
        who.name = q.policy_name();
        const EntryKey key = key_of(who);
        if (Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr))) {
            Slot &s = slots[e->slot];
            SpinLockAcquire(&s.mutex);
            s.written_start = q.period_start_us;
            s.written_used = q.used;
            SpinLockRelease(&s.mutex);
        }
    }
    LWLockRelease(shared->lock);
}

} // namespace limit_table
