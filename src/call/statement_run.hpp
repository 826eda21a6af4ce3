// A saved query's statement, run for one call as its policy's role: the last steps of
// QueryRunner::run (call/call_steps.hpp), inside the call's transaction (call_transaction.hpp).
//
// What it promises:
// - begin() enters the call: the query's search_path, the caller's settings (querygate.tenant,
//   request.jwt.claims, made as the worker's superuser: the role cannot change them; carried to
//   Citus's workers too), the call's GUC nest level (call_hygiene.hpp), the policy's role (with
//   SET ROLE forbidden), an SPI connection, the call's time limit armed as the statement timeout,
//   and its caller watched (client_watch.hpp). end() leaves it, in the reverse order, before the
//   commit; after a failure the transaction's abort undoes it instead.
// - execute() reads each parameter's text as its type (in the database encoding), runs the kept
//   plan, and writes the answer with the policy's masks: a page of it (one row more is asked for,
//   to know whether another page follows), a write's whole run, or every row into an export's
//   file, a batch at a time.
// - progress() says how far the call got, for what its failure means (call/call_errors.hpp):
//   whose parameter was being read, and when the time limit was armed.
//
// Throws pg::PgError (and std::bad_alloc, std::runtime_error when an export has no file).
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "utils/timestamp.h"
}

#include "call/authenticate.hpp"
#include "call/call_transaction.hpp"
#include "call/catalog_cache.hpp"
#include "call/plan_cache.hpp"
#include "common/call.hpp"
#include "common/file_body.hpp"
#include "rules/param_binding.hpp"

#include <string>
#include <vector>

class StatementRun {
  public:
    enum class Phase { setup, binding, executing };
    struct Progress {
        Phase phase = Phase::setup;
        // The parameter being read as its type, while binding; -1: none. Written inside
        // pg::guard and read after its error.
        volatile int failing_param = -1;
        TimestampTz started_at = 0; // just before the time limit was armed
        int timeout_ms = 0;         // the call's time limit (call_timeout); 0: none
    };

    explicit StatementRun(CallSession &session) : session_(session) {}

    // A new call: nothing of it has run.
    void reset();
    // Enters the call as `role`, with `timeout_ms` as its time limit (0: none), watching the
    // caller's socket `client_fd` (-1: none). SQL the caller wrote (`adhoc`) gets
    // querygate.adhoc_work_mem and querygate.adhoc_temp_file_limit as its own limits.
    void begin(const CachedQuery &query, const Caller &caller, Oid role, int client_fd,
               int timeout_ms, bool adhoc = false);
    // Leaves it, before the commit. May refuse what the call did (a read call that wrote):
    // call_hygiene.hpp.
    void end();
    // Runs the statement with `values` (the query's parameters, bound) and fills the result's
    // answer: body or file, has_more, rows, masked; and params, when `record_params`, even when
    // the statement then fails.
    void execute(const CachedQuery &query, PlanEntry &entry, const CachedPolicy &policy,
                 const PolicyDecision &decision, const std::vector<BoundParam> &values,
                 const CallRequest &request, bool record_params, CallResult &result);

    const Progress &progress() const { return progress_; }

  private:
    CallSession &session_;
    Progress progress_;
    // The worker's own identity while a call runs as the policy's role. Commit does not restore
    // it (only abort does), so end() puts it back itself.
    Oid saved_user_ = InvalidOid;
    int saved_sec_context_ = 0;
    int guc_nest_level_ = 0; // the GUC nest level the call's SQL runs in (call_hygiene.hpp)
    // Current when the call's SPI connection was made, and again after SPI_finish: the context
    // end() is entered from.
    MemoryContext call_context_ = nullptr;
};

// An export's file (export_file.hpp): a new one when `path` is empty, else the one a worker
// holds. Throws (an internal error) when there is none.
FileBody export_file_at(const std::string &path);
