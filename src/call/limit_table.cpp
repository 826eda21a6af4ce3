// The shared table of limit counts: see limit_table.hpp. PostgreSQL side: dynahash in shared
// memory, one LWLock for the table and a spinlock per entry. Between a lock's acquire and release
// there is only plain arithmetic and hash lookups that cannot fail (HASH_ENTER_NULL), so no error
// can leave a lock held.
#include "call/limit_table.hpp"

#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
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

struct Entry {
    EntryKey key; // first: dynahash's key
    slock_t mutex;
    int32 in_flight;
    rate_limits::Bucket bucket;
    double rate; // the rate and size the bucket was last charged under
    long capacity;
    bool quota_loaded;   // period_start and used hold the catalog's count (or a newer one)
    int64 period_start;  // of `used`, Unix microseconds
    int64 used;          // calls counted in that period
    int64 written_start; // what the catalog was last given
    int64 written_used;
};

struct Shared {
    LWLock *lock;
};

const char tranche[] = "querygate limits";
Shared *shared = nullptr;
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

// Forgets every entry that is as good as new. Under the lock, exclusively.
void forget_idle(int64 now_us)
{
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (Entry *e = static_cast<Entry *>(hash_seq_search(&scan))) {
        // Judged under the rate and size it was last charged under: a full bucket is what a new
        // one would be.
        const bool bucket_idle = e->bucket.refilled_us == 0 || e->rate <= 0 ||
                                 rate_limits::full(e->bucket, e->rate, e->capacity, now_us);
        const bool quota_kept =
            !e->quota_loaded || (e->used == e->written_used && e->period_start == e->written_start);
        // Read under the entry's lock: release() gives a hold back under that lock alone, and
        // touches the entry no more once it has let go of it.
        SpinLockAcquire(&e->mutex);
        const int32 in_flight = e->in_flight;
        SpinLockRelease(&e->mutex);
        if (in_flight == 0 && bucket_idle && quota_kept)
            (void)hash_search(table, &e->key, HASH_REMOVE, nullptr);
    }
}

// The entry for key, made (with its quota count, when loaded) if there is none. Under the lock,
// exclusively. nullptr when the table is full of entries that matter.
Entry *find_or_make(const EntryKey &key, int64 now_us)
{
    bool found = false;
    Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr));
    if (e != nullptr)
        return e;
    if (hash_get_num_entries(table) >= settings::limit_entries)
        forget_idle(now_us);
    if (hash_get_num_entries(table) >= settings::limit_entries)
        return nullptr;
    e = static_cast<Entry *>(hash_search(table, &key, HASH_ENTER_NULL, &found));
    if (e == nullptr || found)
        return e;
    SpinLockInit(&e->mutex);
    e->in_flight = 0;
    e->bucket = rate_limits::Bucket();
    e->rate = 0;
    e->capacity = 0;
    e->quota_loaded = false;
    e->period_start = e->used = e->written_start = e->written_used = 0;
    return e;
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

} // namespace

std::size_t shmem_size()
{
    return add_size(MAXALIGN(sizeof(Shared)),
                    hash_estimate_size(settings::limit_entries, sizeof(Entry)));
}

void shmem_request()
{
    RequestNamedLWLockTranche(tranche, 1);
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared = static_cast<Shared *>(ShmemInitStruct("querygate limits", sizeof(Shared), &found));
    if (!found)
        shared->lock = &GetNamedLWLockTranche(tranche)->lock;
    HASHCTL info;
    std::memset(&info, 0, sizeof(info));
    info.keysize = sizeof(EntryKey);
    info.entrysize = sizeof(Entry);
    table = ShmemInitHash("querygate limit counts", settings::limit_entries,
                          settings::limit_entries, &info, HASH_ELEM | HASH_BLOBS);
    LWLockRelease(AddinShmemInitLock);
}

ApiError admit(const Subject &who, const rate_limits::Limits &limits, int64 now_us,
               LimitReport &report, Hold &hold, const LoadQuota &load)
{
    hold = Hold();
    if (!limits.any() || table == nullptr)
        return ApiError();
    const EntryKey key = key_of(who);
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

    Entry *e = nullptr;
    pg::guard([&] {
        LWLockAcquire(shared->lock, LW_SHARED);
        e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr));
        if (e != nullptr && quota && !e->quota_loaded)
            e = nullptr; // made by a call without a quota: its count is loaded below
        if (e == nullptr)
            LWLockRelease(shared->lock);
    });
    if (e == nullptr) {
        // The catalog's count is read with no lock held; if another worker loads it first, the
        // first one loaded wins and this one is dropped.
        int64 kept_start = 0, kept_used = 0;
        if (quota && load)
            load(kept_start, kept_used);
        pg::guard([&] {
            LWLockAcquire(shared->lock, LW_EXCLUSIVE);
            e = find_or_make(key, now_us);
            if (e != nullptr && quota && !e->quota_loaded) {
                e->quota_loaded = true;
                e->period_start = e->written_start = kept_start;
                e->used = e->written_used = kept_used;
            }
            if (e == nullptr)
                LWLockRelease(shared->lock);
        });
        if (e == nullptr) {
            report.retry_after_seconds = 1;
            return refusal(error_code::rate_limited,
                           "too many callers are being counted at once; try again");
        }
    }

    // The lock is held (shared or exclusive): the entry cannot go away.
    const int64 period_start = quota ? rate_limits::period_start(limits.quota_period, now_us) : 0;
    const int64 period_end = quota ? rate_limits::period_end(limits.quota_period, now_us) : 0;
    const long capacity = rate_limits::capacity(limits);
    int64 wait_us = 0;
    long bucket_left = 0;
    enum { admitted, over_quota, too_many_at_once, too_fast } outcome = admitted;
    int64 used_now = 0;

    SpinLockAcquire(&e->mutex);
    if (quota && e->period_start != period_start) {
        e->period_start = period_start; // a new day or month: the count starts again
        e->used = 0;
    }
    if (quota && e->used >= limits.quota)
        outcome = over_quota;
    else if (limits.max_in_flight > 0 && e->in_flight >= limits.max_in_flight)
        outcome = too_many_at_once;
    else if (limits.rate_per_second > 0 &&
             !rate_limits::take(e->bucket, limits.rate_per_second, capacity, now_us, wait_us,
                                bucket_left))
        outcome = too_fast;
    if (limits.rate_per_second > 0) {
        e->rate = limits.rate_per_second;
        e->capacity = capacity;
    }
    if (outcome == admitted) {
        e->in_flight++;
        if (quota)
            e->used++;
    }
    used_now = e->used;
    const double tokens = e->bucket.tokens;
    SpinLockRelease(&e->mutex);
    LWLockRelease(shared->lock);

    // The headers speak of the limit closest to refusing: the quota when it has fewer calls left
    // than the bucket.
    report.present = true;
    const long long quota_left = quota ? std::max<int64>(0, limits.quota - used_now) : 0;
    const bool speak_quota =
        quota && (limits.rate_per_second <= 0 || outcome == over_quota || quota_left < bucket_left);
    if (speak_quota) {
        report.limit = limits.quota;
        report.remaining = quota_left;
        report.reset_seconds = rate_limits::seconds_up(period_end - now_us);
    } else if (limits.rate_per_second > 0) {
        report.limit = capacity;
        report.remaining = bucket_left;
        report.reset_seconds = rate_limits::seconds_up(static_cast<int64>(
            (static_cast<double>(capacity) - tokens) / limits.rate_per_second * 1e6));
    } else {
        report.present = false; // an in-flight limit alone has no window to speak of
    }

    switch (outcome) {
    case over_quota:
        report.retry_after_seconds = rate_limits::seconds_up(period_end - now_us);
        return refusal(error_code::quota_exceeded, limits.quota_period == rate_limits::Period::day
                                                       ? "the caller's daily quota is used up"
                                                       : "the caller's monthly quota is used up");
    case too_many_at_once:
        report.retry_after_seconds = 1;
        return refusal(error_code::rate_limited, "too many calls of this caller are running");
    case too_fast:
        report.retry_after_seconds = rate_limits::seconds_up(wait_us);
        return refusal(error_code::rate_limited, "too many calls: slow down");
    case admitted:
        break;
    }
    hold.entry = reinterpret_cast<uintptr_t>(e);
    held->push_back(hold.entry); // reserved above: cannot throw
    return ApiError();
}

void release(Hold &hold) noexcept
{
    if (!hold.held() || table == nullptr) {
        hold = Hold();
        return;
    }
    Entry *e = reinterpret_cast<Entry *>(hold.entry);
    if (held != nullptr)
        for (auto it = held->begin(); it != held->end(); ++it)
            if (*it == hold.entry) {
                held->erase(it);
                break;
            }
    hold = Hold();
    SpinLockAcquire(&e->mutex);
    if (e->in_flight > 0)
        e->in_flight--;
    SpinLockRelease(&e->mutex);
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
        SpinLockAcquire(&e->mutex);
        const bool changed =
            e->quota_loaded && (e->used != e->written_used || e->period_start != e->written_start);
        const int64 start = e->period_start, used = e->used;
        SpinLockRelease(&e->mutex);
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
            SpinLockAcquire(&e->mutex);
            e->written_start = q.period_start_us;
            e->written_used = q.used;
            SpinLockRelease(&e->mutex);
        }
    }
    LWLockRelease(shared->lock);
}

} // namespace limit_table
