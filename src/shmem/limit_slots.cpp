// The slots of the shared table of limit counts: see limit_slots.hpp. Made once at startup; a
// caller's found, made or taken from another caller under the table's lock; the quota counts the
// writer saves read and marked written.
#include "shmem/limit_slots.hpp"

#include "common/settings.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/shmem.h"
}

#include <algorithm>
#include <cstring>

namespace limit_table {

Shared *shared = nullptr;
Slot *slots = nullptr;
HTAB *table = nullptr;

namespace {

const char tranche[] = "querygate limits";

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
