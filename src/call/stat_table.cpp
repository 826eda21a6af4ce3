// The shared table of call statistics: see stat_table.hpp. PostgreSQL side: dynahash in shared
// memory, one LWLock for the table (shared to add to an entry, exclusive to make one or to reset)
// and a spinlock per entry around its plain arithmetic. Between a lock's acquire and release there
// is nothing that can fail (HASH_ENTER_NULL), so no error can leave a lock held.
#include "call/stat_table.hpp"

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
#include <cmath>
#include <cstring>

namespace stat_table {

namespace {

constexpr std::size_t name_bytes = 64; // query and policy names are 63 bytes at most

// The hash key: zero-filled, so equal names are equal bytes.
struct EntryKey {
    char query[name_bytes];
    char policy[name_bytes];
};

struct Entry {
    EntryKey key; // first: dynahash's key
    slock_t mutex;
    uint64 calls;
    uint64 by_code[metrics::code_slots];
    uint64 rows;
    uint64 bytes;
    double total_s;
    double min_s;
    double max_s;
    double mean_s; // Welford's running mean and sum of squared deviations, as pg_stat_statements
    double m2;
    uint64 buckets[metrics::duration_buckets];
};

struct Shared {
    LWLock *lock;
    pg_atomic_uint64 unrecorded;
};

const char tranche[] = "querygate statistics";
Shared *shared = nullptr;
HTAB *table = nullptr;

EntryKey key_of(std::string_view query, std::string_view policy)
{
    EntryKey k;
    std::memset(&k, 0, sizeof(k));
    if (!query.empty()) // an empty view may have no data at all
        std::memcpy(k.query, query.data(), std::min(query.size(), name_bytes - 1));
    if (!policy.empty())
        std::memcpy(k.policy, policy.data(), std::min(policy.size(), name_bytes - 1));
    return k;
}

int bucket_of(double seconds)
{
    int i = 0;
    while (i < metrics::duration_buckets - 1 && seconds > metrics::duration_bounds[i])
        i++;
    return i;
}

void add(Entry &e, const Call &call, int slot, int bucket, double seconds)
{
    SpinLockAcquire(&e.mutex);
    e.calls++;
    e.by_code[slot]++;
    e.rows += call.rows;
    e.bytes += call.bytes;
    e.total_s += seconds;
    e.min_s = e.calls == 1 ? seconds : std::min(e.min_s, seconds);
    e.max_s = std::max(e.max_s, seconds);
    const double delta = seconds - e.mean_s;
    e.mean_s += delta / static_cast<double>(e.calls);
    e.m2 += delta * (seconds - e.mean_s);
    e.buckets[bucket]++;
    SpinLockRelease(&e.mutex);
}

// The entry for key, made empty if there is none. Under the lock, exclusively. nullptr when the
// table is full.
Entry *find_or_make(const EntryKey &key)
{
    bool found = false;
    if (hash_get_num_entries(table) >= settings::stat_entries) {
        return static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr));
    }
    Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_ENTER_NULL, &found));
    if (e == nullptr || found)
        return e;
    const EntryKey kept = e->key;
    std::memset(static_cast<void *>(e), 0, sizeof(Entry));
    e->key = kept;
    SpinLockInit(&e->mutex);
    return e;
}

} // namespace

std::size_t shmem_size()
{
    return add_size(MAXALIGN(sizeof(Shared)),
                    hash_estimate_size(settings::stat_entries, sizeof(Entry)));
}

void shmem_request()
{
    RequestNamedLWLockTranche(tranche, 1);
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared = static_cast<Shared *>(ShmemInitStruct("querygate statistics", sizeof(Shared), &found));
    if (!found) {
        shared->lock = &GetNamedLWLockTranche(tranche)->lock;
        pg_atomic_init_u64(&shared->unrecorded, 0);
    }
    HASHCTL info;
    std::memset(&info, 0, sizeof(info));
    info.keysize = sizeof(EntryKey);
    info.entrysize = sizeof(Entry);
    table = ShmemInitHash("querygate call statistics", settings::stat_entries,
                          settings::stat_entries, &info, HASH_ELEM | HASH_BLOBS);
    LWLockRelease(AddinShmemInitLock);
}

void record(const Call &call) noexcept
{
    if (table == nullptr || !settings::statistics)
        return;
    const EntryKey key = key_of(call.query, call.policy);
    const int slot = metrics::code_slot(call.code);
    const double seconds = static_cast<double>(std::max<int64>(call.duration_us, 0)) / 1e6;
    const int bucket = bucket_of(seconds);
    try {
        bool counted = false;
        pg::guard([&] {
            LWLockAcquire(shared->lock, LW_SHARED);
            if (Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr))) {
                add(*e, call, slot, bucket, seconds);
                counted = true;
            }
            LWLockRelease(shared->lock);
            if (counted)
                return;
            LWLockAcquire(shared->lock, LW_EXCLUSIVE);
            if (Entry *e = find_or_make(key)) {
                add(*e, call, slot, bucket, seconds);
                counted = true;
            }
            LWLockRelease(shared->lock);
        });
        if (!counted)
            pg_atomic_fetch_add_u64(&shared->unrecorded, 1);
    } catch (...) {
        // The lock could not be taken (an error PostgreSQL raised, which released it): the call
        // is counted as unrecorded rather than fail.
        pg_atomic_fetch_add_u64(&shared->unrecorded, 1);
    }
}

std::vector<metrics::QueryStats> snapshot(uint64 &unrecorded)
{
    std::vector<metrics::QueryStats> out;
    unrecorded = 0;
    if (table == nullptr)
        return out;
    // Copied as plain entries under the lock, where nothing may allocate: room for them is made
    // before, and if entries were made meanwhile, the copy is made again with more room.
    std::vector<Entry> copies;
    for (bool whole = false; !whole;) {
        long count = 0;
        pg::guard([&] {
            LWLockAcquire(shared->lock, LW_SHARED);
            count = hash_get_num_entries(table);
            LWLockRelease(shared->lock);
        });
        copies.clear();
        copies.reserve(static_cast<std::size_t>(count) + 16);
        pg::guard([&] {
            LWLockAcquire(shared->lock, LW_SHARED);
            whole = static_cast<std::size_t>(hash_get_num_entries(table)) <= copies.capacity();
            if (whole) {
                HASH_SEQ_STATUS scan;
                hash_seq_init(&scan, table);
                while (Entry *e = static_cast<Entry *>(hash_seq_search(&scan))) {
                    SpinLockAcquire(&e->mutex);
                    copies.push_back(*e); // within the room reserved: no allocation
                    SpinLockRelease(&e->mutex);
                }
            }
            LWLockRelease(shared->lock);
        });
    }
    unrecorded = pg_atomic_read_u64(&shared->unrecorded);
    out.reserve(copies.size());
    for (const Entry &e : copies) {
        metrics::QueryStats q;
        q.query = e.key.query;
        q.policy = e.key.policy;
        q.calls = e.calls;
        std::copy(std::begin(e.by_code), std::end(e.by_code), q.by_code);
        q.rows = e.rows;
        q.bytes = e.bytes;
        q.total_seconds = e.total_s;
        q.min_seconds = e.min_s;
        q.max_seconds = e.max_s;
        q.mean_seconds = e.mean_s;
        q.sum_sq_dev = e.m2;
        std::copy(std::begin(e.buckets), std::end(e.buckets), q.buckets);
        out.push_back(std::move(q));
    }
    std::sort(out.begin(), out.end(),
              [](const metrics::QueryStats &a, const metrics::QueryStats &b) {
                  return a.query != b.query ? a.query < b.query : a.policy < b.policy;
              });
    return out;
}

void reset()
{
    if (table == nullptr)
        return;
    pg::guard([] {
        LWLockAcquire(shared->lock, LW_EXCLUSIVE);
        HASH_SEQ_STATUS scan;
        hash_seq_init(&scan, table);
        while (Entry *e = static_cast<Entry *>(hash_seq_search(&scan)))
            (void)hash_search(table, &e->key, HASH_REMOVE, nullptr);
        pg_atomic_write_u64(&shared->unrecorded, 0);
        LWLockRelease(shared->lock);
    });
}

} // namespace stat_table
