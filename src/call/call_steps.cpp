// One call of a saved query as its steps: see call_steps.hpp.
#include "call/call_steps.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "mb/pg_wchar.h"
}

#include "call/call_errors.hpp"
#include "call/call_limits.hpp"
#include "call/client_watch.hpp"
#include "call/stop_request.hpp"
#include "call/worker_budget.hpp"
#include "common/settings.hpp"
#include "policy/role_rules.hpp"
#include "shmem/event_ring.hpp"
#include "shmem/export_slots.hpp"
#include "shmem/limit_table.hpp"
#include "shmem/stat_table.hpp"
#include "sql_api/governance.hpp"
#include "worker/group_commit.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

namespace {

// Whether `value` matches a parameter rule's pattern as a whole.
bool matches_pattern(const std::string &pattern, const std::string &value)
{
    const char *p = pattern.c_str();
    const char *v = value.c_str();
    bool ok = false;
    pg::guard([&] {
        // Not valid in the database encoding: the input function would refuse it anyway.
        ok = pg_verifymbstr(v, strlen(v), true) && pattern_matches_whole(p, v);
    });
    return ok;
}

// Whether the policy may run now: its row decoded, its role still there and not privileged
// beyond what the policy allows (role_rules.hpp). Checked per call: roles change outside the
// catalog's invalidation.
ApiError may_run_as(const CachedPolicy &policy)
{
    if (!policy.invalid.empty()) {
        ereport(LOG, (errmsg("querygate: policy \"%s\" refuses every call: %s", policy.name.c_str(),
                             policy.invalid.c_str())));
        return api_errors::make(error_code::internal_error, "internal error");
    }
    RoleStatus status = ROLE_MISSING;
    const Oid role = policy.run_as;
    pg::guard([&] { status = role_status(role); });
    if (status == ROLE_MISSING) {
        ereport(LOG, (errmsg("querygate: policy \"%s\" runs as a role that no longer exists",
                             policy.name.c_str())));
        return api_errors::make(error_code::query_failed, "the query failed");
    }
    if (status == ROLE_PRIVILEGED && !policy.allow_superuser) {
        // Made privileged after the policy was created: refused until a member of the role says
        // so (set_policy(..., allow_superuser => true)).
        ereport(LOG, (errmsg("querygate: policy \"%s\" runs as a privileged role, which it does "
                             "not allow",
                             policy.name.c_str())));
        return api_errors::make(error_code::privileged_role,
                                "the policy's role is privileged (a superuser or alike), which "
                                "the policy does not allow");
    }
    return ApiError();
}

// A call's time limit: the shortest of the server's (querygate.statement_timeout), its policy's
// and the caller's, each 0 when it sets none. Neither a policy nor a caller can lengthen it.
int call_timeout(long server_ms, long policy_ms, long caller_ms)
{
    long limit = 0;
    for (long ms : {server_ms, policy_ms, caller_ms})
        if (ms > 0 && (limit == 0 || ms < limit))
            limit = ms;
    return static_cast<int>(std::min<long>(limit, INT32_MAX));
}

// A place for the caller's export among querygate.max_exports (shmem/export_slots.hpp): none (an
// error) when every place is taken, or the caller's or its policy's share is.
ApiError take_export(const Caller &caller, int &slot)
{
    export_slots::Refusal why = export_slots::Refusal::none;
    slot = export_slots::take(pool_share_of(caller), settings::max_exports, why);
    switch (why) {
    case export_slots::Refusal::none:
        return ApiError();
    case export_slots::Refusal::caller_full:
        return api_errors::make(error_code::too_many_exports,
                                "this caller's exports hold its share of the server's export "
                                "places (querygate.caller_share); retry when one has ended");
    case export_slots::Refusal::policy_full:
        return api_errors::make(error_code::too_many_exports,
                                "exports of this caller's policy hold its share of the server's "
                                "export places (querygate.caller_share); retry when one has ended");
    case export_slots::Refusal::server_full:
        break;
    }
    return api_errors::make(error_code::too_many_exports,
                            "as many exports as this server writes at once (querygate.max_exports) "
                            "are running; retry in a second");
}

long long microseconds_since(std::chrono::steady_clock::time_point from)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 from)
        .count();
}

// Counts a call of a query a caller's policy may call, or of SQL (query nullptr) by a caller whose
// policy takes SQL (stat_table.hpp); others are counted only by their worker.
void record_call(const CachedQuery *query, const CachedPolicy &policy, const CallResult &result,
                 std::chrono::steady_clock::time_point started) noexcept
{
    stat_table::Call call;
    if (query != nullptr)
        call.query = query->name;
    else
        call.kind = metrics::CallKind::sql; // never its per-worker name, nor its text
    call.policy = policy.name;
    call.code = result.error.set() ? result.error.code.c_str() : nullptr;
    call.duration_us = microseconds_since(started);
    call.rows = result.error.set() ? 0 : result.rows;
    call.bytes = result.error.set()      ? 0
                 : result.file.present() ? result.file.size()
                                         : result.body.size();
    stat_table::record(call);
}

} // namespace

CallSteps::CallSteps(const Tools &tools, const CallRequest &request, bool may_hand_off)
    : tools_(tools), request_(request), started_(std::chrono::steady_clock::now()),
      hand_off_(may_hand_off && settings::helpers > 0 && !settings::group_commit),
      reads_move_(may_hand_off && settings::helpers > 0 && settings::slow_call_threshold > 0),
      budget_ms_(reads_move_ && !request.stream ? settings::slow_call_threshold : 0),
      // A call a worker charged already (a helper runs it again) is not charged twice.
      checks_(request, !request.limits_charged)
{
    tools_.statement.reset();
}

void CallSteps::run()
{
    // The checks every call passes, in order; the last runs it as its policy's role.
    static constexpr Step checks[] = {
        &CallSteps::catalog,
        &CallSteps::authenticate,
        &CallSteps::charge_limits,
        &CallSteps::find_query,
        &CallSteps::bind,
        &CallSteps::check_role,
        &CallSteps::hand_off_known_write,
        &CallSteps::hand_off_slow_read,
        &CallSteps::as_policy_role,
    };
    take(checks);
}

template <std::size_t N> void CallSteps::take(const Step (&steps)[N])
{
    for (const Step step : steps)
        if ((this->*step)() == Next::stop)
            return;
}

CallSteps::Next CallSteps::answer_if(ApiError error)
{
    if (!error.set())
        return Next::go_on;
    result_.error = std::move(error);
    return Next::stop;
}

CallSteps::Next CallSteps::to_helper()
{
    result_.for_helper = true;
    return Next::stop;
}

bool CallSteps::writes() const
{
    return entry_->analysis->write_ops != 0;
}

CallSteps::Next CallSteps::catalog()
{
    return answer_if(catalog_loaded(tools_.cache));
}

CallSteps::Next CallSteps::authenticate()
{
    ApiError denied = checks_.authenticate(tools_.authenticator, tools_.cache, result_.limits);
    if (!denied.set())
        return Next::go_on;
    result_.error = std::move(denied);
    result_.refusal = std::move(checks_.caller.refusal);
    return Next::stop;
}

CallSteps::Next CallSteps::charge_limits()
{
    ApiError limited = checks_.charge(result_.limits, result_.limit_hold);
    if (!limited.set())
        return Next::go_on;
    result_.error = std::move(limited); // before anything of the call runs
    // Counted as a call of its query, as history has it, when the caller may call it
    // (stat_table.hpp): a refused caller makes no entry for a name of its choosing.
    if (checks_.caller.policy->queries.count(request_.query) != 0)
        query_ = tools_.cache.find_query(request_.query);
    return Next::stop;
}

CallSteps::Next CallSteps::find_query()
{
    if (!request_.sql.empty())
        return find_statement();
    // Not granted, then not there: a name the caller may not call is never looked up.
    if (checks_.caller.policy->queries.count(request_.query) == 0 ||
        (query_ = tools_.cache.find_query(request_.query)) == nullptr)
        return answer_if(api_errors::query_not_found());
    return Next::go_on;
}

CallSteps::Next CallSteps::find_statement()
{
    const CachedPolicy &policy = *checks_.caller.policy;
    if (!policy.adhoc)
        return answer_if(api_errors::make(error_code::sql_not_allowed,
                                          "this caller's policy takes no SQL of its own: its "
                                          "saved queries are at /q/{name}"));
    preparing_ = true;
    adhoc_ = &tools_.adhoc.find(request_.sql, policy, tools_.plans);
    preparing_ = false;
    query_ = &adhoc_->query;
    return Next::go_on;
}

CallSteps::Next CallSteps::bind()
{
    const Caller &caller = checks_.caller;
    const PatternCheck pattern = [](const std::string &p, const std::string &v) {
        return matches_pattern(p, v);
    };
    return answer_if(bind_params(query_->param_names, query_->rules,
                                 caller.is_jwt ? &caller.claims.scalars : nullptr, request_.params,
                                 values_, pattern));
}

CallSteps::Next CallSteps::check_role()
{
    return answer_if(may_run_as(*checks_.caller.policy));
}

CallSteps::Next CallSteps::hand_off_known_write()
{
    // A write planned here before: the helper plans and decides it again, so this worker need
    // not (its role, plan and decision cost about as much as the rest of the check).
    if (hand_off_ && !request_.stream && !request_.safe_method &&
        tools_.plans.known_write(*query_, checks_.caller.policy->run_as) && !RecoveryInProgress())
        return to_helper();
    return Next::go_on;
}

CallSteps::Next CallSteps::hand_off_slow_read()
{
    // A read that ran past the budget here before: a helper runs it from the start, and this
    // worker serves on (call/slow_queries.hpp).
    if (budget_ms_ > 0 && tools_.slow.slow(query_->name, query_->revision))
        return to_helper();
    return Next::go_on;
}

CallSteps::Next CallSteps::as_policy_role()
{
    const CachedPolicy &policy = *checks_.caller.policy;
    const Oid role = policy.run_as;
    tools_.statement.begin(
        *query_, checks_.caller, role, request_.client_fd,
        call_timeout(settings::statement_timeout, policy.statement_timeout_ms, request_.timeout_ms),
        adhoc_ != nullptr);
    // In order; the last runs the statement.
    static constexpr Step as_role[] = {
        &CallSteps::checked_statement,
        &CallSteps::plan,
        &CallSteps::refuse_get_write,
        &CallSteps::writes_on,
        &CallSteps::on_primary,
        &CallSteps::decision_allows,
        &CallSteps::refuse_streamed_write,
        &CallSteps::export_place,
        &CallSteps::hand_off_export,
        &CallSteps::hand_off_write,
        &CallSteps::execute,
    };
    take(as_role);
    tools_.statement.end();
    // After end(), which undoes every setting made during the call: this one (synchronous_commit
    // for this transaction) must last until the commit.
    if (wrote_)
        tools_.session.group_commit.defer_this_commit();
    return Next::stop;
}

CallSteps::Next CallSteps::checked_statement()
{
    if (adhoc_ == nullptr)
        return Next::go_on;
    const uint64_t generation = tools_.cache.generation();
    const uint64_t epoch = PlanCache::epoch();
    if (AdhocStatements::stale(*adhoc_, generation, epoch)) {
        preparing_ = true;
        parsed_ = AdhocStatements::check(*adhoc_, *checks_.caller.policy, generation, epoch);
        preparing_ = false;
    }
    return answer_if(adhoc_refusal(*adhoc_));
}

CallSteps::Next CallSteps::plan()
{
    const CachedPolicy &policy = *checks_.caller.policy;
    // A statement just checked is planned and analysed from the checks' parse, once (it is
    // consumed).
    const ParsedStatement parsed = std::exchange(parsed_, ParsedStatement{});
    entry_ =
        &tools_.plans.plan_for(*query_, policy.run_as, parsed.query != nullptr ? &parsed : nullptr);
    // SQL the caller wrote is judged by the policy's rules for it: its own write operations.
    decision_ = &tools_.plans.decision_for(*entry_, policy.name,
                                           adhoc_ != nullptr ? policy.adhoc_rules : policy.rules,
                                           tools_.cache.generation());
    return Next::go_on;
}

CallSteps::Next CallSteps::refuse_get_write()
{
    if (!writes() || !request_.safe_method)
        return Next::go_on;
    // Said before anything else of the write: no GET ever writes, whoever calls.
    result_.error =
        api_errors::make(error_code::method_not_allowed, "this query writes: call it with POST");
    result_.error.allow = "POST";
    return Next::stop;
}

CallSteps::Next CallSteps::writes_on()
{
    // The server-wide switch outranks every policy: with it off, no call writes.
    if (writes() && !settings::allow_writes)
        return answer_if(
            api_errors::make(error_code::read_only, "writes are turned off on this server"));
    return Next::go_on;
}

CallSteps::Next CallSteps::on_primary()
{
    // A hot standby answers reads; a write would fail as the transaction turns read-write. Said
    // as what it is, and where to go.
    if (writes() && RecoveryInProgress())
        return answer_if(
            api_errors::make(error_code::read_only_replica,
                             "this server is a hot standby: calls that write go to the primary"));
    return Next::go_on;
}

CallSteps::Next CallSteps::decision_allows()
{
    if (decision_->refused())
        return answer_if(api_errors::make(decision_->refusal, decision_->refusal_message));
    return Next::go_on;
}

CallSteps::Next CallSteps::refuse_streamed_write()
{
    if (request_.stream && writes())
        return answer_if(
            api_errors::make(error_code::invalid_stream, "a call that writes cannot be streamed"));
    return Next::go_on;
}

CallSteps::Next CallSteps::export_place()
{
    // No place for it: the server's are all taken, or this caller's share. (A helper writing a
    // worker's export runs in the place the worker took.)
    if (request_.stream && request_.export_to.empty())
        return answer_if(take_export(checks_.caller, export_slot_));
    return Next::go_on;
}

CallSteps::Next CallSteps::hand_off_export()
{
    if (!request_.stream || !reads_move_)
        return Next::go_on;
    // The file the helper writes the rows into, which this worker then sends.
    result_.file = export_file_at(std::string());
    return to_helper(); // this read-only transaction commits, having run nothing
}

CallSteps::Next CallSteps::hand_off_write()
{
    if (writes() && hand_off_)
        return to_helper(); // this read-only transaction commits, having run nothing
    return Next::go_on;
}

CallSteps::Next CallSteps::execute()
{
    // A granted write (the decision checked the policy's operations) runs in a read-write
    // transaction; everything else stays read-only.
    const int timeout_ms = tools_.statement.progress().timeout_ms;
    if (writes()) {
        XactReadOnly = false;
        wrote_ = true;
    } else if (budget_ms_ > 0 && (timeout_ms == 0 || timeout_ms > budget_ms_)) {
        // Its own time limit, when shorter, ends it first: then it stays here.
        worker_budget::start(budget_ms_);
    }
    const CachedPolicy &policy = *checks_.caller.policy;
    const auto ran_from = std::chrono::steady_clock::now();
    tools_.statement.execute(*query_, *entry_, policy, *decision_, values_, request_,
                             settings::history && policy.history_params, result_);
    if (result_.file.present())
        charge_length(result_.limit_hold, result_.rows);
    result_.ran_us = microseconds_since(ran_from);
    return Next::stop;
}

void CallSteps::failed(const pg::PgError &e)
{
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && worker_budget::spent() &&
        !stop_request::requested() && !client_watch::gone() && query_ != nullptr) {
        // A read that spent its budget here: it rolls back, and a helper runs it again from the
        // start, as it will this query's next calls.
        try {
            tools_.slow.spent_budget(query_->name, query_->revision);
        } catch (const std::bad_alloc &) {
            // Not marked: its next call is tried here again, under the budget.
        }
        CallResult moved;
        moved.limits = result_.limits;
        moved.limit_hold = result_.limit_hold;
        moved.for_helper = true;
        result_ = std::move(moved);
        return;
    }
    // The caller's own text: what PostgreSQL says of it, unless it tells secrets.
    if (preparing_ && adhoc_statement_error(e.sqlerrcode))
        fail(adhoc_error(e, query_ == nullptr ? 0 : query_->param_names.size()));
    else
        fail(call_error(e, request_, query_, tools_.statement.progress()));
}

void CallSteps::failed(const std::exception &e)
{
    // Not PostgreSQL's error (out of memory in C++, say): the transaction is still open, and is
    // aborted as it goes, or every later call on this worker would fail.
    {
        const pg::HeldInterrupts held; // a pending cancel is the abort's to clear
        ereport(LOG,
                (errmsg("querygate: call of %s failed (request %s): %s",
                        logged_name(request_).c_str(), request_.request_id.c_str(), e.what())));
    }
    fail(api_errors::make(error_code::internal_error, "internal error"));
}

void CallSteps::fail(ApiError error)
{
    // A call that failed here: its error alone, nothing of an answer, and nothing to hand on.
    result_.error = std::move(error);
    result_.body.clear();
    result_.file.reset();
    result_.for_helper = false;
}

CallResult CallSteps::answer()
{
    const Caller &caller = checks_.caller;
    // Only an accepted caller is named: a refused key's name is nobody's business (and it has
    // none). The cache's entries live until its next refresh, past this call.
    if ((settings::log_requests != settings::log_off || settings::history) &&
        caller.policy != nullptr) {
        result_.key_name = caller.key_name;
        result_.policy = caller.policy->name;
    }
    if (event_ring::ring() != nullptr)
        result_.who = who_of(caller);
    if (result_.for_helper)
        result_.share = pool_share_of(caller);
    if (query_ != nullptr && adhoc_ == nullptr) {
        result_.revision = query_->revision;
        result_.version = query_->version;
    }
    // An export keeps its place until its file is sent (release_export); one that failed gives it
    // back now.
    if (result_.file.present())
        result_.export_slot = export_slot_;
    else
        export_slots::give(export_slot_);
    // A call handed to a helper stays in flight until its answer (release, from the worker), and
    // is counted by the helper that runs it.
    if (!result_.for_helper) {
        limit_table::release(result_.limit_hold);
        // SQL is counted when the caller's policy takes SQL, refused by a limit or by its checks
        // too, as a granted query's calls are; from any other policy it is not, as a query it is
        // not granted.
        if (caller.policy != nullptr) {
            if (request_.sql.empty()) {
                if (query_ != nullptr)
                    record_call(query_, *caller.policy, result_, started_);
            } else if (caller.policy->adhoc) {
                record_call(nullptr, *caller.policy, result_, started_);
            }
        }
    }
    return std::move(result_);
}
