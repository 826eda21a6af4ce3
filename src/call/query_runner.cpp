// One call of a saved query, in-process: the PostgreSQL side of query_runner.hpp.
//
// Per call: SetCurrentStatementStartTimestamp, StartTransactionCommand (which also accepts pending
// catalog invalidations), refresh the catalog cache if a change committed, authenticate (key hash,
// expiry and address allow-list, or a verified JWT) and authorize (grant) from the cache, resolve
// parameters under their rules, switch to the policy's run_as role so GRANTs and row-level security
// apply, keep the transaction read-only (XactReadOnly: SPI's own read-only flag would not stop a
// volatile function from writing) unless the call is a granted write, arm the statement timeout,
// take the kept plan and the policy's cached decision about it (allow-list, writes, masks),
// execute, serialize with masks applied, commit. A PostgreSQL error anywhere becomes a pg::PgError:
// the transaction is aborted, timeouts and cancel flags are reset, and the caller gets a JSON
// error.
#include "call/query_runner.hpp"

#include "call/call_limits.hpp"
#include "call/api_describer.hpp"
#include "call/client_watch.hpp"
#include "call/export_file.hpp"
#include "shmem/export_slots.hpp"
#include "call/stop_request.hpp"
#include "shmem/limit_table.hpp"
#include "shmem/history_ring.hpp"
#include "shmem/event_ring.hpp"
#include "call/history_values.hpp"
#include "call/slow_queries.hpp"
#include "shmem/stat_table.hpp"
#include "call/worker_budget.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "replication/walreceiver.h"
#include "utils/guc.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include "auth/secrets.hpp"
#include "call/authenticate.hpp"
#include "call/call_hygiene.hpp"
#include "call/citus_settings.hpp"
#include "call/catalog_cache.hpp"
#include "call/row_output.hpp"
#include "call/plan_cache.hpp"
#include "common/settings.hpp"
#include "http/event_stream.hpp"
#include "common/json_text.hpp"
#include "pg/pg_guard.hpp"
#include "policy/role_rules.hpp"
#include "rules/param_binding.hpp"
#include "sql_api/governance.hpp"
#include "worker/group_commit.hpp"
#include "shmem/worker_load.hpp"

#include <cerrno>
#include <new>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace {

enum class Phase { setup, binding, executing };

// An export's file (export_file.hpp): a new one when `path` is empty, else the one a worker
// holds. Throws (an internal error) when there is none.
FileBody export_file_at(const std::string &path)
{
    FileBody file(export_file::open_for(path), 0);
    if (!file.present())
        throw std::runtime_error(std::string("no file for an export: ") + strerror(errno));
    return file;
}

// A call that failed here: its error alone, nothing of an answer, and nothing to hand on.
void failed(CallResult &result, ApiError error)
{
    result.error = std::move(error);
    result.body.clear();
    result.file.reset();
    result.for_helper = false;
}

// Hands the parameters a call recorded for the history (history_values.hpp) to its result
// however the call ends: on success, and when its execution fails after they were read.
class CallParamsKept {
  public:
    CallParamsKept(StringInfo params, CallResult &result) : params_(params), result_(result) {}
    ~CallParamsKept()
    {
        try {
            if (params_ != nullptr && params_->len > 0)
                result_.params.assign(params_->data, params_->len);
        } catch (...) {
            // No memory for a copy: the record goes without its parameters.
        }
    }
    CallParamsKept(const CallParamsKept &) = delete;
    CallParamsKept &operator=(const CallParamsKept &) = delete;

  private:
    StringInfo params_;
    CallResult &result_;
};

} // namespace

struct QueryRunner::State {
    explicit State(GroupCommit &gc) : group_commit(gc) {}

    CatalogCache cache;
    PlanCache plans;
    SlowQueries slow; // the queries this worker hands to helpers before running them
    Authenticator authenticator;
    secret_file::Cached metrics_tokens; // querygate.metrics_token_file, read again at each reload
    GroupCommit &group_commit;          // the worker's
    // The session's search_path as last set by a committed call; unknown after an abort.
    std::string search_path;
    bool search_path_known = false;
    // Per request, reset when it ends. Current while a transaction ends (commit, abort), which
    // deletes the contexts that were current during the call (pg_guard.hpp).
    MemoryContext request_context = nullptr;
    // Current when the call's SPI connection was made, and again after SPI_finish: the context
    // end_call is entered from.
    MemoryContext call_context = nullptr;

    // Filled while a call runs; read by the error path.
    Phase phase = Phase::setup;
    volatile int failing_param = -1;
    TimestampTz started_at = 0;
    // The worker's own identity while a call runs as the policy's role. Commit does not restore it
    // (only abort does), so the success path puts it back itself.
    Oid saved_user = InvalidOid;
    int saved_sec_context = 0;
    // The GUC nest level the call's SQL runs in (call_hygiene.hpp).
    int guc_nest_level = 0;
    // The call's time limit (call_timeout), armed as its statement timeout; 0: none.
    int timeout_ms = 0;

    bool matches_pattern(const std::string &pattern, const std::string &value);
    void ensure_search_path(const std::string &path);
    ApiError may_run_as(const CachedPolicy &policy);
    void begin_call(const CachedQuery &query, const Caller &caller, Oid role, int client_fd,
                    int timeout_ms);
    void end_call();
    void execute(const CachedQuery &query, PlanEntry &entry, const CachedPolicy &policy,
                 const PolicyDecision &decision, const std::vector<BoundParam> &values,
                 const CallRequest &request, bool record_params, CallResult &result);
    ApiError error_for(const pg::PgError &e, const CallRequest &request, const CachedQuery *query);
    void abort_call();

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
    state_->request_context =
        AllocSetContextCreate(TopMemoryContext, "querygate request", ALLOCSET_DEFAULT_SIZES);
}

bool QueryRunner::State::matches_pattern(const std::string &pattern, const std::string &value)
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

void QueryRunner::State::ensure_search_path(const std::string &path)
{
    // Set at session level and only when it changes: most workers serve queries saved with the same
    // path, so most calls skip this. Plans are re-validated by PostgreSQL if it differs.
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

void QueryRunner::State::begin_call(const CachedQuery &query, const Caller &caller, Oid role,
                                    int client_fd, int call_timeout_ms)
{
    timeout_ms = call_timeout_ms;
    ensure_search_path(query.search_path);
    const char *activity = query.sql.c_str();
    const char *tenant = caller.has_tenant ? caller.tenant.c_str() : nullptr;
    const char *claims = caller.is_jwt ? caller.claims.json.c_str() : nullptr;
    const int timeout = call_timeout_ms;
    Oid *user = &saved_user;
    int *context = &saved_sec_context;
    int *nest = &guc_nest_level;
    MemoryContext *outer = &call_context;
    pg::guard([&] {
        pgstat_report_activity(STATE_RUNNING, activity);
        // Transaction-local, set while still the worker's superuser: querygate.tenant is
        // superuser-only, so the policy's role cannot change it.
        if (tenant != nullptr)
            (void)set_config_option("querygate.tenant", tenant, PGC_SUSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        if (claims != nullptr)
            (void)set_config_option("request.jwt.claims", claims, PGC_USERSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        // With Citus, its workers must see them too (citus_settings.hpp).
        if ((tenant != nullptr || claims != nullptr) && citus_settings::loaded())
            citus_settings::send_on();
        *nest = call_hygiene_begin();
        GetUserIdAndSecContext(user, context);
        // LOCAL_USERID_CHANGE also forbids SET ROLE inside the call.
        SetUserIdAndSecContext(role, *context | SECURITY_LOCAL_USERID_CHANGE);
        *outer = CurrentMemoryContext;
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        // The start before the timer: the timer then fires no sooner than timeout after it, so
        // a cancel at the time limit is always judged one (taken after, a worker descheduled in
        // between saw the limit fire "early" and answered 500 query_failed: a CI run, 056).
        started_at = GetCurrentTimestamp();
        if (timeout > 0)
            enable_timeout_after(STATEMENT_TIMEOUT, timeout);
        client_watch::start(client_fd);
    });
}

void QueryRunner::State::end_call()
{
    Oid user = saved_user;
    int context = saved_sec_context;
    int nest = guc_nest_level;
    // Not from SPI's procedure context, which is current after the call ran and which SPI_finish
    // deletes: the checks after it may raise an error (a read call that wrote, say).
    MemoryContextSwitchTo(call_context);
    pg::guard([&] {
        disable_timeout(STATEMENT_TIMEOUT, false);
        worker_budget::stop();
        client_watch::stop();
        stop_request::call_ended();
        SPI_finish();
        call_hygiene_end(nest, XactReadOnly);
        SetUserIdAndSecContext(user, context);
    });
}

void QueryRunner::State::execute(const CachedQuery &query, PlanEntry &entry,
                                 const CachedPolicy &policy, const PolicyDecision &decision,
                                 const std::vector<BoundParam> &values, const CallRequest &request,
                                 bool record_params, CallResult &result)
{
    // Everything the guarded block touches is plain data prepared here, outside it.
    const int nparams = static_cast<int>(query.param_names.size());
    const char **texts = static_cast<const char **>(
        MemoryContextAllocZero(request_context, sizeof(char *) * Max(nparams, 1)));
    int *lengths =
        static_cast<int *>(MemoryContextAllocZero(request_context, sizeof(int) * Max(nparams, 1)));
    for (int i = 0; i < nparams; i++)
        if (!values[i].is_null) {
            texts[i] = values[i].value.c_str();
            lengths[i] = static_cast<int>(values[i].value.size());
        }
    int *actions = static_cast<int *>(MemoryContextAllocZero(
        request_context, sizeof(int) * Max(decision.column_actions.size(), size_t(1))));
    bool masked = false;
    const int nactions = static_cast<int>(decision.column_actions.size());
    for (size_t i = 0; i < decision.column_actions.size(); i++) {
        actions[i] = static_cast<int>(decision.column_actions[i]);
        masked = masked || actions[i] != 0;
    }
    // The policy's own key (or its shared scope's): its hashes compare with no other policy's.
    const char *hash_key = policy.hash_key.data();
    const int hash_key_len = static_cast<int>(policy.hash_key.size());

    Datum *values_out = static_cast<Datum *>(
        MemoryContextAllocZero(request_context, sizeof(Datum) * Max(nparams, 1)));
    char *nulls = static_cast<char *>(MemoryContextAllocZero(request_context, nparams + 1));
    StringInfo body = nullptr;
    bool has_more = false;
    uint64 rows_out = 0;
    TupleDesc out_desc = nullptr; // the answer's columns, for the history's list of masked ones
    const bool writes = entry.analysis->write_ops != 0;
    const bool returns_rows = entry.analysis->returns_rows;
    const long page = writes ? 1 : request.page;
    const long page_size = request.page_size;
    const AnswerFormat format = request.format;
    MemoryContext request_cxt = request_context;
    // An export writes every row to its file (export_file.hpp), which the answer is sent from: a
    // new one, or in a helper its worker's. It is closed on every way out but the one that hands
    // it on.
    FileBody file = request.stream ? export_file_at(request.export_to) : FileBody();
    const int export_fd = file.fd();
    uint64 exported = 0;
    const uint64 export_limit = static_cast<uint64>(settings::max_export_size) * 1024 * 1024;
    SPIPlanPtr plan = entry.plan;
    FmgrInfo *input = entry.input;
    Oid *ioparam = entry.ioparam;
    volatile int *failing = &failing_param;
    Phase *phase_ptr = &phase;
    // The parameters as the history keeps them, once every one is read as its type: kept also
    // when the call then fails.
    StringInfo params = nullptr;
    if (record_params) {
        MemoryContext old = MemoryContextSwitchTo(request_context);
        params = makeStringInfo();
        MemoryContextSwitchTo(old);
    }
    const CallParamsKept kept_params(params, result);

    pg::guard([&] {
        *phase_ptr = Phase::binding;
        for (int i = 0; i < nparams; i++) {
            *failing = i;
            if (texts[i] == nullptr) {
                nulls[i] = 'n';
                continue;
            }
            nulls[i] = ' ';
            // Text that reaches an input function must be valid in the database encoding: the
            // wire protocol would have checked it; here nobody else does.
            if (!pg_verifymbstr(texts[i], lengths[i], true))
                ereport(ERROR, (errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
                                errmsg("is not valid %s", GetDatabaseEncodingName())));
            values_out[i] =
                InputFunctionCall(&input[i], const_cast<char *>(texts[i]), ioparam[i], -1);
        }
        *failing = -1;
        if (params != nullptr)
            history_values::append_params(params, query.param_names, query.param_types,
                                          decision.param_actions, values_out, nulls, hash_key,
                                          hash_key_len);
        *phase_ptr = Phase::executing;

        if (export_fd >= 0) {
            // Every row, a batch at a time: the worker holds one batch, never the answer.
            Portal cursor = SPI_cursor_open(nullptr, plan, values_out, nulls, false);
            MemoryContext spi_cxt = MemoryContextSwitchTo(request_cxt);
            body = makeStringInfo();
            out_desc = CreateTupleDescCopy(cursor->tupDesc);
            MemoryContextSwitchTo(spi_cxt);
            RowWriter *writer = row_writer_create(cursor->tupDesc, masked ? actions : nullptr,
                                                  nactions, hash_key, hash_key_len, format);
            row_writer_begin(writer, body);
            for (;;) {
                SPI_cursor_fetch(cursor, true, export_file::batch_rows);
                const uint64 n = SPI_processed;
                row_writer_rows(writer, body, SPI_tuptable->vals, 0, n, 0);
                rows_out += n;
                SPI_freetuptable(SPI_tuptable);
                if (n == 0)
                    break;
                if (body->len >= export_file::flush_bytes)
                    export_file::append(export_fd, body, exported, export_limit);
            }
            row_writer_end(writer, body);
            export_file::append(export_fd, body, exported, export_limit);
            SPI_cursor_close(cursor);
            return;
        }

        // A write runs whole (a row limit would stop an UPDATE halfway) and commits before the
        // answer is sent. A read asks for one row more than the page, to know whether another
        // page follows; pages after the first are reached through a cursor, so skipped rows are
        // never held in memory.
        const uint64 want = static_cast<uint64>(page_size) + 1;
        Portal portal = nullptr;
        if (writes || page == 1) {
            int rc = SPI_execute_plan(plan, values_out, nulls, false,
                                      writes ? 0 : static_cast<long>(want));
            if (rc < 0)
                elog(ERROR, "querygate: execution failed: %s", SPI_result_code_string(rc));
        } else {
            portal = SPI_cursor_open(nullptr, plan, values_out, nulls, false);
            SPI_cursor_move(portal, true, (page - 1) * page_size);
            SPI_cursor_fetch(portal, true, static_cast<long>(want));
        }
        MemoryContext spi_cxt = MemoryContextSwitchTo(request_cxt);
        body = makeStringInfo();
        MemoryContextSwitchTo(spi_cxt);
        if (writes && !returns_rows) {
            rows_out = SPI_processed;
            append_rows_affected(body, format, SPI_processed);
        } else if (SPI_tuptable == nullptr) {
            if (format == AnswerFormat::json)
                appendStringInfoString(body, "[]"); // no columns: the other formats are empty
        } else {
            uint64 n = SPI_processed;
            has_more = !writes && n > static_cast<uint64>(page_size);
            uint64 rows = has_more ? static_cast<uint64>(page_size) : n;
            rows_out = rows;
            out_desc = SPI_tuptable->tupdesc;
            RowWriter *writer = row_writer_create(SPI_tuptable->tupdesc, masked ? actions : nullptr,
                                                  nactions, hash_key, hash_key_len, format);
            row_writer_append_rows(writer, body, SPI_tuptable->vals, 0, rows,
                                   static_cast<Size>(settings::max_response_size));
        }
        if (portal != nullptr)
            SPI_cursor_close(portal);
    });
    if (export_fd >= 0)
        result.file = FileBody(file.release(), exported);
    else
        result.body.assign(body->data, body->len);
    result.has_more = has_more;
    result.rows = rows_out;
    if (masked && out_desc != nullptr && settings::history)
        result.masked = history_values::masked_list(out_desc, actions, nactions);
}

void QueryRunner::State::abort_call()
{
    bool aborted = false;
    MemoryContextSwitchTo(request_context); // outlives the transaction's contexts
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
    } catch (const pg::PgError &) {
    }
    // A worker that cannot get out of its transaction cannot serve another call: it ends with
    // exit code 1, which restarts this worker alone (FATAL exits; it does not jump).
    if (!aborted)
        ereport(FATAL, (errmsg("querygate http worker could not abort a failed call")));
    // The aborted transaction rolled back any search_path set in it.
    search_path_known = false;
    group_commit.abandoned();
}

ApiError QueryRunner::State::error_for(const pg::PgError &e, const CallRequest &request,
                                       const CachedQuery *query)
{
    const char *name = query ? query->name.c_str() : request.query.c_str();
    if (phase == Phase::binding && query != nullptr && failing_param >= 0 &&
        failing_param < static_cast<int>(query->param_names.size())) {
        // The problem is the caller's own value, so its description goes back to the caller.
        ApiError err = api_errors::make(error_code::param_invalid, "invalid parameter value");
        std::string problem = e.message.size() > 200 ? e.message.substr(0, 200) + "..." : e.message;
        err.errors.emplace_back(query->param_names[failing_param], problem);
        err.message = "invalid value for parameter " + query->param_names[failing_param];
        return err;
    }
    if (e.sqlerrcode == response_too_large_sqlstate && request.stream)
        return api_errors::make(error_code::response_too_large,
                                "the export is larger than this server writes (" +
                                    std::to_string(settings::max_export_size) +
                                    " MB): ask for fewer rows");
    if (e.sqlerrcode == response_too_large_sqlstate)
        return api_errors::make(error_code::response_too_large,
                                "the answer is larger than this server sends (" +
                                    std::to_string(settings::max_response_size) +
                                    " bytes): ask for a smaller page");
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && stop_request::requested())
        return api_errors::make(error_code::shutting_down,
                                "the server is stopping: the call was cancelled and nothing it "
                                "did was kept");
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && client_watch::gone())
        return api_errors::make(error_code::client_closed,
                                "the caller closed the connection while the query ran");
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && timeout_ms > 0 &&
        TimestampDifferenceExceeds(started_at, GetCurrentTimestamp(), timeout_ms - 1))
        return api_errors::make(error_code::query_timeout,
                                "the query ran longer than its time limit (" +
                                    std::to_string(timeout_ms) + " ms)");
    // The database's own message goes to the server log only: it may name tables, columns or
    // values the caller may not see. The call's cancel may be pending (its budget spent as it
    // failed): held, for abort_call to clear.
    const pg::HeldInterrupts held;
    ereport(LOG,
            (errmsg("querygate: call of \"%s\" failed (request %s): %s", name,
                    request.request_id.c_str(), e.message.c_str()),
             e.detail.empty() ? 0 : errdetail_internal("%s", e.detail.c_str()), errhidestmt(true)));
    if (e.sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
        return api_errors::make(error_code::read_only, "this call may not write to the database");
    // ExecWithCheckOptions' message for a row-level security policy's WITH CHECK (its only mark:
    // the same SQLSTATE as a missing privilege). Under a server whose lc_messages translates it,
    // the call is the privilege's 403.
    if (e.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE &&
        e.message.rfind("new row violates row-level security policy", 0) == 0)
        return api_errors::make(error_code::row_not_allowed,
                                "the row is outside what this caller may write: a row-level "
                                "security policy refused it (its tenant, say)");
    if (e.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
        return api_errors::make(error_code::permission_denied,
                                "the policy's role lacks a privilege this query needs");
    return api_errors::make(error_code::query_failed, "the query failed");
}

// Whether the policy may run now: its row decoded, its role still there and not privileged
// beyond what the policy allows (role_rules.hpp). Checked per call: roles change outside the
// catalog's invalidation.
ApiError QueryRunner::State::may_run_as(const CachedPolicy &policy)
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

namespace {

// Only the hash of a secret is ever compared or stored: its SHA-256 in lower-case hex.
void key_hash_hex(const std::string &secret, char (&hex)[2 * secrets::sha256_length + 1])
{
    unsigned char digest[secrets::sha256_length];
    secrets::sha256(secret.data(), secret.size(), digest);
    secrets::to_hex(digest, sizeof(digest), hex);
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

// Every call starts read-only; a granted write turns it read-write once its decision is made.
void begin_read_only_transaction()
{
    pg::guard([] {
        SetCurrentStatementStartTimestamp();
        StartTransactionCommand();
        XactReadOnly = true;
        PushActiveSnapshot(GetTransactionSnapshot());
    });
}

// Counts a call of a query a caller's policy may call (stat_table.hpp); others are counted only
// by their worker.
void record_call(const CachedQuery &query, const CachedPolicy &policy, const CallResult &result,
                 std::chrono::steady_clock::time_point started) noexcept
{
    stat_table::Call call;
    call.query = query.name;
    call.policy = policy.name;
    call.code = result.error.set() ? result.error.code.c_str() : nullptr;
    call.duration_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - started)
                           .count();
    call.rows = result.error.set() ? 0 : result.rows;
    call.bytes = result.error.set()      ? 0
                 : result.file.present() ? result.file.size()
                                         : result.body.size();
    stat_table::record(call);
}

} // namespace

ApiError QueryRunner::ready(Role *role)
{
    State &s = *state_;
    ApiError error;
    try {
        begin_read_only_transaction();
        if (!s.cache.refresh())
            error = api_errors::make(error_code::unavailable,
                                     "querygate is not installed in this database");
        if (role != nullptr)
            pg::guard([role] {
                role->standby = RecoveryInProgress();
                if (!role->standby)
                    return;
                const XLogRecPtr received = GetWalRcvFlushRecPtr(nullptr, nullptr);
                const XLogRecPtr replayed = GetXLogReplayRecPtr(nullptr);
                role->replay_lag_bytes =
                    received > replayed ? static_cast<long long>(received - replayed) : 0;
                const TimestampTz last = GetLatestXTime();
                if (last != 0)
                    role->replayed_ago_s =
                        static_cast<double>(GetCurrentTimestamp() - last) / USECS_PER_SEC;
            });
        MemoryContextSwitchTo(s.request_context); // outlives the transaction's contexts
        pg::guard([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
    } catch (const std::exception &) {
        // PostgreSQL's errors (pg::PgError) included: what keeps this transaction from starting
        // or the catalog from loading keeps every call from running. Not logged: a probe that
        // keeps asking would fill the log, and the calls' own errors are logged.
        error = api_errors::make(error_code::unavailable, "the database cannot serve calls now");
        s.abort_call();
    }
    MemoryContextReset(s.request_context);
    return error;
}

template <typename Then>
ApiError QueryRunner::State::as_caller(const CallRequest &request, bool charge, LimitReport &limits,
                                       const char *what, Then then)
{
    char hash_hex[2 * secrets::sha256_length + 1];
    key_hash_hex(request.secret, hash_hex);
    ApiError error;
    LimitHold hold;
    Caller caller;
    try {
        begin_read_only_transaction();
        if (!cache.refresh()) {
            error = api_errors::make(error_code::unavailable,
                                     "querygate is not installed in this database");
        } else if (ApiError denied = authenticator.authenticate(cache, request, hash_hex, caller);
                   denied.set()) {
            ApiError limited = charge ? charge_address(request.client_ip, limits) : ApiError();
            error = limited.set() ? std::move(limited) : std::move(denied);
        } else if (ApiError limited = charge ? charge_caller(caller, limits, hold) : ApiError();
                   limited.set()) {
            error = std::move(limited);
        } else {
            error = then(caller);
        }
        MemoryContextSwitchTo(request_context); // outlives the transaction's contexts
        pg::guard([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
    } catch (const std::exception &e) {
        {
            const pg::HeldInterrupts held; // a pending cancel is abort_call's to clear
            ereport(LOG, (errmsg("querygate: %s failed: %s", what, e.what())));
        }
        error = api_errors::make(error_code::internal_error, "internal error");
        abort_call();
    }
    MemoryContextReset(request_context);
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

namespace {

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

} // namespace

CallResult QueryRunner::run(const CallRequest &request, bool may_hand_off)
{
    State &s = *state_;
    const auto started = std::chrono::steady_clock::now();
    CallResult result;
    const CachedQuery *query = nullptr;
    s.phase = Phase::setup;
    s.failing_param = -1;
    s.timeout_ms = 0;
    // Writes go to helpers unless group commit holds them in the worker; reads are given the
    // worker's budget (call/worker_budget.hpp) when a helper could take them over. An export
    // reads every row, the longest call there is: it goes to a helper once checked, its file and
    // place held here (call/export_file.hpp). A threshold of 0 keeps every read here.
    const bool may_help = may_hand_off && settings::helpers > 0;
    const bool hand_off = may_help && !settings::group_commit;
    const bool reads_move = may_help && settings::slow_call_threshold > 0;
    const int budget_ms = reads_move && !request.stream ? settings::slow_call_threshold : 0;

    char hash_hex[2 * secrets::sha256_length + 1];
    key_hash_hex(request.secret, hash_hex);

    Caller caller;        // outside the try: the access log names it whichever way the call ends
    int export_slot = -1; // a place among querygate.max_exports, for request.stream
    try {
        begin_read_only_transaction();
        // From here to the commit, a stop request cancels the call (a lock wait in the catalog's
        // refresh too), never the commit itself.
        stop_request::call_started();
        std::vector<BoundParam> values;
        const PatternCheck pattern = [&s](const std::string &p, const std::string &v) {
            return s.matches_pattern(p, v);
        };
        bool wrote = false;
        if (!s.cache.refresh()) {
            result.error = api_errors::make(error_code::unavailable,
                                            "querygate is not installed in this database");
        } else if (ApiError denied =
                       s.authenticator.authenticate(s.cache, request, hash_hex, caller);
                   denied.set()) {
            // Over the address's limit, a caller without valid credentials hears only that.
            ApiError limited = request.limits_charged
                                   ? ApiError()
                                   : charge_address(request.client_ip, result.limits);
            result.error = limited.set() ? std::move(limited) : std::move(denied);
            result.refusal = std::move(caller.refusal);
        } else if (ApiError limited = request.limits_charged
                                          ? ApiError()
                                          : charge_caller(caller, result.limits, result.limit_hold);
                   limited.set()) {
            result.error = std::move(limited); // before anything of the call runs
            // Counted as a call of its query, as history has it, when the caller may call it
            // (stat_table.hpp): a refused caller makes no entry for a name of its choosing.
            if (caller.policy->queries.count(request.query) != 0)
                query = s.cache.find_query(request.query);
        } else if (caller.policy->queries.count(request.query) == 0 ||
                   (query = s.cache.find_query(request.query)) == nullptr) {
            // Not granted, then not there: a name the caller may not call is never looked up.
            result.error = api_errors::query_not_found();
        } else if (ApiError bad = bind_params(query->param_names, query->rules,
                                              caller.is_jwt ? &caller.claims.scalars : nullptr,
                                              request.params, values, pattern);
                   bad.set()) {
            result.error = std::move(bad);
        } else if (ApiError refused = s.may_run_as(*caller.policy); refused.set()) {
            result.error = std::move(refused);
        } else if (hand_off && !request.stream && !request.safe_method &&
                   s.plans.known_write(*query, caller.policy->run_as) && !RecoveryInProgress()) {
            // A write planned here before: the helper plans and decides it again, so this worker
            // need not (its role, plan and decision cost about as much as the rest of the check).
            result.for_helper = true;
        } else if (budget_ms > 0 && s.slow.slow(query->name, query->revision)) {
            // A read that ran past the budget here before: a helper runs it from the start, and
            // this worker serves on (call/slow_queries.hpp).
            result.for_helper = true;
        } else {
            const Oid role = caller.policy->run_as;
            s.begin_call(*query, caller, role, request.client_fd,
                         call_timeout(settings::statement_timeout,
                                      caller.policy->statement_timeout_ms, request.timeout_ms));
            PlanEntry &entry = s.plans.plan_for(*query, role);
            const PolicyDecision &decision =
                s.plans.decision_for(entry, *caller.policy, s.cache.generation());
            if (entry.analysis->write_ops != 0 && request.safe_method) {
                // Said before anything else of the write: no GET ever writes, whoever calls.
                result.error = api_errors::make(error_code::method_not_allowed,
                                                "this query writes: call it with POST");
                result.error.allow = "POST";
            } else if (entry.analysis->write_ops != 0 && !settings::allow_writes) {
                // The server-wide switch outranks every policy: with it off, no call writes.
                result.error =
                    api_errors::make(error_code::read_only, "writes are turned off on this server");
            } else if (entry.analysis->write_ops != 0 && RecoveryInProgress()) {
                // A hot standby answers reads; a write would fail as the transaction turns
                // read-write. Said as what it is, and where to go.
                result.error = api_errors::make(
                    error_code::read_only_replica,
                    "this server is a hot standby: calls that write go to the primary");
            } else if (decision.refused()) {
                result.error = api_errors::make(decision.refusal, decision.refusal_message);
            } else if (request.stream && entry.analysis->write_ops != 0) {
                result.error = api_errors::make(error_code::invalid_stream,
                                                "a call that writes cannot be streamed");
            } else if (request.stream && request.export_to.empty() &&
                       (result.error = take_export(caller, export_slot)).set()) {
                // No place for it: the server's are all taken, or this caller's share. (A helper
                // writing a worker's export runs in the place the worker took.)
            } else if (request.stream && reads_move) {
                // The file the helper writes the rows into, which this worker then sends.
                result.file = export_file_at(std::string());
                result.for_helper = true; // this read-only transaction commits, having run nothing
            } else if (entry.analysis->write_ops != 0 && hand_off) {
                result.for_helper = true; // this read-only transaction commits, having run nothing
            } else {
                // A granted write (the decision checked the policy's operations) runs in a
                // read-write transaction; everything else stays read-only.
                if (entry.analysis->write_ops != 0) {
                    XactReadOnly = false;
                    wrote = true;
                } else if (budget_ms > 0 && (s.timeout_ms == 0 || s.timeout_ms > budget_ms)) {
                    // Its own time limit, when shorter, ends it first: then it stays here.
                    worker_budget::start(budget_ms);
                }
                const auto ran_from = std::chrono::steady_clock::now();
                s.execute(*query, entry, *caller.policy, decision, values, request,
                          settings::history && caller.policy->history_params, result);
                if (result.file.present())
                    charge_length(result.limit_hold, result.rows);
                result.ran_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - ran_from)
                                    .count();
            }
            s.end_call();
            // After end_call, which undoes every setting made during the call: this one
            // (synchronous_commit for this transaction) must last until the commit.
            if (wrote)
                s.group_commit.defer_this_commit();
        }
        // Every path that got here ends its transaction with a commit (a read-only one costs
        // nothing); errors took the abort path below instead.
        stop_request::call_ended();
        s.group_commit.committing();
        MemoryContextSwitchTo(s.request_context); // outlives the transaction's contexts
        pg::guard([] {
            PopActiveSnapshot();
            citus_settings::before_commit();
            CommitTransactionCommand();
            call_hygiene_after();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
        s.group_commit.committed();
    } catch (const pg::PgError &e) {
        if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && worker_budget::spent() &&
            !stop_request::requested() && !client_watch::gone() && query != nullptr) {
            // A read that spent its budget here: it rolls back, and a helper runs it again from
            // the start, as it will this query's next calls.
            s.abort_call();
            try {
                s.slow.spent_budget(query->name, query->revision);
            } catch (const std::bad_alloc &) {
                // Not marked: its next call is tried here again, under the budget.
            }
            CallResult moved;
            moved.limits = result.limits;
            moved.limit_hold = result.limit_hold;
            moved.for_helper = true;
            result = std::move(moved);
        } else {
            failed(result, s.error_for(e, request, query));
            s.abort_call();
        }
    } catch (const std::exception &e) {
        // Not PostgreSQL's error (out of memory in C++, say): the transaction is still open and
        // must be ended here, or every later call on this worker would fail.
        {
            const pg::HeldInterrupts held; // a pending cancel is abort_call's to clear
            ereport(LOG, (errmsg("querygate: call of \"%s\" failed (request %s): %s",
                                 request.query.c_str(), request.request_id.c_str(), e.what())));
        }
        failed(result, api_errors::make(error_code::internal_error, "internal error"));
        s.abort_call();
    }
    // Only an accepted caller is named: a refused key's name is nobody's business (and it has
    // none). The cache's entries live until its next refresh, past this call.
    if ((settings::log_requests != settings::log_off || settings::history) &&
        caller.policy != nullptr) {
        result.key_name = caller.key_name;
        result.policy = caller.policy->name;
    }
    if (event_ring::ring() != nullptr)
        result.who = who_of(caller);
    if (result.for_helper)
        result.share = pool_share_of(caller);
    if (query != nullptr) {
        result.revision = query->revision;
        result.version = query->version;
    }
    MemoryContextReset(s.request_context);
    // An export keeps its place until its file is sent (release_export); one that failed gives it
    // back now.
    if (result.file.present())
        result.export_slot = export_slot;
    else
        export_slots::give(export_slot);
    // A call handed to a helper stays in flight until its answer (release, from the worker), and
    // is counted by the helper that runs it.
    if (!result.for_helper) {
        limit_table::release(result.limit_hold);
        if (query != nullptr && caller.policy != nullptr)
            record_call(*query, *caller.policy, result, started);
    }
    return result;
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
