// One call of a saved query, in-process: the PostgreSQL side of query_runner.hpp.
//
// Every path that runs SQL for a caller runs it in one transaction of its own
// (call/call_transaction.hpp): it starts read-only, refreshes the catalog cache if a change
// committed, authenticates the caller and charges its limits (call/caller_checks.hpp), does its
// work, and commits; a PostgreSQL error anywhere becomes a pg::PgError, the transaction is
// aborted (timeouts and cancel flags reset), and the caller gets a JSON error. A call of a saved
// query (run) is a list of named steps (call/call_steps.hpp): find the query, bind its parameters
// under their rules, check the policy's role, hand a write or a slow read to a helper, then as
// the policy's role take the kept plan and the policy's cached decision about it (allow-list,
// writes, masks), execute and serialize with masks applied (call/statement_run.hpp); what a
// failure answers is call/call_errors.hpp's.
#include "call/query_runner.hpp"

#include "call/api_describer.hpp"
#include "call/call_limits.hpp"
#include "call/call_steps.hpp"
#include "call/call_transaction.hpp"
#include "call/caller_checks.hpp"
#include "call/catalog_cache.hpp"
#include "call/plan_cache.hpp"
#include "call/schema_describer.hpp"
#include "call/slow_queries.hpp"
#include "call/statement_run.hpp"
#include "shmem/event_ring.hpp"
#include "shmem/export_slots.hpp"
#include "shmem/history_ring.hpp"
#include "shmem/limit_table.hpp"
#include "shmem/stat_table.hpp"
#include "shmem/worker_load.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "replication/walreceiver.h"
#include "utils/timestamp.h"
}

#include "auth/secrets.hpp"
#include "call/authenticate.hpp"
#include "common/settings.hpp"
#include "http/event_stream.hpp"
#include "pg/pg_guard.hpp"

#include <cstdlib>
#include <exception>
#include <utility>

struct QueryRunner::State {
    explicit State(GroupCommit &gc) : session(gc), statement(session) {}

    CatalogCache cache;
    PlanCache plans;
    SlowQueries slow;      // the queries this worker hands to helpers before running them
    AdhocStatements adhoc; // SQL its callers wrote (POST /sql)
    Authenticator authenticator;
    secret_file::Cached metrics_tokens; // querygate.metrics_token_file, read again at each reload
    CallSession session;                // the request's memory, the search_path, group commit
    StatementRun statement;             // the running call's statement

    CallSteps::Tools tools()
    {
        return {cache, plans, slow, adhoc, authenticator, session, statement};
    }
    // In a read-only transaction of its own: authenticates `request` (a refusal is charged to
    // its address when `charge`), charges its caller's limits when `charge` (what the headers say
    // in `limits`), and asks `then(const Caller &)` for the answer. `what` names the work in the
    // log if it fails.
    template <typename Then>
    ApiError as_caller(const CallRequest &request, bool charge, LimitReport &limits,
                       const char *what, Then then);
    // What an event stream of `caller` may see. Streams of a policy share its set of queries,
    // made once per catalog generation.
    void audience_of(const Caller &caller, event_stream::Audience &out);
    std::unordered_map<std::string, std::shared_ptr<const event_stream::QuerySet>> event_queries;
    std::uint64_t event_queries_generation = 0;
};

QueryRunner::QueryRunner(GroupCommit &group_commit) : state_(new State(group_commit)) {}
QueryRunner::~QueryRunner() = default;

void QueryRunner::start()
{
    state_->cache.register_invalidation();
    state_->plans.start();
    state_->session.start();
}

CallResult QueryRunner::run(const CallRequest &request, bool may_hand_off)
{
    State &s = *state_;
    CallSteps call(s.tools(), request, may_hand_off);
    {
        CallTransaction transaction(s.session, CallTransaction::Kind::call);
        try {
            transaction.started();
            call.run();
            // Every path that got here ends its transaction with a commit (a read-only one costs
            // nothing); errors are answered below, before the abort.
            transaction.commit();
        } catch (const pg::PgError &e) {
            call.failed(e);
        } catch (const std::exception &e) {
            call.failed(e);
        }
    } // aborted here unless committed; the request's memory reset
    return call.answer();
}

namespace {

// What the server is: a primary, or a hot standby and how far its replay is behind.
void read_role(QueryRunner::Role &role)
{
    QueryRunner::Role *out = &role;
    pg::guard([out] {
        out->standby = RecoveryInProgress();
        if (!out->standby)
            return;
        const XLogRecPtr received = GetWalRcvFlushRecPtr(nullptr, nullptr);
        const XLogRecPtr replayed = GetXLogReplayRecPtr(nullptr);
        out->replay_lag_bytes =
            received > replayed ? static_cast<long long>(received - replayed) : 0;
        const TimestampTz last = GetLatestXTime();
        if (last != 0)
            out->replayed_ago_s = static_cast<double>(GetCurrentTimestamp() - last) / USECS_PER_SEC;
    });
}

} // namespace

ApiError QueryRunner::ready(Role *role)
{
    State &s = *state_;
    ApiError error;
    {
        CallTransaction transaction(s.session, CallTransaction::Kind::lookup);
        try {
            transaction.started();
            error = catalog_loaded(s.cache);
            if (role != nullptr)
                read_role(*role);
            transaction.commit();
        } catch (const std::exception &) {
            // PostgreSQL's errors (pg::PgError) included: what keeps this transaction from
            // starting or the catalog from loading keeps every call from running. Not logged: a
            // probe that keeps asking would fill the log, and the calls' own errors are logged.
            error =
                api_errors::make(error_code::unavailable, "the database cannot serve calls now");
        }
    } // aborted here unless committed; the request's memory reset
    return error;
}

template <typename Then>
ApiError QueryRunner::State::as_caller(const CallRequest &request, bool charge, LimitReport &limits,
                                       const char *what, Then then)
{
    CallerChecks checks(request, charge);
    ApiError error;
    LimitHold hold;
    {
        CallTransaction transaction(session, CallTransaction::Kind::lookup);
        try {
            transaction.started();
            error = checks.admit(cache, authenticator, limits, hold);
            if (!error.set())
                error = then(static_cast<const Caller &>(checks.caller));
            transaction.commit();
        } catch (const std::exception &e) {
            {
                const pg::HeldInterrupts held; // a pending cancel is the abort's to clear
                ereport(LOG, (errmsg("querygate: %s failed: %s", what, e.what())));
            }
            error = api_errors::make(error_code::internal_error, "internal error");
        }
    } // aborted here unless committed; the request's memory reset
    limit_table::release(hold);
    return error;
}

ApiError QueryRunner::describe(const CallRequest &request, api_description::Api &out,
                               LimitReport &limits)
{
    State &s = *state_;
    return s.as_caller(request, true, limits, "describing what a caller may call",
                       [&s, &out](const Caller &caller) {
                           describe_api(s.cache, s.plans, caller, out);
                           return ApiError();
                       });
}

ApiError QueryRunner::describe_schema(const CallRequest &request, const std::string *table,
                                      schema_description::Schema &out, LimitReport &limits)
{
    return state_->as_caller(request, true, limits, "describing a caller's schema",
                             [table, &out](const Caller &caller) {
                                 return ::describe_schema(*caller.policy, table, out);
                             });
}

bool QueryRunner::sql_tool(const CallRequest &request, const std::string &tool)
{
    bool sql = false;
    LimitReport unused;
    state_->as_caller(request, false, unused, "finding an MCP tool",
                      [&sql, &tool](const Caller &caller) {
                          sql = caller.policy->adhoc && caller.policy->queries.count(tool) == 0;
                          return ApiError();
                      });
    return sql;
}

ApiError QueryRunner::watch_events(const CallRequest &request, bool charge,
                                   event_stream::Audience &out, LimitReport &limits)
{
    State &s = *state_;
    return s.as_caller(request, charge, limits, "checking an event stream's caller",
                       [&s, &out](const Caller &caller) {
                           if (!caller.policy->events)
                               return api_errors::make(error_code::events_not_granted,
                                                       "this key's policy may not watch events");
                           s.audience_of(caller, out);
                           return ApiError();
                       });
}

void QueryRunner::State::audience_of(const Caller &caller, event_stream::Audience &out)
{
    if (event_queries_generation != cache.generation()) {
        event_queries.clear();
        event_queries_generation = cache.generation();
    }
    const CachedPolicy &policy = *caller.policy;
    std::shared_ptr<const event_stream::QuerySet> &queries = event_queries[policy.name];
    if (!queries)
        queries = std::make_shared<const event_stream::QuerySet>(policy.queries);
    out.queries = queries;
    out.who = who_of(caller);
    out.whole_policy = policy.events_whole_policy;
    out.policy = policy.name;
    out.key = std::string(caller.key_name);
    out.subject =
        caller.key != nullptr ? "key:" + std::to_string(caller.key->id) : "policy:" + policy.name;
    out.expires_at_us = 0;
    if (caller.key != nullptr) {
        out.expires_at_us = caller.key->expires_at_unix_us;
    } else if (const auto exp = caller.claims.scalars.find("exp");
               exp != caller.claims.scalars.end()) {
        // A token's end, in whole seconds (a verified token's exp is a number).
        const double seconds = std::strtod(exp->second.c_str(), nullptr);
        if (seconds > 0 && seconds < 9.2e12)
            out.expires_at_us = static_cast<std::int64_t>(seconds * 1e6);
    }
}

std::uint64_t QueryRunner::catalog_generation()
{
    // ready() starts a transaction, which takes the catalog's committed changes, and refreshes.
    return ready().set() ? 0 : state_->cache.changes();
}

const run_events::Ring *QueryRunner::events() const
{
    return event_ring::ring();
}

bool QueryRunner::take_stream(const std::string &subject)
{
    return event_ring::take_stream(subject, settings::max_event_streams_per_key);
}

void QueryRunner::give_stream(const std::string &subject)
{
    event_ring::give_stream(subject);
}
ApiError QueryRunner::metrics(metrics::Snapshot &snapshot)
{
    try {
        snapshot.queries = stat_table::snapshot(snapshot.unrecorded);
        snapshot.workers = worker_load::snapshot();
        snapshot.statistics = settings::statistics;
        snapshot.history = history_ring::stats();
        return ApiError();
    } catch (const std::exception &) {
        // The table's lock could not be taken, or no memory for the copy: nothing was changed.
        return api_errors::make(error_code::unavailable, "the statistics cannot be read now");
    }
}

bool QueryRunner::metrics_token_accepted(const std::string &presented, bool &configured)
{
    std::string error;
    const std::vector<std::string> &tokens =
        state_->metrics_tokens.get(settings::metrics_token_file, settings::generation, error);
    // The reason names the file and what is wrong with it, never what it holds.
    if (!error.empty())
        ereport(WARNING, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                          errmsg("querygate: GET /metrics is off: %s", error.c_str())));
    configured = !tokens.empty();
    bool accepted = false;
    for (const std::string &token : tokens)
        accepted = secrets::same_secret(presented, token) || accepted;
    return accepted;
}

void QueryRunner::record(const CallRecord &call) noexcept
{
    history_ring::put(call, worker_load::mine() + 1);
    event_ring::put(call);
}

void QueryRunner::release_export(int slot)
{
    export_slots::give(slot);
}

void QueryRunner::charge_export(const LimitHold &hold, unsigned long long rows)
{
    charge_length(hold, rows);
}

void QueryRunner::helper_ran(const std::string &query, long long revision, long long ran_us)
{
    state_->slow.ran_in_helper(query, revision, ran_us,
                               1000LL * static_cast<long long>(settings::slow_call_threshold));
}

void QueryRunner::release(LimitHold &hold)
{
    limit_table::release(hold);
}

ApiError QueryRunner::limit_anonymous(const std::string &address, LimitReport &report)
{
    try {
        return charge_address(address, report);
    } catch (const std::exception &) {
        return ApiError(); // the table's lock taken or not, nothing was counted: let it be 401
    }
}
