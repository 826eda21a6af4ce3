// One call of a saved query (QueryRunner::run) as a list of named steps, the way nginx runs a
// request through its phases: each step refuses the call, hands it on to a helper, or answers
// it, and then the call stops there; or it lets the next step go on. call_steps.cpp lists them
// in order, once for the checks every call passes and once for what happens as the policy's
// role, once the query's plan and the policy's decision about it are known.
//
// What it promises:
// - Nothing of a call runs before its caller is authenticated and charged; a query's name is
//   looked up only once the caller may call it; its parameters are bound only once it exists;
//   the policy's role is checked before the call runs as it (call/statement_run.hpp).
// - A write goes to a helper (with may_hand_off and no group commit) once it is known to be one,
//   never through a GET, never when writes are off or on a hot standby; a read known to be slow
//   goes to a helper before it is planned, and one that spends the worker's budget is stopped
//   and handed on (call/worker_budget.hpp).
// - The steps run inside the call's transaction (call/call_transaction.hpp), between its start
//   and its commit; failed() is told what the transaction failed with before it is aborted;
//   answer() makes the result once it has ended: who called, the query's revision, the export's
//   place kept or given back, the caller's in-flight count released and the call counted
//   (shmem/stat_table.hpp) unless a helper runs it.
#pragma once

#include "call/adhoc_statements.hpp"
#include "call/authenticate.hpp"
#include "call/caller_checks.hpp"
#include "call/call_transaction.hpp"
#include "call/catalog_cache.hpp"
#include "call/plan_cache.hpp"
#include "call/slow_queries.hpp"
#include "call/statement_run.hpp"
#include "common/call.hpp"
#include "pg/pg_guard.hpp"
#include "rules/param_binding.hpp"

#include <chrono>
#include <cstddef>
#include <exception>
#include <vector>

class CallSteps {
  public:
    // What the steps use of the worker's runner, kept from one call to the next.
    struct Tools {
        CatalogCache &cache;
        PlanCache &plans;
        SlowQueries &slow; // the queries this worker hands to helpers before running them
        AdhocStatements &adhoc;
        Authenticator &authenticator;
        CallSession &session;
        StatementRun &statement;
    };

    // may_hand_off: QueryRunner::run's.
    CallSteps(const Tools &tools, const CallRequest &request, bool may_hand_off);

    // Inside the call's transaction, once it has started: the steps in order, until one
    // answers. Throws what fails (pg::PgError, std::bad_alloc, ...).
    void run();
    // The call's transaction failed, and is still to be aborted: with PostgreSQL's error, or
    // another (out of memory in C++, say).
    void failed(const pg::PgError &e);
    void failed(const std::exception &e);
    // Once the transaction has ended: the call's result.
    CallResult answer();

  private:
    // What a step says: the next one goes on, or the call stops here, its result made.
    enum class Next { go_on, stop };
    using Step = Next (CallSteps::*)();
    template <std::size_t N> void take(const Step (&steps)[N]);
    // Stops the call with `error` when it is set.
    Next answer_if(ApiError error);
    // Stops the call, handed to a helper.
    Next to_helper();
    // The call failed: its error alone, nothing of an answer, and nothing to hand on.
    void fail(ApiError error);
    bool writes() const;

    // The checks every call passes.
    Next catalog();
    Next authenticate();
    Next charge_limits();
    Next find_query();
    Next find_statement(); // SQL the caller wrote, instead of a saved query
    Next bind();
    Next check_role();
    Next hand_off_known_write();
    Next hand_off_slow_read();
    Next as_policy_role();
    // As the policy's role: an ad-hoc statement's checks, then the query's plan and the
    // policy's decision, and what they allow.
    Next checked_statement();
    Next plan();
    Next refuse_get_write();
    Next writes_on();
    Next on_primary();
    Next decision_allows();
    Next refuse_streamed_write();
    Next export_place();
    Next hand_off_export();
    Next hand_off_write();
    Next execute();

    const Tools tools_;
    const CallRequest &request_;
    const std::chrono::steady_clock::time_point started_;
    // Writes go to helpers unless group commit holds them in the worker; reads are given the
    // worker's budget (call/worker_budget.hpp) when a helper could take them over. An export
    // reads every row, the longest call there is: it goes to a helper once checked, its file
    // and place held here (call/export_file.hpp). A threshold of 0 keeps every read here.
    const bool hand_off_;
    const bool reads_move_;
    const int budget_ms_;
    CallerChecks checks_; // and who calls: the access log names it whichever way the call ends
    CallResult result_;
    const CachedQuery *query_ = nullptr;
    AdhocStatement *adhoc_ = nullptr; // the request's SQL, when it sent some: query_ is its query
    ParsedStatement parsed_{};        // it parsed and analysed by this call's checks, until planned
    // An ad-hoc statement is being scanned or checked: PostgreSQL's error is about its text.
    bool preparing_ = false;
    std::vector<BoundParam> values_;
    PlanEntry *entry_ = nullptr;
    const PolicyDecision *decision_ = nullptr;
    int export_slot_ = -1; // a place among querygate.max_exports, for request.stream
    bool wrote_ = false;   // the call ran a granted write
};
