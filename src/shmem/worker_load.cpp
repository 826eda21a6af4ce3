// The per-worker slots in shared memory (see worker_load.hpp). Plain atomics, no lock: a count read
// while another worker changes it is at most one connection off, and the only use is a preference
// that src/http/accept_gate.cpp bounds in time; the activity totals have a single writer each, and
// a reader sees each total as it was at some moment of its worker's last round.
#include "pg/pg_headers.hpp"
extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "common/settings.hpp"
#include "shmem/worker_load.hpp"

#include <climits>

namespace {

constexpr uint32 absent = UINT32_MAX;

struct Slot {
    pg_atomic_uint32 connections; // `absent` while no worker runs in the slot
    pg_atomic_uint32 in_flight;
    pg_atomic_uint32 pid;
    pg_atomic_uint32 awake;       // 1 while its worker is not asleep in its wait (set_awake)
    pg_atomic_uint64 started_us;  // Unix microseconds
    pg_atomic_uint64 launched_us; // when a process last began in the slot (pace_start)
    pg_atomic_uint64 requests;
    pg_atomic_uint64 errors;
    pg_atomic_uint64 busy_us;
    pg_atomic_uint64 connections_refused;
    pg_atomic_uint64 connections_timed_out;
};

Slot *slots = nullptr; // settings::workers of them
int my_slot = -1;

void release_slot(int, Datum)
{
    if (slots != nullptr && my_slot >= 0) {
        pg_atomic_write_u32(&slots[my_slot].connections, absent);
        pg_atomic_write_u32(&slots[my_slot].awake, 0);
    }
    my_slot = -1;
}

} // namespace

std::size_t worker_load::shmem_size()
{
    return mul_size(sizeof(Slot), static_cast<Size>(settings::workers));
}

void worker_load::shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    slots = static_cast<Slot *>(ShmemInitStruct("querygate worker load", shmem_size(), &found));
    if (!found)
        for (int i = 0; i < settings::workers; i++) {
            Slot &s = slots[i];
            pg_atomic_init_u32(&s.connections, absent);
            pg_atomic_init_u32(&s.in_flight, 0);
            pg_atomic_init_u32(&s.pid, 0);
            pg_atomic_init_u32(&s.awake, 0);
            pg_atomic_init_u64(&s.started_us, 0);
            pg_atomic_init_u64(&s.launched_us, 0);
            pg_atomic_init_u64(&s.requests, 0);
            pg_atomic_init_u64(&s.errors, 0);
            pg_atomic_init_u64(&s.busy_us, 0);
            pg_atomic_init_u64(&s.connections_refused, 0);
            pg_atomic_init_u64(&s.connections_timed_out, 0);
        }
    LWLockRelease(AddinShmemInitLock);
}

void worker_load::pace_start(int worker)
{
    if (slots == nullptr || worker < 0 || worker >= settings::workers)
        return; // attach() says so
    pg_atomic_uint64 &launched = slots[worker].launched_us;
    const TimestampTz now = GetCurrentTimestamp();
    const TimestampTz last = static_cast<TimestampTz>(pg_atomic_read_u64(&launched));
    const long wait_ms =
        last != 0 && now - last < 1000 * 1000 ? (1000 * 1000 - (now - last)) / 1000 : 0;
    pg_atomic_write_u64(&launched, static_cast<uint64>(now + wait_ms * 1000));
    if (wait_ms > 0)
        (void)WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms, PG_WAIT_EXTENSION);
}

void worker_load::attach(int worker)
{
    if (slots == nullptr || worker < 0 || worker >= settings::workers)
        ereport(FATAL, (errmsg("querygate http worker %d has no load slot", worker + 1)));
    my_slot = worker;
    Slot &s = slots[my_slot];
    // A restarted worker starts its totals again, as a backend's do in pg_stat_activity.
    publish(Activity());
    pg_atomic_write_u32(&s.pid, static_cast<uint32>(MyProcPid));
    // Unix time, not PostgreSQL's epoch (2000-01-01), so that both sides read it alike.
    const TimestampTz now = GetCurrentTimestamp();
    const int64 unix_us =
        now + static_cast<int64>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
    pg_atomic_write_u64(&s.started_us, static_cast<uint64>(unix_us));
    pg_atomic_write_u32(&s.awake, 1);
    pg_atomic_write_u32(&s.connections, 0);
    on_shmem_exit(release_slot, 0);
}

int worker_load::mine()
{
    return my_slot;
}

void worker_load::publish(unsigned connections)
{
    if (my_slot >= 0)
        pg_atomic_write_u32(&slots[my_slot].connections, connections);
}

void worker_load::set_awake(bool awake)
{
    if (my_slot >= 0)
        pg_atomic_write_u32(&slots[my_slot].awake, awake ? 1 : 0);
}

int worker_load::awake()
{
    int n = 0;
    if (slots != nullptr)
        for (int i = 0; i < settings::workers; i++)
            n += pg_atomic_read_u32(&slots[i].awake) != 0;
    return n;
}

void worker_load::publish(const Activity &activity)
{
    if (my_slot < 0)
        return;
    Slot &s = slots[my_slot];
    pg_atomic_write_u64(&s.requests, activity.requests);
    pg_atomic_write_u64(&s.errors, activity.errors);
    pg_atomic_write_u64(&s.busy_us, activity.busy_us);
    pg_atomic_write_u32(&s.in_flight, activity.in_flight);
    pg_atomic_write_u64(&s.connections_refused, activity.connections_refused);
    pg_atomic_write_u64(&s.connections_timed_out, activity.connections_timed_out);
}

unsigned worker_load::fewest()
{
    uint32 least = absent;
    for (int i = 0; i < settings::workers; i++) {
        uint32 n = pg_atomic_read_u32(&slots[i].connections);
        if (n < least)
            least = n;
    }
    return least;
}

bool worker_load::any_running()
{
    if (slots == nullptr)
        return false;
    for (int i = 0; i < settings::workers; i++)
        if (pg_atomic_read_u32(&slots[i].connections) != absent)
            return true;
    return false;
}

std::vector<metrics::WorkerStats> worker_load::snapshot()
{
    std::vector<metrics::WorkerStats> out;
    if (slots == nullptr)
        return out;
    out.reserve(static_cast<std::size_t>(settings::workers));
    for (int i = 0; i < settings::workers; i++) {
        Slot &s = slots[i];
        const uint32 connections = pg_atomic_read_u32(&s.connections);
        if (connections == absent)
            continue;
        metrics::WorkerStats w;
        w.worker = i + 1;
        w.pid = static_cast<int>(pg_atomic_read_u32(&s.pid));
        w.started_us = static_cast<int64_t>(pg_atomic_read_u64(&s.started_us));
        w.connections = connections;
        w.in_flight = pg_atomic_read_u32(&s.in_flight);
        w.requests = pg_atomic_read_u64(&s.requests);
        w.errors = pg_atomic_read_u64(&s.errors);
        w.busy_us = pg_atomic_read_u64(&s.busy_us);
        w.connections_refused = pg_atomic_read_u64(&s.connections_refused);
        w.connections_timed_out = pg_atomic_read_u64(&s.connections_timed_out);
        out.push_back(w);
    }
    return out;
}
