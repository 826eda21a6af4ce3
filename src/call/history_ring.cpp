// The run history's ring: see history_ring.hpp. PostgreSQL side: a fixed array in shared memory,
// a spinlock around the head and tail, an atomic ready flag per slot.
#include "call/history_ring.hpp"

#include "common/settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cstring>

namespace history_ring {

namespace {

struct Slot {
    pg_atomic_uint32 ready; // 1 once the producer has filled it, 0 once the writer has copied it
    Record record;
};

struct Shared {
    slock_t mutex;
    uint64 head;                    // next slot to reserve
    uint64 tail;                    // oldest slot not yet freed
    pg_atomic_uint32 writer_procno; // the writer's PGPROC number, or UINT32_MAX
    pg_atomic_uint32 woken;         // the writer was woken and has not taken since
    pg_atomic_uint64 written;
    pg_atomic_uint64 dropped;
    pg_atomic_uint64 skipped;
};

constexpr uint32 no_writer = UINT32_MAX;

Shared *shared = nullptr;
Slot *slots = nullptr;
uint64 capacity = 0;
uint64 sample_state = 0; // this process's xorshift, for querygate.history_sample_rate

bool sampled_out(int status)
{
    const double rate = settings::history_sample_rate;
    if (status >= 400 || rate >= 1.0)
        return false;
    if (sample_state == 0)
        sample_state = (static_cast<uint64>(MyProcPid) << 32) ^ GetCurrentTimestamp() ^ 1;
    sample_state ^= sample_state << 13;
    sample_state ^= sample_state >> 7;
    sample_state ^= sample_state << 17;
    return static_cast<double>(sample_state >> 11) * 0x1.0p-53 >= rate;
}

} // namespace

template <std::size_t Room> void Text<Room>::set(std::string_view from) noexcept
{
    const std::size_t n = std::min(from.size(), Room - 1);
    if (n > 0) // an empty view may have no data at all
        std::memcpy(data, from.data(), n);
    data[n] = '\0';
    len = static_cast<uint16>(n);
}

template <std::size_t Room> void Text<Room>::set_whole(std::string_view from) noexcept
{
    set(from.size() < Room ? from : std::string_view());
}

std::size_t shmem_size()
{
    return add_size(MAXALIGN(sizeof(Shared)),
                    mul_size(sizeof(Slot), static_cast<Size>(settings::history_buffer)));
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    char *base = static_cast<char *>(ShmemInitStruct("querygate history", shmem_size(), &found));
    shared = reinterpret_cast<Shared *>(base);
    slots = reinterpret_cast<Slot *>(base + MAXALIGN(sizeof(Shared)));
    capacity = static_cast<uint64>(settings::history_buffer);
    if (!found) {
        SpinLockInit(&shared->mutex);
        shared->head = shared->tail = 0;
        pg_atomic_init_u32(&shared->writer_procno, no_writer);
        pg_atomic_init_u32(&shared->woken, 0);
        pg_atomic_init_u64(&shared->written, 0);
        pg_atomic_init_u64(&shared->dropped, 0);
        pg_atomic_init_u64(&shared->skipped, 0);
        for (uint64 i = 0; i < capacity; i++)
            pg_atomic_init_u32(&slots[i].ready, 0);
    }
    LWLockRelease(AddinShmemInitLock);
}

void put(const CallRecord &call, int worker) noexcept
{
    if (shared == nullptr || !settings::history)
        return;
    if (sampled_out(call.status)) {
        pg_atomic_fetch_add_u64(&shared->skipped, 1);
        return;
    }
    SpinLockAcquire(&shared->mutex);
    const uint64 used = shared->head - shared->tail;
    const bool full = used >= capacity;
    const uint64 pos = full ? 0 : shared->head++;
    SpinLockRelease(&shared->mutex);
    if (full) {
        pg_atomic_fetch_add_u64(&shared->dropped, 1);
        return;
    }

    Record &r = slots[pos % capacity].record;
    r.duration_us = call.duration_us;
    r.at = GetCurrentTimestamp() - call.duration_us;
    r.revision = call.revision;
    r.version = call.version;
    r.rows = call.rows;
    r.bytes = call.bytes;
    r.status = call.status;
    r.worker = worker;
    r.request_id.set(call.request_id);
    r.key.set(call.key);
    r.policy.set(call.policy);
    r.query.set(call.query);
    r.code.set(call.code);
    r.client.set(call.client);
    // Made to fit by their maker (masked_room, params_room).
    r.masked.set_whole(call.masked);
    r.params.set_whole(call.params);
    pg_write_barrier(); // the record before its flag
    pg_atomic_write_u32(&slots[pos % capacity].ready, 1);

    // A quarter full: the writer need not wait for its interval. Once until it takes again.
    if ((used + 1) * 4 >= capacity && pg_atomic_exchange_u32(&shared->woken, 1) == 0) {
        const uint32 procno = pg_atomic_read_u32(&shared->writer_procno);
        if (procno != no_writer)
            SetLatch(&ProcGlobal->allProcs[procno].procLatch);
    }
}

void register_writer()
{
    if (shared != nullptr)
        pg_atomic_write_u32(&shared->writer_procno, static_cast<uint32>(MyProc->pgprocno));
}

Record &Taken::operator[](std::size_t i) const
{
    return slots[(first_ + i) % capacity].record;
}

Taken take(std::size_t most)
{
    Taken taken;
    if (shared == nullptr)
        return taken;
    pg_atomic_write_u32(&shared->woken, 0);
    SpinLockAcquire(&shared->mutex);
    const uint64 tail = shared->tail;
    const uint64 head = shared->head;
    SpinLockRelease(&shared->mutex);
    uint64 pos = tail;
    // In order: a slot reserved but not yet filled stops the batch until the next pass.
    for (; pos < head && pos - tail < most; pos++)
        if (pg_atomic_read_u32(&slots[pos % capacity].ready) != 1)
            break;
    pg_read_barrier(); // the flags before the records
    taken.first_ = tail;
    taken.end_ = pos;
    return taken;
}

void release(Taken &taken)
{
    if (shared == nullptr || taken.empty())
        return;
    for (uint64 pos = taken.first_; pos < taken.end_; pos++)
        pg_atomic_write_u32(&slots[pos % capacity].ready, 0);
    pg_memory_barrier(); // every slot read and freed before a producer may reserve it again
    SpinLockAcquire(&shared->mutex);
    shared->tail = taken.end_;
    SpinLockRelease(&shared->mutex);
    taken.first_ = taken.end_;
}

void saved(std::size_t n)
{
    if (shared != nullptr)
        pg_atomic_fetch_add_u64(&shared->written, n);
}

void lost(std::size_t n)
{
    if (shared != nullptr)
        pg_atomic_fetch_add_u64(&shared->dropped, n);
}

metrics::HistoryStats stats()
{
    metrics::HistoryStats s;
    if (shared == nullptr)
        return s;
    SpinLockAcquire(&shared->mutex);
    s.buffered = shared->head - shared->tail;
    SpinLockRelease(&shared->mutex);
    s.written = pg_atomic_read_u64(&shared->written);
    s.dropped = pg_atomic_read_u64(&shared->dropped);
    s.skipped = pg_atomic_read_u64(&shared->skipped);
    return s;
}

} // namespace history_ring
