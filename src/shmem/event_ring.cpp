// The run events in shared memory: see event_ring.hpp. PostgreSQL side: the ring's block from
// ShmemInitStruct, a spinlock for its writers (readers take none: run_events.hpp), a flag per
// worker that asks for a wake-up, and a small table of open streams per subject under a spinlock
// of its own (streams open and close rarely; a linear look through it is shorter than a hash).
#include "shmem/event_ring.hpp"

#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace event_ring {

namespace {

// Workers that can ask to be woken (querygate.workers is at most 128).
constexpr int max_workers = 128;
// Subjects (keys, or policies for tokens) with streams open at once, every worker.
constexpr int max_subjects = 1024;
// A subject's text: "key:" and a bigint, or "policy:" and a name of at most 63 bytes.
constexpr std::size_t subject_room = 72;

struct Waker {
    pg_atomic_uint32 asked; // 1: set the latch of `procno` after the next event
    pg_atomic_uint32 procno;
};

struct Subject {
    char name[subject_room]; // empty: a free entry
    uint32 streams;
};

struct Shared {
    slock_t writers;
    slock_t subjects_lock;
    pg_atomic_uint32 asking; // how many wakers are asked: put() looks at them only when some are
    Waker wakers[max_workers];
    Subject subjects[max_subjects];
    // Streams open on every worker (the subjects' counts summed; changed under subjects_lock),
    // read by every call: on a line of its own, away from the writers' lock.
    alignas(64) pg_atomic_uint32 open_streams;
};

Shared *shared = nullptr;
run_events::Ring *events = nullptr;

// This process's events of the round, put in the ring together by flush(): while no stream is
// open, the writers' spinlock and the barrier after it are taken once a round, not once a call.
// Both are on lines the workers' cores share, so taking them once a call shows in a worker's
// profile (docs/performance.md, design choices). With streams open, each event goes in at once
// (put). Plain data.
constexpr std::size_t max_pending = 64;
run_events::Event pending[max_pending];
std::size_t pending_count = 0;

// This process's open streams, by subject: given back when it exits.
std::vector<std::string> *held = nullptr;
bool exit_registered = false;

std::size_t ring_offset()
{
    return MAXALIGN(sizeof(Shared));
}

void copy_cut(char *to, std::size_t room, std::string_view from)
{
    const std::size_t n = std::min(from.size(), room - 1);
    if (n > 0)
        std::memcpy(to, from.data(), n);
    to[n] = '\0';
}

// The subject's entry, made if `make`; null when absent (or the table is full).
Subject *find_subject(std::string_view subject, bool make)
{
    Subject *free_entry = nullptr;
    for (Subject &s : shared->subjects) {
        if (s.name[0] == '\0') {
            if (free_entry == nullptr)
                free_entry = &s;
        } else if (subject.size() < subject_room && subject == s.name) {
            return &s;
        }
    }
    if (!make || free_entry == nullptr)
        return nullptr;
    copy_cut(free_entry->name, subject_room, subject);
    free_entry->streams = 0;
    return free_entry;
}

void give_back_all(int, Datum)
{
    if (held == nullptr)
        return;
    while (!held->empty()) {
        const std::string subject = held->back();
        give_stream(subject);
    }
}

} // namespace

std::size_t shmem_size()
{
    if (settings::event_buffer <= 0)
        return 0;
    return add_size(ring_offset(),
                    run_events::size_of(static_cast<std::uint32_t>(settings::event_buffer)));
}

void shmem_init()
{
    if (settings::event_buffer <= 0)
        return;
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    char *base = static_cast<char *>(ShmemInitStruct("querygate events", shmem_size(), &found));
    shared = reinterpret_cast<Shared *>(base);
    if (!found) {
        SpinLockInit(&shared->writers);
        SpinLockInit(&shared->subjects_lock);
        pg_atomic_init_u32(&shared->asking, 0);
        pg_atomic_init_u32(&shared->open_streams, 0);
        for (Waker &w : shared->wakers) {
            pg_atomic_init_u32(&w.asked, 0);
            pg_atomic_init_u32(&w.procno, 0);
        }
        for (Subject &s : shared->subjects) {
            s.name[0] = '\0';
            s.streams = 0;
        }
        events = run_events::init(base + ring_offset(),
                                  static_cast<std::uint32_t>(settings::event_buffer));
    } else {
        events = reinterpret_cast<run_events::Ring *>(base + ring_offset());
    }
    LWLockRelease(AddinShmemInitLock);
}

const run_events::Ring *ring()
{
    return events;
}

void put(const CallRecord &call) noexcept
{
    if (events == nullptr)
        return;
    if (pending_count == max_pending)
        flush();
    run_events::Event &e = pending[pending_count++];
    e = run_events::Event();
    e.at_us = (GetCurrentTimestamp() + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
    e.status = call.status;
    e.duration_us = static_cast<std::uint32_t>(
        std::min<std::int64_t>(std::max<std::int64_t>(call.duration_us, 0), UINT32_MAX));
    e.rows = call.rows;
    copy_cut(e.query, sizeof(e.query), call.query);
    e.adhoc = call.adhoc;
    copy_cut(e.code, sizeof(e.code), call.code);
    copy_cut(e.request_id, sizeof(e.request_id), call.request_id);
    e.who = call.who;
    // With a stream open on any worker, the event goes in the ring now: the rest of this round
    // may be a long call, and other workers' streams would hear of this one only after it.
    if (pg_atomic_read_u32(&shared->open_streams) != 0)
        flush();
}

void flush() noexcept
{
    if (events == nullptr || pending_count == 0)
        return;
    SpinLockAcquire(&shared->writers);
    for (std::size_t i = 0; i < pending_count; i++)
        run_events::put(*events, pending[i]);
    SpinLockRelease(&shared->writers);
    pending_count = 0;
    // The events before the look at who asks, as a sleeper asks before it looks at the ring: one
    // of the two sees the other (a store then a load, which only a full barrier keeps in order).
    pg_memory_barrier();
    if (pg_atomic_read_u32(&shared->asking) == 0)
        return;
    const int workers = std::min(settings::workers, max_workers);
    for (int i = 0; i < workers; i++) {
        Waker &w = shared->wakers[i];
        if (pg_atomic_read_u32(&w.asked) != 0 && pg_atomic_exchange_u32(&w.asked, 0) != 0) {
            pg_atomic_fetch_sub_u32(&shared->asking, 1);
            SetLatch(&ProcGlobal->allProcs[pg_atomic_read_u32(&w.procno)].procLatch);
        }
    }
}

void wake_me(int worker)
{
    if (events == nullptr || worker < 0 || worker >= max_workers)
        return;
    Waker &w = shared->wakers[worker];
    pg_atomic_write_u32(&w.procno, static_cast<uint32>(MyProc->pgprocno));
    if (pg_atomic_exchange_u32(&w.asked, 1) == 0)
        pg_atomic_fetch_add_u32(&shared->asking, 1);
}

bool take_stream(std::string_view subject, int most)
{
    if (shared == nullptr)
        return false;
    // Room to remember it first: nothing may fail once it is counted.
    if (held == nullptr)
        held = new std::vector<std::string>();
    held->reserve(held->size() + 1);
    std::string kept(subject);
    if (!exit_registered) {
        pg::guard([] { on_shmem_exit(give_back_all, 0); });
        exit_registered = true;
    }
    bool taken = false;
    SpinLockAcquire(&shared->subjects_lock);
    if (Subject *s = find_subject(subject, true);
        s != nullptr && s->streams < static_cast<uint32>(most)) {
        s->streams++;
        pg_atomic_fetch_add_u32(&shared->open_streams, 1);
        taken = true;
    }
    SpinLockRelease(&shared->subjects_lock);
    if (taken)
        held->push_back(std::move(kept));
    return taken;
}

void give_stream(std::string_view subject)
{
    if (shared == nullptr || held == nullptr)
        return;
    const auto mine = std::find(held->begin(), held->end(), subject);
    if (mine == held->end())
        return; // not this process's: nothing to give back
    held->erase(mine);
    SpinLockAcquire(&shared->subjects_lock);
    if (Subject *s = find_subject(subject, false); s != nullptr && s->streams > 0) {
        pg_atomic_fetch_sub_u32(&shared->open_streams, 1);
        if (--s->streams == 0)
            s->name[0] = '\0';
    }
    SpinLockRelease(&shared->subjects_lock);
}

} // namespace event_ring
