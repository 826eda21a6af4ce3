// A call's transaction, begun, committed or aborted: see call_transaction.hpp.
#include "call/call_transaction.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include "call/call_hygiene.hpp"
#include "call/citus_settings.hpp"
#include "call/client_watch.hpp"
#include "call/stop_request.hpp"
#include "call/worker_budget.hpp"
#include "pg/pg_guard.hpp"
#include "worker/group_commit.hpp"

void CallSession::start()
{
    request_context =
        AllocSetContextCreate(TopMemoryContext, "querygate request", ALLOCSET_DEFAULT_SIZES);
}

void CallSession::use_search_path(const std::string &path)
{
    if (search_path_known && search_path == path)
        return;
    const char *value = path.c_str();
    pg::guard([&] {
        (void)set_config_option("search_path", value, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SET,
                                true, 0, false);
    });
    search_path = path;
    search_path_known = true;
}

CallTransaction::CallTransaction(CallSession &session, Kind kind) noexcept
    : session_(session), kind_(kind)
{
    try {
        // Every call starts read-only; a granted write turns it read-write once its decision is
        // made.
        pg::guard([] {
            SetCurrentStatementStartTimestamp();
            StartTransactionCommand();
            XactReadOnly = true;
            PushActiveSnapshot(GetTransactionSnapshot());
        });
        // From here to the commit, a stop request cancels the call (a lock wait in the catalog's
        // refresh too), never the commit itself.
        if (kind_ == Kind::call)
            stop_request::call_started();
    } catch (...) {
        start_failure_ = std::current_exception();
    }
}

void CallTransaction::started() const
{
    if (start_failure_)
        std::rethrow_exception(start_failure_);
}

void CallTransaction::commit()
{
    GroupCommit &group_commit = session_.group_commit;
    if (kind_ == Kind::call) {
        stop_request::call_ended();
        group_commit.committing();
    }
    MemoryContextSwitchTo(session_.request_context); // outlives the transaction's contexts
    if (kind_ == Kind::call)
        pg::guard([] {
            PopActiveSnapshot();
            citus_settings::before_commit();
            CommitTransactionCommand();
            call_hygiene_after();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
    else
        pg::guard([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
    committed_ = true;
    if (kind_ == Kind::call)
        group_commit.committed();
}

CallTransaction::~CallTransaction()
{
    if (!committed_)
        abort();
    reset_request_memory();
}

void CallTransaction::abort() noexcept
{
    bool aborted = false;
    MemoryContextSwitchTo(session_.request_context); // outlives the transaction's contexts
    try {
        pg::guard([] {
            // What PostgresMain does after an error: no timeout or cancel may outlive the call.
            disable_all_timeouts(false);
            worker_budget::stop();
            client_watch::stop();
            stop_request::call_ended();
            QueryCancelPending = false;
            AbortCurrentTransaction();
            call_hygiene_after();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
        aborted = true;
    } catch (...) {
    }
    // A worker that cannot get out of its transaction cannot serve another call: it ends with
    // exit code 1, which restarts this worker alone (FATAL exits; it does not jump).
    if (!aborted)
        ereport(FATAL, (errmsg("querygate http worker could not abort a failed call")));
    // The aborted transaction rolled back any search_path set in it.
    session_.search_path_known = false;
    session_.group_commit.abandoned();
}

void CallTransaction::reset_request_memory() noexcept
{
    bool reset = false;
    const MemoryContext context = session_.request_context;
    try {
        pg::guard([context] { MemoryContextReset(context); });
        reset = true;
    } catch (...) {
    }
    // Nothing resets a context with an error; a worker whose memory cannot be trusted stops.
    if (!reset)
        ereport(FATAL, (errmsg("querygate http worker could not free a call's memory")));
}
