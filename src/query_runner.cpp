// One call of a saved query, in-process: the PostgreSQL side of query_runner.hpp.
//
// Per call: SetCurrentStatementStartTimestamp, StartTransactionCommand (which also accepts pending
// catalog invalidations), refresh the catalog cache if a change committed, authenticate and
// authorize from the cache (no SPI), switch to the policy's run_as role so GRANTs and row-level
// security apply, XactReadOnly (SPI's own read-only flag would not stop a volatile function from
// writing), the statement timeout, bind through each type's input function, execute the kept plan,
// serialize, commit. A PostgreSQL error anywhere becomes a pg::PgError: the transaction is aborted,
// timeouts and cancel flags are reset, and the caller gets a JSON error. The worker goes on.
#include "query_runner.hpp"

#include "pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include "catalog_cache.hpp"
#include "json_output.hpp"
#include "pg_guard.hpp"
#include "secrets.hpp"
#include "settings.hpp"

#include <chrono>
#include <map>
#include <utility>

namespace {

// A plan kept for one (query, run_as role): prepared as that role, with the query's search_path.
struct PlanEntry {
    int64_t revision = 0;
    SPIPlanPtr plan = nullptr;
    FmgrInfo *input = nullptr; // per parameter, in TopMemoryContext
    Oid *ioparam = nullptr;
};

int64_t unix_now_us()
{
    using namespace std::chrono;
    return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

enum class Phase { setup, binding, executing };

// Every problem with the call's parameters at once: missing ones (param_required), and unknown,
// repeated or NUL-holding ones (param_invalid). Checked only once the caller is authorized for the
// query, so parameter names are never revealed to anyone else.
ApiError check_params(const CachedQuery &query, const std::vector<CallParam> &params)
{
    std::vector<std::pair<std::string, std::string>> problems;
    bool missing = false;
    for (const std::string &name : query.param_names) {
        bool found = false;
        for (const CallParam &p : params)
            found = found || p.name == name;
        if (!found) {
            problems.emplace_back(name, "is required");
            missing = true;
        }
    }
    for (size_t i = 0; i < params.size(); i++) {
        const CallParam &p = params[i];
        bool known = false;
        for (const std::string &name : query.param_names)
            known = known || p.name == name;
        bool repeated = false;
        for (size_t j = 0; j < i; j++)
            repeated = repeated || params[j].name == p.name;
        if (!known)
            problems.emplace_back(p.name, "is not a parameter of this query");
        else if (repeated)
            problems.emplace_back(p.name, "is given more than once");
        else if (p.value.find('\0') != std::string::npos)
            problems.emplace_back(p.name, "must not contain a NUL byte");
    }
    if (problems.empty())
        return ApiError();
    ApiError err = missing ? api_errors::make(400, "param_required", "missing or invalid parameters")
                           : api_errors::make(400, "param_invalid", "invalid parameters");
    err.errors = std::move(problems);
    return err;
}

} // namespace

struct QueryRunner::State {
    CatalogCache cache;
    std::map<std::pair<std::string, Oid>, PlanEntry> plans;
    // The session's search_path as last set by a committed call; unknown after an abort.
    std::string search_path;
    bool search_path_known = false;
    MemoryContext request_context = nullptr;

    // Filled while a call runs; read by the error path.
    Phase phase = Phase::setup;
    volatile int failing_param = -1;
    // The worker's own identity while a call runs as the policy's role. Commit does not restore it
    // (only abort does), so the success path puts it back itself.
    Oid saved_user = InvalidOid;
    int saved_sec_context = 0;
    TimestampTz started_at = 0;

    void ensure_search_path(const std::string &path);
    PlanEntry &plan_for(const CachedQuery &query, Oid role);
    void execute(const CachedQuery &query, PlanEntry &entry, const CallRequest &request,
                 CallResult &result);
    ApiError error_for(const pg::PgError &e, const CallRequest &request, const CachedQuery *query);
    void abort_call();
};

QueryRunner::QueryRunner() : state_(new State()) {}
QueryRunner::~QueryRunner() = default;

void QueryRunner::start()
{
    state_->cache.register_invalidation();
    state_->request_context = AllocSetContextCreate(TopMemoryContext, "querygate request",
                                                    ALLOCSET_DEFAULT_SIZES);
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

PlanEntry &QueryRunner::State::plan_for(const CachedQuery &query, Oid role)
{
    PlanEntry &entry = plans[std::make_pair(query.name, role)];
    if (entry.plan != nullptr && entry.revision == query.revision)
        return entry;
    SPIPlanPtr old = entry.plan;
    entry.plan = nullptr;
    const char *sql = query.prepared_sql.c_str();
    int nparams = static_cast<int>(query.param_types.size());
    Oid *types = const_cast<Oid *>(query.param_types.data());
    SPIPlanPtr plan = nullptr;
    FmgrInfo *input = nullptr;
    Oid *ioparam = nullptr;
    pg::guard([&] {
        if (old != nullptr)
            SPI_freeplan(old);
        plan = SPI_prepare(sql, nparams, types);
        if (plan == nullptr)
            elog(ERROR, "querygate: could not prepare saved query: %s",
                 SPI_result_code_string(SPI_result));
        SPI_keepplan(plan);
        input = static_cast<FmgrInfo *>(
            MemoryContextAllocZero(TopMemoryContext, sizeof(FmgrInfo) * Max(nparams, 1)));
        ioparam = static_cast<Oid *>(
            MemoryContextAllocZero(TopMemoryContext, sizeof(Oid) * Max(nparams, 1)));
        for (int i = 0; i < nparams; i++) {
            Oid infunc;
            getTypeInputInfo(types[i], &infunc, &ioparam[i]);
            fmgr_info_cxt(infunc, &input[i], TopMemoryContext);
        }
    });
    if (entry.input != nullptr) {
        pfree(entry.input);
        pfree(entry.ioparam);
    }
    entry.plan = plan;
    entry.input = input;
    entry.ioparam = ioparam;
    entry.revision = query.revision;
    return entry;
}

void QueryRunner::State::execute(const CachedQuery &query, PlanEntry &entry,
                                 const CallRequest &request, CallResult &result)
{
    // Arguments in the order of the query's parameters; everything the guarded block touches is
    // plain data allocated here, outside it.
    const int nparams = static_cast<int>(query.param_names.size());
    const char **texts = static_cast<const char **>(
        MemoryContextAllocZero(request_context, sizeof(char *) * Max(nparams, 1)));
    int *lengths = static_cast<int *>(
        MemoryContextAllocZero(request_context, sizeof(int) * Max(nparams, 1)));
    for (int i = 0; i < nparams; i++)
        for (const CallParam &p : request.params)
            if (p.name == query.param_names[i] && !p.is_null) {
                texts[i] = p.value.c_str();
                lengths[i] = static_cast<int>(p.value.size());
            }

    Datum *values =
        static_cast<Datum *>(MemoryContextAllocZero(request_context, sizeof(Datum) * Max(nparams, 1)));
    char *nulls = static_cast<char *>(MemoryContextAllocZero(request_context, nparams + 1));
    StringInfo body = nullptr;
    bool has_more = false;
    const long page = request.page;
    const long page_size = request.page_size;
    MemoryContext request_cxt = request_context;
    SPIPlanPtr plan = entry.plan;
    FmgrInfo *input = entry.input;
    Oid *ioparam = entry.ioparam;
    volatile int *failing = &failing_param;
    Phase *phase_ptr = &phase;

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
            values[i] = InputFunctionCall(&input[i], const_cast<char *>(texts[i]), ioparam[i], -1);
        }
        *failing = -1;
        *phase_ptr = Phase::executing;

        // One row more than the page tells whether another page follows.
        const uint64 want = static_cast<uint64>(page_size) + 1;
        Portal portal = nullptr;
        if (page == 1) {
            int rc = SPI_execute_plan(plan, values, nulls, false, static_cast<long>(want));
            if (rc < 0)
                elog(ERROR, "querygate: execution failed: %s", SPI_result_code_string(rc));
        } else {
            portal = SPI_cursor_open(nullptr, plan, values, nulls, false);
            SPI_cursor_move(portal, true, (page - 1) * page_size);
            SPI_cursor_fetch(portal, true, static_cast<long>(want));
        }
        MemoryContext spi_cxt = MemoryContextSwitchTo(request_cxt);
        body = makeStringInfo();
        MemoryContextSwitchTo(spi_cxt);
        if (SPI_tuptable == nullptr) {
            appendStringInfoString(body, "[]");
        } else {
            uint64 n = SPI_processed;
            has_more = n > static_cast<uint64>(page_size);
            uint64 rows = has_more ? static_cast<uint64>(page_size) : n;
            RowWriter *writer = row_writer_create(SPI_tuptable->tupdesc);
            row_writer_append_array(writer, body, SPI_tuptable->vals, 0, rows);
        }
        if (portal != nullptr)
            SPI_cursor_close(portal);
    });
    result.body.assign(body->data, body->len);
    result.has_more = has_more;
}

void QueryRunner::State::abort_call()
{
    pg::guard([] {
        // What PostgresMain does after an error: no timeout or cancel may outlive the call.
        disable_all_timeouts(false);
        QueryCancelPending = false;
        AbortCurrentTransaction();
        pgstat_report_activity(STATE_IDLE, nullptr);
    });
    // The aborted transaction rolled back any search_path set in it.
    search_path_known = false;
}

ApiError QueryRunner::State::error_for(const pg::PgError &e, const CallRequest &request,
                                       const CachedQuery *query)
{
    const char *name = query ? query->name.c_str() : request.query.c_str();
    if (phase == Phase::binding && query != nullptr && failing_param >= 0 &&
        failing_param < static_cast<int>(query->param_names.size())) {
        // The problem is the caller's own value, so its description goes back to the caller.
        ApiError err = api_errors::make(400, "param_invalid", "invalid parameter value");
        std::string problem = e.message.size() > 200 ? e.message.substr(0, 200) + "..." : e.message;
        err.errors.emplace_back(query->param_names[failing_param], problem);
        err.message = "invalid value for parameter " + query->param_names[failing_param];
        return err;
    }
    const std::string state = e.sqlstate();
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && settings::statement_timeout > 0 &&
        TimestampDifferenceExceeds(started_at, GetCurrentTimestamp(),
                                   settings::statement_timeout - 1))
        return api_errors::make(504, "query_timeout", "the query ran longer than the time limit");
    // The database's own message goes to the server log only: it may name tables, columns or
    // values the caller may not see.
    ereport(LOG, (errmsg("querygate: call of \"%s\" failed (request %s): %s", name,
                         request.request_id.c_str(), e.message.c_str()),
                  e.detail.empty() ? 0 : errdetail_internal("%s", e.detail.c_str()),
                  errhidestmt(true)));
    if (e.sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
        return api_errors::make(403, "read_only", "this call may not write to the database");
    if (e.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
        return api_errors::make(403, "permission_denied",
                                "the policy's role lacks a privilege this query needs");
    return api_errors::make(500, "query_failed", "the query failed");
}

CallResult QueryRunner::run(const CallRequest &request)
{
    State &s = *state_;
    CallResult result;
    const CachedQuery *query = nullptr;
    s.phase = Phase::setup;
    s.failing_param = -1;

    // Only the hash of a secret is ever compared or stored.
    unsigned char digest[secrets::sha256_length];
    char hash_hex[2 * secrets::sha256_length + 1];
    secrets::sha256(request.secret.data(), request.secret.size(), digest);
    secrets::to_hex(digest, sizeof(digest), hash_hex);

    try {
        pg::guard([] {
            SetCurrentStatementStartTimestamp();
            StartTransactionCommand();
            XactReadOnly = true;
            PushActiveSnapshot(GetTransactionSnapshot());
        });
        if (!s.cache.refresh()) {
            result.error = api_errors::make(503, "unavailable",
                                            "querygate is not installed in this database");
        } else if (const CachedKey *key = s.cache.find_key(hash_hex);
                   key == nullptr || request.secret.empty() ||
                   (key->expires_at_unix_us != 0 && key->expires_at_unix_us <= unix_now_us())) {
            result.error = api_errors::unauthorized();
        } else if (const CachedPolicy *policy = s.cache.find_policy(key->policy);
                   policy == nullptr) {
            result.error = api_errors::unauthorized();
        } else if (query = s.cache.find_query(request.query);
                   query == nullptr || policy->queries.count(query->name) == 0) {
            query = nullptr;
            result.error = api_errors::query_not_found();
        } else if (ApiError bad = check_params(*query, request.params); bad.set()) {
            result.error = std::move(bad);
        } else {
            Oid role = policy->run_as;
            bool role_exists = false;
            pg::guard([&] { role_exists = SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)); });
            if (!role_exists) {
                ereport(LOG, (errmsg("querygate: policy \"%s\" runs as a role that no longer exists",
                                     policy->name.c_str())));
                result.error = api_errors::make(500, "query_failed", "the query failed");
            } else {
                const char *activity = query->sql.c_str();
                const int timeout = settings::statement_timeout;
                s.ensure_search_path(query->search_path);
                Oid *saved_user = &s.saved_user;
                int *saved_context = &s.saved_sec_context;
                pg::guard([&] {
                    pgstat_report_activity(STATE_RUNNING, activity);
                    GetUserIdAndSecContext(saved_user, saved_context);
                    // LOCAL_USERID_CHANGE also forbids SET ROLE inside the call.
                    SetUserIdAndSecContext(role, *saved_context | SECURITY_LOCAL_USERID_CHANGE);
                    if (SPI_connect() != SPI_OK_CONNECT)
                        elog(ERROR, "querygate: SPI_connect failed");
                    if (timeout > 0)
                        enable_timeout_after(STATEMENT_TIMEOUT, timeout);
                });
                s.started_at = GetCurrentTimestamp();
                PlanEntry &entry = s.plan_for(*query, role);
                s.execute(*query, entry, request, result);
                pg::guard([&] {
                    if (timeout > 0)
                        disable_timeout(STATEMENT_TIMEOUT, false);
                    SPI_finish();
                    SetUserIdAndSecContext(*saved_user, *saved_context);
                });
            }
        }
        // Every path that got here ends its transaction with a commit (a read-only one costs
        // nothing); errors took the abort path below instead.
        pg::guard([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
    } catch (const pg::PgError &e) {
        result.error = s.error_for(e, request, query);
        result.body.clear();
        s.abort_call();
    }
    MemoryContextReset(s.request_context);
    return result;
}
