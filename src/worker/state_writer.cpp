// The writer process: see state_writer.hpp.
#include "worker/state_writer.hpp"

#include "shmem/history_ring.hpp"
#include "shmem/limit_table.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"
#include "worker/between_waits.hpp"
#include "worker/history_writer.hpp"
#include "shmem/worker_load.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procsignal.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <chrono>
#include <sched.h>
#include <vector>

namespace {

// Each count replaces the saved one; a key or policy dropped since is skipped (the SELECT finds
// no row), so a save never fails for it.
const char save_key_sql[] =
    "INSERT INTO querygate.quota_usage AS u (key_id, period_start, used, saved_at) "
    "SELECT k.id, pg_catalog.to_timestamp($2), $3, pg_catalog.now() FROM querygate.api_key k "
    "WHERE k.id OPERATOR(pg_catalog.=) $1 ON CONFLICT (key_id) DO UPDATE SET "
    "period_start = excluded.period_start, used = excluded.used, saved_at = excluded.saved_at";
const char save_policy_sql[] =
    "INSERT INTO querygate.quota_usage AS u (policy, period_start, used, saved_at) "
    "SELECT p.name, pg_catalog.to_timestamp($2), $3, pg_catalog.now() FROM querygate.policy p "
    "WHERE p.name OPERATOR(pg_catalog.=) $1 ON CONFLICT (policy) DO UPDATE SET "
    "period_start = excluded.period_start, used = excluded.used, saved_at = excluded.saved_at";

// Saves the counts in one transaction; false (and the transaction rolled back) on an error,
// which the next pass retries. Called with no transaction open.
bool save(const std::vector<limit_table::QuotaCount> &counts)
{
    try {
        pg::guard([&] {
            SetCurrentStatementStartTimestamp();
            StartTransactionCommand();
            PushActiveSnapshot(GetTransactionSnapshot());
            pgstat_report_activity(STATE_RUNNING, "querygate: saving quota counts");
            const Oid nsp = get_namespace_oid("querygate", true);
            // Not installed (yet, or any more) in this database: nothing to save them to.
            if (OidIsValid(nsp) && OidIsValid(get_relname_relid("quota_usage", nsp))) {
                if (SPI_connect() != SPI_OK_CONNECT)
                    elog(ERROR, "querygate: SPI_connect failed");
                for (const limit_table::QuotaCount &q : counts) {
                    const bool by_key = q.kind == limit_table::Kind::key;
                    Oid types[3] = {static_cast<Oid>(by_key ? INT8OID : TEXTOID), FLOAT8OID,
                                    INT8OID};
                    Datum values[3] = {by_key ? Int64GetDatum(q.key_id)
                                              : CStringGetTextDatum(q.policy),
                                       Float8GetDatum(static_cast<double>(q.period_start_us) / 1e6),
                                       Int64GetDatum(q.used)};
                    if (SPI_execute_with_args(by_key ? save_key_sql : save_policy_sql, 3, types,
                                              values, nullptr, false, 0) != SPI_OK_INSERT)
                        elog(ERROR, "querygate: could not save a quota count");
                }
                SPI_finish();
            }
            PopActiveSnapshot();
            CommitTransactionCommand();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
        return true;
    } catch (const pg::PgError &e) {
        ereport(WARNING, (errmsg("querygate writer: quota counts not saved (retried): %s",
                                 e.message.c_str())));
        pg::guard([] {
            AbortCurrentTransaction();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
        return false;
    }
}

void save_quotas()
{
    if (RecoveryInProgress())
        return;
    const std::vector<limit_table::QuotaCount> counts = limit_table::unwritten_quotas();
    if (!counts.empty() && save(counts))
        limit_table::quotas_written(counts);
}

// The history's partitions are kept once a minute, or twice per retention when it is shorter.
std::chrono::seconds partitions_period()
{
    const int half = settings::history_retention / 2;
    return std::chrono::seconds(half <= 0 || half >= 60 ? 60 : std::max(1, half));
}

} // namespace

// The writer's loop. An error outside save() (none is expected: plain waits and shared-memory
// reads) ends the process as PostgreSQL ends any background worker, and it starts again.
void querygate_writer_main(Datum)
{
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(settings::database, nullptr, 0);
    // Its statements name every object with its schema; this keeps anything planted in a schema
    // of the default search_path out of them as well.
    SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
    // Its commits need not wait for their WAL flush: what a crash could lose of them is no more
    // than a crash loses anyway (the ring, the last interval's counts), and a flush for every batch
    // would also flush, early, the writes group commit is holding answers for.
    SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

    history_ring::register_writer();
    // Nobody waits for what it does: its wake-ups should not cut into a worker's call. Under the
    // default policy a writer woken by a worker (a ring half full) may preempt a running
    // worker for the millisecond of its batch, and the connections that worker holds wait with it.
    // SCHED_BATCH keeps its fair share of the CPU (so it keeps up with the calls) and only gives
    // up the wake-up preemption (docs/performance.md, design choices).
#ifdef SCHED_BATCH
    const sched_param no_priority{};
    if (sched_setscheduler(0, SCHED_BATCH, &no_priority) != 0)
        ereport(LOG, (errmsg("querygate writer could not take the batch scheduling policy: %m")));
#endif

    // Each duty has its own interval; a wake-up (a history ring half full) saves the
    // history at once.
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto quotas_due = start, partitions_due = start + partitions_period();
    for (;;) {
        if (between_waits())
            break;
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            const int retention = settings::history_retention;
            const int quota_interval = settings::quota_flush_interval;
            ProcessConfigFile(PGC_SIGHUP);
            if (settings::history_retention != retention)
                partitions_due = Clock::now(); // a new retention applies at once
            // A shorter interval applies from now, not after the longer one has run out.
            if (settings::quota_flush_interval < quota_interval)
                quotas_due =
                    std::min(quotas_due,
                             Clock::now() + std::chrono::seconds(settings::quota_flush_interval));
        }
        history_writer::save(false);
        auto now = Clock::now();
        if (now >= quotas_due) {
            save_quotas();
            quotas_due = now + std::chrono::seconds(settings::quota_flush_interval);
        }
        if (now >= partitions_due) {
            history_writer::keep_partitions();
            partitions_due = now + partitions_period();
        }
        pgstat_report_stat(true);
        now = Clock::now();
        const long until_quotas = static_cast<long>(
            std::chrono::duration_cast<std::chrono::milliseconds>(quotas_due - now).count());
        const long timeout =
            std::max(1L, std::min<long>(settings::history_flush_interval, until_quotas));
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout,
                        PG_WAIT_EXTENSION);
    }
    // A clean stop: the workers were told to stop too; their last counts are saved once they
    // have exited (waiting at most five seconds for them).
    for (int i = 0; i < 100 && worker_load::any_running(); i++)
        (void)WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
    save_quotas();
    history_writer::save(true);
    // Exit code 1, as the WAL flusher's: restarted if an administrator terminated it; at
    // shutdown nothing restarts.
    proc_exit(1);
}
