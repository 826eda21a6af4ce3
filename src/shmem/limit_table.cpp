// The shared table of limit counts: see limit_table.hpp; its slots and their index are in
// limit_slots.hpp.
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
#include "shmem/limit_slots.hpp"

extern "C" {
#include "storage/ipc.h"
}

#include <algorithm>
#include <cstring>

namespace limit_table {

namespace {

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

std::vector<uintptr_t> *held = nullptr; // this process's holds not yet given back
bool exit_registered = false;

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

} // namespace

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

} // namespace limit_table
