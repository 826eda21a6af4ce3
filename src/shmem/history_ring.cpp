// The run history's rings: see history_ring.hpp. PostgreSQL side: fixed arrays in shared memory,
// one a worker, each with a head its worker moves and a tail the writer moves, on lines apart.
#include "shmem/history_ring.hpp"

#include "call/surviving_memory.hpp"
#include "common/settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace history_ring {

namespace {

constexpr std::size_t line = 64; // a cache line: what one side writes is kept off the other's

// One worker's ring. Positions only grow; a slot is position % capacity.
struct alignas(line) Ring {
    // Written by the worker alone.
    pg_atomic_uint64 head; // next position to fill; records before it are whole
    pg_atomic_uint64 dropped;
    pg_atomic_uint64 skipped;
    // Written by the writer alone.
    alignas(line) pg_atomic_uint64 tail; // oldest position not yet freed
};

struct Shared {
    pg_atomic_uint32 writer_procno; // the writer's PGPROC number, or UINT32_MAX
    pg_atomic_uint32 woken;         // the writer was woken and has not taken since
    pg_atomic_uint64 written;
    pg_atomic_uint64 lost;  // batches the writer could not save, and records from no worker's ring
    uint64 lost_at_restart; // set once, before any process reads it
};

// The rings' positions are kept where they outlive the processes (surviving_memory.hpp) when
// they can be: the rings themselves go with a restart that is not a clean stop (a crash, an
// immediate stop), and their positions then say how many records went with them.
constexpr char positions_file[] = "querygate_history_positions";
constexpr uint64 positions_magic = 0x7167686973743031; // "qghist01"
struct alignas(line) Positions {
    uint64 magic;
    uint32 nrings;
    Ring rings[1]; // nrings of them
};

std::size_t positions_size(uint32 n)
{
    return offsetof(Positions, rings) + sizeof(Ring) * n;
}

// The records the rings held when the processes that used them ended, from what a positions file
// held (0 for anything that is not one). Read field by field: the copy is malloc's, not aligned as
// Positions is.
uint64 held_before(const surviving_memory::Before &before)
{
    const auto read = [&before](std::size_t at, auto &value) {
        if (at + sizeof(value) > before.size)
            return false;
        std::memcpy(&value, before.bytes + at, sizeof(value));
        return true;
    };
    uint64 magic = 0;
    uint32 n = 0;
    if (before.bytes == nullptr || !read(offsetof(Positions, magic), magic) ||
        !read(offsetof(Positions, nrings), n) || magic != positions_magic || n == 0 ||
        before.size < positions_size(n))
        return 0;
    uint64 held = 0;
    for (uint32 i = 0; i < n; i++) {
        const std::size_t ring = offsetof(Positions, rings) + sizeof(Ring) * i;
        uint64 head = 0, tail = 0;
        if (!read(ring + offsetof(Ring, head) + offsetof(pg_atomic_uint64, value), head) ||
            !read(ring + offsetof(Ring, tail) + offsetof(pg_atomic_uint64, value), tail))
            return held;
        if (head >= tail && head - tail <= static_cast<uint64>(INT32_MAX))
            held += head - tail;
    }
    return held;
}

constexpr uint32 no_writer = UINT32_MAX;

Shared *shared = nullptr;
Ring *rings = nullptr;
Record *records = nullptr; // nrings * capacity, ring by ring
uint32 nrings = 0;
uint64 capacity = 0;     // records a ring holds
uint32 next_ring = 0;    // the writer's: the ring it looks at first
uint64 sample_state = 0; // this process's xorshift, for querygate.history_sample_rate

// The producer's own copy of its ring's positions (a worker puts in one ring only). The head is
// the worker's alone, so it need not read it back from the shared line; the tail only grows, so
// an old reading of it is a safe bound (there is at least that much room) and the shared tail is
// read again only when that bound says the ring may be half full. Reading the two shared lines
// and the full barrier after the tail on every record were the largest part of putting one: perf
// (lookups at 32 connections, the history on) put it at 0.31 us a call before, 0.19 after, with
// the next record's lines prefetched (what is left is the record's and the head's stores).
struct Producer {
    Ring *ring = nullptr; // the ring these are of; nullptr until this process first puts
    uint64 head = 0;
    uint64 tail = 0; // the writer's tail as last read (a full barrier after it)
};
Producer producer;

// A ring for each worker, and querygate.history_buffer shared out among them.
uint32 ring_count()
{
    return static_cast<uint32>(std::max(settings::workers, 1));
}

uint64 ring_capacity()
{
    const int n = static_cast<int>(ring_count());
    return static_cast<uint64>(std::max(1, (settings::history_buffer + n - 1) / n));
}

Record &slot(uint32 ring, uint64 pos)
{
    return records[static_cast<uint64>(ring) * capacity + pos % capacity];
}

// A worker's own count, which it alone writes: no locked instruction.
void bump(pg_atomic_uint64 &count)
{
    pg_atomic_write_u64(&count, pg_atomic_read_u64(&count) + 1);
}

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

void Record::set_texts(const std::string_view (&from)[fields]) noexcept
{
    static_assert(texts_room <= UINT16_MAX, "a length in 16 bits");
    std::size_t at = 0;
    for (std::size_t f = 0; f < fields; f++) {
        std::string_view text = from[f];
        if (text.size() >= room[f]) {
            const bool whole = f == static_cast<std::size_t>(Field::masked) ||
                               f == static_cast<std::size_t>(Field::params);
            text = whole ? std::string_view() : text.substr(0, room[f] - 1);
        }
        if (!text.empty()) // an empty view may have no data at all
            std::memcpy(texts + at, text.data(), text.size());
        texts[at + text.size()] = '\0';
        len[f] = static_cast<uint16>(text.size());
        at += text.size() + 1;
    }
}

void Record::text_starts(char *(&at)[fields]) noexcept
{
    std::size_t from = 0;
    for (std::size_t f = 0; f < fields; f++) {
        at[f] = texts + from;
        from += len[f] + 1;
    }
}

std::size_t shmem_size()
{
    const Size n = static_cast<Size>(ring_count());
    const Size per_ring = static_cast<Size>(ring_capacity());
    Size size = add_size(TYPEALIGN(line, sizeof(Shared)), mul_size(sizeof(Ring), n));
    return add_size(add_size(size, line), mul_size(mul_size(sizeof(Record), per_ring), n));
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    char *base = static_cast<char *>(ShmemInitStruct("querygate history", shmem_size(), &found));
    nrings = ring_count();
    capacity = ring_capacity();
    // Each ring's two halves on lines of their own. ShmemInitStruct's memory starts on a cache
    // line already; aligned again here all the same, with a line's room for it in shmem_size.
    char *at = reinterpret_cast<char *>(TYPEALIGN(line, base));
    shared = reinterpret_cast<Shared *>(at);
    at += TYPEALIGN(line, sizeof(Shared));
    rings = reinterpret_cast<Ring *>(at); // unless the positions file is mapped, below
    records = reinterpret_cast<Record *>(at + sizeof(Ring) * nrings);
    if (!found) {
        // The postmaster, making the shared memory at a start or after a crash (its children
        // inherit the mapping; found is true only in a process that attaches instead).
        surviving_memory::Before before;
        auto *positions = static_cast<Positions *>(
            surviving_memory::map(positions_file, positions_size(nrings), before));
        shared->lost_at_restart = held_before(before);
        std::free(before.bytes);
        if (positions != nullptr) {
            positions->magic = positions_magic;
            positions->nrings = nrings;
            rings = positions->rings;
        }
        if (shared->lost_at_restart > 0)
            ereport(WARNING,
                    (errmsg("querygate: %llu run history records were lost: the rings held them "
                            "when the server stopped without a clean stop",
                            static_cast<unsigned long long>(shared->lost_at_restart)),
                     errdetail("A crash or an immediate stop ends the processes before the "
                               "writer saves what the rings hold; querygate.stat_history shows "
                               "the count as lost_at_restart.")));
        pg_atomic_init_u32(&shared->writer_procno, no_writer);
        pg_atomic_init_u32(&shared->woken, 0);
        pg_atomic_init_u64(&shared->written, 0);
        pg_atomic_init_u64(&shared->lost, 0);
        for (uint32 i = 0; i < nrings; i++) {
            pg_atomic_init_u64(&rings[i].head, 0);
            pg_atomic_init_u64(&rings[i].dropped, 0);
            pg_atomic_init_u64(&rings[i].skipped, 0);
            pg_atomic_init_u64(&rings[i].tail, 0);
        }
    }
    LWLockRelease(AddinShmemInitLock);
}

void put(const CallRecord &call, int worker) noexcept
{
    if (shared == nullptr || !settings::history)
        return;
    if (worker < 1 || static_cast<uint32>(worker) > nrings) {
        pg_atomic_fetch_add_u64(&shared->lost, 1); // not a worker: no ring of its own
        return;
    }
    Ring &ring = rings[worker - 1];
    if (sampled_out(call.status)) {
        bump(ring.skipped);
        return;
    }
    Producer &p = producer;
    if (p.ring != &ring) { // this process's first record: the ring's positions as they stand
        p.ring = &ring;
        p.head = pg_atomic_read_u64(&ring.head);
        p.tail = pg_atomic_read_u64(&ring.tail);
        pg_memory_barrier();
    }
    const uint64 head = p.head;
    if ((head - p.tail + 1) * 2 >= capacity) {
        // Half full by the old reading: the writer may have taken since. The tail is read before
        // any slot is written (the full barrier): the writer is done with a slot only once it
        // has moved the tail past it. A slot below an older reading stays free for the same reason.
        p.tail = pg_atomic_read_u64(&ring.tail);
        pg_memory_barrier();
    }
    const uint64 used = head - p.tail;
    if (used >= capacity) {
        bump(ring.dropped);
        return;
    }

    Record &r = slot(static_cast<uint32>(worker - 1), head);
    r.duration_us = call.duration_us;
    r.at = GetCurrentTimestamp() - call.duration_us;
    r.revision = call.revision;
    r.version = call.version;
    r.rows = call.rows;
    r.bytes = call.bytes;
    r.status = call.status;
    r.worker = worker;
    r.adhoc = call.adhoc ? 1 : 0;
    // The masked columns and the parameters are made to fit by their maker (masked_room,
    // params_room); in the order of Field.
    const std::string_view texts[fields] = {call.request_id, call.key,    call.policy,
                                            call.query,      call.code,   call.client,
                                            call.masked,     call.params, call.sql};
    r.set_texts(texts);
    pg_write_barrier(); // the record before the head that shows it
    pg_atomic_write_u64(&ring.head, head + 1);
    p.head = head + 1;
    // The next record's first lines, asked for now: the writer read them last, from another
    // core, and the next call finds them here instead of waiting for them.
    if (used + 1 < capacity) {
        const char *next =
            reinterpret_cast<const char *>(&slot(static_cast<uint32>(worker - 1), head + 1));
        for (std::size_t at = 0; at < 3 * line; at += line)
            __builtin_prefetch(next + at, 1);
    }

    // Half full: the writer need not wait for its interval. Once until it takes again. Not
    // sooner: each of the writer's passes costs the workers about as much again as the writer
    // (its batch's rows, pages and WAL go through the core's caches, which the workers then fill
    // again), so fewer, larger passes cost less (docs/performance.md, design choices). The other
    // half is the writer's margin: at 20,000 calls a second a worker, 4,096 records
    // (the default ring of each of two workers) is 100 ms.
    if ((used + 1) * 2 >= capacity && pg_atomic_exchange_u32(&shared->woken, 1) == 0) {
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
    return slot(ring_, first_ + i);
}

Taken take(std::size_t most)
{
    Taken taken;
    if (shared == nullptr)
        return taken;
    pg_atomic_write_u32(&shared->woken, 0);
    // The next ring with records, in turn from the one after the last taken: a busy worker's ring
    // does not keep the others' waiting.
    for (uint32 k = 0; k < nrings; k++) {
        const uint32 i = (next_ring + k) % nrings;
        const uint64 tail = pg_atomic_read_u64(&rings[i].tail);
        const uint64 head = pg_atomic_read_u64(&rings[i].head);
        if (head == tail)
            continue;
        pg_read_barrier(); // the head before the records it shows
        taken.ring_ = i;
        taken.first_ = tail;
        taken.end_ = tail + std::min<uint64>(head - tail, most);
        next_ring = (i + 1) % nrings;
        break;
    }
    return taken;
}

void release(Taken &taken)
{
    if (shared == nullptr || taken.empty())
        return;
    pg_memory_barrier(); // every slot read (and changed) before a producer may fill it again
    pg_atomic_write_u64(&rings[taken.ring_].tail, taken.end_);
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
        pg_atomic_fetch_add_u64(&shared->lost, n);
}

metrics::HistoryStats stats()
{
    metrics::HistoryStats s;
    if (shared == nullptr)
        return s;
    s.lost_at_restart = shared->lost_at_restart;
    s.written = pg_atomic_read_u64(&shared->written);
    s.dropped = pg_atomic_read_u64(&shared->lost);
    for (uint32 i = 0; i < nrings; i++) {
        const uint64 tail = pg_atomic_read_u64(&rings[i].tail);
        s.buffered += pg_atomic_read_u64(&rings[i].head) - tail;
        s.dropped += pg_atomic_read_u64(&rings[i].dropped);
        s.skipped += pg_atomic_read_u64(&rings[i].skipped);
    }
    return s;
}

} // namespace history_ring
