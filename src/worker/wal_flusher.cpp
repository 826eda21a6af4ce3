// The WAL flusher process and the shared state the workers reach it through (see wal_flusher.hpp).
// PostgreSQL side. Lock-free: a 64-bit "wanted" position only ever raised, a process number, and
// one slot per worker. Latches carry the wake-ups both ways, with the usual order (reset the latch,
// then read the state) so that none is lost; a holding worker also re-checks on a short timeout.
#include "worker/wal_flusher.hpp"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procsignal.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "common/settings.hpp"
#include "worker/between_waits.hpp"

namespace {

// A process number plus one, so that 0 means "none".
constexpr uint32 nobody = 0;

struct WorkerSlot {
    pg_atomic_uint32 waiting;    // its pgprocno + 1 while it holds answers, else nobody
    pg_atomic_uint32 committing; // 1 from just before a deferred commit until it is published
};

struct Shared {
    pg_atomic_uint64 wanted;  // highest commit end a worker wants flushed
    pg_atomic_uint32 flusher; // the flusher's pgprocno + 1, or nobody
    WorkerSlot workers[FLEXIBLE_ARRAY_MEMBER];
};

Shared *shared = nullptr;
int my_slot = -1;

void set_latch_of(uint32 procno_plus_one)
{
    if (procno_plus_one != nobody)
        SetLatch(&ProcGlobal->allProcs[procno_plus_one - 1].procLatch);
}

// A slot as no worker uses it: holding nothing, committing nothing.
void clear_slot(int slot)
{
    pg_atomic_write_u32(&shared->workers[slot].waiting, nobody);
    pg_atomic_write_u32(&shared->workers[slot].committing, 0);
}

void leave_worker_slot(int, Datum)
{
    if (shared != nullptr && my_slot >= 0)
        clear_slot(my_slot);
    my_slot = -1;
}

void leave_flusher(int, Datum)
{
    if (shared != nullptr)
        pg_atomic_write_u32(&shared->flusher, nobody);
}

// After a flush (or a pass that found nothing to flush): every worker holding answers looks again.
void wake_waiters()
{
    for (int i = 0; i < settings::workers; i++)
        set_latch_of(pg_atomic_read_u32(&shared->workers[i].waiting));
}

} // namespace

std::size_t wal_flusher::shmem_size()
{
    return add_size(offsetof(Shared, workers),
                    mul_size(sizeof(WorkerSlot), static_cast<Size>(settings::workers)));
}

void wal_flusher::shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared = static_cast<Shared *>(ShmemInitStruct("querygate wal flusher", shmem_size(), &found));
    if (!found) {
        pg_atomic_init_u64(&shared->wanted, InvalidXLogRecPtr);
        pg_atomic_init_u32(&shared->flusher, nobody);
        for (int i = 0; i < settings::workers; i++) {
            pg_atomic_init_u32(&shared->workers[i].waiting, nobody);
            pg_atomic_init_u32(&shared->workers[i].committing, 0);
        }
    }
    LWLockRelease(AddinShmemInitLock);
}

void wal_flusher::attach(int worker)
{
    if (shared == nullptr || worker < 0 || worker >= settings::workers)
        ereport(FATAL, (errmsg("querygate http worker %d has no flush slot", worker + 1)));
    my_slot = worker;
    clear_slot(my_slot);
    on_shmem_exit(leave_worker_slot, 0);
}

void wal_flusher::want(XLogRecPtr end)
{
    uint64 seen = pg_atomic_read_u64(&shared->wanted);
    while (seen < end && !pg_atomic_compare_exchange_u64(&shared->wanted, &seen, end)) {
    }
}

XLogRecPtr wal_flusher::wanted()
{
    return shared == nullptr ? InvalidXLogRecPtr : pg_atomic_read_u64(&shared->wanted);
}

void wal_flusher::set_committing(bool committing)
{
    if (my_slot >= 0)
        pg_atomic_write_u32(&shared->workers[my_slot].committing, committing ? 1 : 0);
}

bool wal_flusher::anyone_committing()
{
    if (shared == nullptr)
        return false;
    for (int i = 0; i < settings::workers; i++)
        if (pg_atomic_read_u32(&shared->workers[i].committing) != 0)
            return true;
    return false;
}

bool wal_flusher::wake()
{
    const uint32 flusher = pg_atomic_read_u32(&shared->flusher);
    set_latch_of(flusher);
    return flusher != nobody;
}

void wal_flusher::set_waiting(bool waiting)
{
    if (my_slot < 0)
        return;
    pg_atomic_write_u32(&shared->workers[my_slot].waiting,
                        waiting ? static_cast<uint32>(MyProc->pgprocno) + 1 : nobody);
    // The worker reads the flushed position next: that read must not be done before this write
    // is visible, or a flush finishing in between would neither be seen nor wake it.
    pg_memory_barrier();
}

// The flusher's loop. Plain PostgreSQL calls and plain data only, so an error (a failed WAL write
// is a PANIC anyway) ends the process the way PostgreSQL ends any background worker.
void querygate_wal_flusher_main(Datum)
{
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    pqsignal(SIGHUP, SIG_IGN); // no setting of its own to reload
    BackgroundWorkerUnblockSignals();
    // No database: flushing WAL needs none; the connection shows it in pg_stat_activity.
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    if (shared == nullptr)
        ereport(FATAL, (errmsg("querygate wal flusher has no shared memory")));
    pg_atomic_write_u32(&shared->flusher, static_cast<uint32>(MyProc->pgprocno) + 1);
    on_shmem_exit(leave_flusher, 0);

    TimestampTz last_report = GetCurrentTimestamp();
    for (;;) {
        if (between_waits())
            break;
        // Syncs back to back while workers publish commits; each covers all published before it.
        const XLogRecPtr upto = pg_atomic_read_u64(&shared->wanted);
        const bool work = upto > GetFlushRecPtr(nullptr);
        if (work)
            XLogFlush(upto);
        wake_waiters();
        // Its WAL syncs belong in pg_stat_wal: reported when idle, and once a second while busy.
        const TimestampTz now = work ? GetCurrentTimestamp() : 0;
        if (!work || TimestampDifferenceExceeds(last_report, now, 1000)) {
            pgstat_report_wal(!work);
            last_report = work ? now : GetCurrentTimestamp();
        }
        if (work)
            continue;
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
    }
    // Exit code 1: a background worker that exits with 0 is never started again, and one
    // terminated by an administrator (pg_terminate_backend) should be. At shutdown nothing
    // restarts.
    proc_exit(1);
}
