// The shared table of call statistics: see stat_table.hpp. PostgreSQL side: dynahash in shared
// memory, one LWLock for the table (shared to add to an entry, exclusive to make one or to reset)
// and a spinlock per entry around its plain arithmetic; a process's kept counts in plain static
// memory. Between a lock's acquire and release there
// is nothing that can fail (HASH_ENTER_NULL), so no error can leave a lock held.
#include "shmem/stat_table.hpp"

#include "common/settings.hpp"
#include "pg/pg_guard.hpp"
#include "rules/call_totals.hpp"

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

// The hash key: zero-filled, so equal kinds and names are equal bytes (padding included).
struct EntryKey {
    uint8 kind;             // metrics::CallKind
    char query[name_bytes]; // empty for SQL
    char policy[name_bytes];
};

struct Entry {
    EntryKey key; // first: dynahash's key
    slock_t mutex;
    CallTotals totals;
};

struct Shared {
    LWLock *lock;
    pg_atomic_uint64 unrecorded;
};

const char tranche[] = "querygate statistics";
Shared *shared = nullptr;
HTAB *table = nullptr;

// This process's kept counts (by_rounds): a round calls few pairs; more than this flushes early.
constexpr int kept_most = 8;
struct Kept {
    EntryKey key;
    CallTotals totals;
};
Kept kept[kept_most];
int nkept = 0;
bool rounds = false;

EntryKey key_of(metrics::CallKind kind, std::string_view query, std::string_view policy)
{
    EntryKey k;
    std::memset(&k, 0, sizeof(k));
    k.kind = static_cast<uint8>(kind);
    if (!query.empty()) // an empty view may have no data at all
        std::memcpy(k.query, query.data(), std::min(query.size(), name_bytes - 1));
    if (!policy.empty())
        std::memcpy(k.policy, policy.data(), std::min(policy.size(), name_bytes - 1));
    return k;
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
    const EntryKey kept_key = e->key;
    std::memset(static_cast<void *>(e), 0, sizeof(Entry));
    e->key = kept_key;
    SpinLockInit(&e->mutex);
    return e;
}

void merge_into(Entry &e, const CallTotals &totals)
{
    SpinLockAcquire(&e.mutex);
    e.totals.merge(totals);
    SpinLockRelease(&e.mutex);
}

// Adds totals to key's entry, made if need be; counted as unrecorded when the table is full or
// its lock cannot be taken.
void add_to_table(const EntryKey &key, const CallTotals &totals) noexcept
{
    try {
        bool counted = false;
        pg::guard([&] {
            LWLockAcquire(shared->lock, LW_SHARED);
            if (Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_FIND, nullptr))) {
                merge_into(*e, totals);
                counted = true;
            }
            LWLockRelease(shared->lock);
            if (counted)
                return;
            LWLockAcquire(shared->lock, LW_EXCLUSIVE);
            if (Entry *e = find_or_make(key)) {
                merge_into(*e, totals);
                counted = true;
            }
            LWLockRelease(shared->lock);
        });
        if (!counted)
            pg_atomic_fetch_add_u64(&shared->unrecorded, totals.calls);
    } catch (...) {
        // The lock could not be taken (an error PostgreSQL raised, which released it): the calls
        // are counted as unrecorded rather than fail.
        pg_atomic_fetch_add_u64(&shared->unrecorded, totals.calls);
    }
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
    const EntryKey key = key_of(call.kind, call.query, call.policy);
    const int slot = metrics::code_slot(call.code);
    const double seconds = static_cast<double>(std::max<int64>(call.duration_us, 0)) / 1e6;
    if (!rounds) {
        CallTotals one;
        std::memset(&one, 0, sizeof(one));
        one.add(slot, seconds, call.rows, call.bytes);
        add_to_table(key, one);
        return;
    }
    int i = 0;
    while (i < nkept && std::memcmp(&kept[i].key, &key, sizeof(key)) != 0)
        i++;
    if (i == nkept) {
        if (nkept == kept_most) {
            flush();
            i = 0;
        }
        kept[i].key = key;
        std::memset(&kept[i].totals, 0, sizeof(CallTotals));
        nkept = i + 1;
    }
    kept[i].totals.add(slot, seconds, call.rows, call.bytes);
}

void by_rounds() noexcept
{
    rounds = true;
}

void flush() noexcept
{
    if (table == nullptr)
        return;
    for (int i = 0; i < nkept; i++)
        add_to_table(kept[i].key, kept[i].totals);
    nkept = 0;
}

std::vector<metrics::QueryStats> snapshot(uint64 &unrecorded)
{
    std::vector<metrics::QueryStats> out;
    unrecorded = 0;
    if (table == nullptr)
        return out;
    flush();
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
        q.kind = static_cast<metrics::CallKind>(e.key.kind);
        q.query = e.key.query;
        q.policy = e.key.policy;
        const CallTotals &t = e.totals;
        q.calls = t.calls;
        std::copy(std::begin(t.by_code), std::end(t.by_code), q.by_code);
        q.rows = t.rows;
        q.bytes = t.bytes;
        q.total_seconds = t.total_s;
        q.min_seconds = t.min_s;
        q.max_seconds = t.max_s;
        q.mean_seconds = t.mean_s;
        q.sum_sq_dev = t.m2;
        std::copy(std::begin(t.buckets), std::end(t.buckets), q.buckets);
        out.push_back(std::move(q));
    }
    // Saved queries first, then SQL; by name, then policy: an entry's neighbours share its kind
    // and name (GET /metrics sums them).
    std::sort(out.begin(), out.end(),
              [](const metrics::QueryStats &a, const metrics::QueryStats &b) {
                  if (a.kind != b.kind)
                      return a.kind < b.kind;
                  return a.query != b.query ? a.query < b.query : a.policy < b.policy;
              });
    return out;
}

void reset()
{
    if (table == nullptr)
        return;
    nkept = 0;
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
