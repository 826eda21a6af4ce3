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

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include "call/call_hygiene.hpp"
#include "call/catalog_cache.hpp"
#include "worker/group_commit.hpp"
#include "sql_api/governance.hpp"
#include "call/json_output.hpp"
#include "auth/jwt.hpp"
#include "pg/pg_guard.hpp"
#include "policy/policy_decision.hpp"
#include "policy/query_analysis.hpp"
#include "policy/role_rules.hpp"
#include "auth/secrets.hpp"
#include "common/settings.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>
#include <utility>

namespace {

// Analyses go stale when a relation they depend on changes (a view is redefined, a column
// dropped): a relcache callback bumps this epoch for any relation in `analysis_depends`.
uint64_t analysis_epoch = 1;
std::vector<Oid> analysis_depends; // sorted

void on_relation_changed(Datum, Oid relid)
{
    if (relid == InvalidOid ||
        std::binary_search(analysis_depends.begin(), analysis_depends.end(), relid))
        analysis_epoch++;
}

// Whether a statement's code is trusted for a role (code_trust.hpp) depends on the owners of the
// functions and domains it calls, the schemas of its search_path, operators' commutators and
// negators, role attributes and memberships, and the database's owner. Changes to the functions
// and types that kept analyses looked at (their syscache hash values, sorted, one list per cache)
// make the analyses stale; other rows of those catalogs change often (every CREATE TABLE makes a
// pg_type row) and are ignored. This database's row alike: pg_database is shared, and autovacuum
// updates every database's row. Schemas, operators and roles change rarely: any change counts.
const int trust_object_caches[] = {PROCOID, TYPEOID, DATABASEOID};
std::vector<uint32> trust_hashes[3];
const int trust_global_caches[] = {NAMESPACEOID, OPEROID, AUTHOID, AUTHMEMMEMROLE};

void on_trust_object_changed(Datum slot, int, uint32 hashvalue)
{
    const std::vector<uint32> &hashes = trust_hashes[DatumGetInt32(slot)];
    if (hashvalue == 0 || std::binary_search(hashes.begin(), hashes.end(), hashvalue))
        analysis_epoch++;
}

void on_trust_global_changed(Datum, int, uint32)
{
    analysis_epoch++;
}

// The sorted union of a watch list and new entries.
template <typename T> void watch(std::vector<T> &list, const T *items, int n)
{
    list.insert(list.end(), items, items + n);
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
}

// A plan kept for one (query, run_as role): prepared as that role, with the query's search_path,
// with the analysis the policies' decisions are made from.
struct PlanEntry {
    int64_t revision = 0;
    SPIPlanPtr plan = nullptr;
    FmgrInfo *input = nullptr; // per parameter, in TopMemoryContext
    Oid *ioparam = nullptr;
    MemoryContext analysis_context = nullptr;
    QueryAnalysis *analysis = nullptr;
    uint64_t analysis_epoch = 0;
    // Per policy: the decision and the catalog generation it was made under.
    std::unordered_map<std::string, std::pair<uint64_t, PolicyDecision>> decisions;
};

// Who is calling, once authenticated.
struct Caller {
    const CachedPolicy *policy = nullptr;
    bool is_jwt = false;
    bool has_tenant = false;
    std::string tenant;
    jwt::Claims claims;
};

// A parameter's value after its rules: given, defaulted, from a claim, or NULL.
struct Resolved {
    bool is_null = true;
    std::string value;
};

int64_t unix_now_us()
{
    using namespace std::chrono;
    return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

enum class Phase { setup, binding, executing };

bool given(const std::vector<CallParam> &params, const std::string &name, const CallParam **found)
{
    for (const CallParam &p : params)
        if (p.name == name) {
            *found = &p;
            return true;
        }
    return false;
}

// Every problem with the call's parameters at once, checked only once the caller is authorized for
// the query (so parameter names are never revealed to anyone else): missing ones (param_required
// when nothing else is wrong), unknown, repeated, NUL-holding or rule-breaking ones
// (param_invalid), and from_claim parameters (param_from_claim, sign_in_required, claim_missing).
// matches_pattern(pattern, value) runs PostgreSQL's regex engine; it is only called for values
// that passed every other check.
template <typename PatternCheck>
ApiError resolve_params(const CachedQuery &query, const Caller &caller,
                        const std::vector<CallParam> &params, std::vector<Resolved> &out,
                        PatternCheck &&matches_pattern)
{
    std::vector<std::pair<std::string, std::string>> problems;
    bool only_missing = true;
    out.assign(query.param_names.size(), Resolved());
    for (size_t i = 0; i < query.param_names.size(); i++) {
        const std::string &name = query.param_names[i];
        const param_rules::Rule *rule = param_rules::find(query.rules, name);
        const CallParam *p = nullptr;
        bool sent = given(params, name, &p);
        if (rule != nullptr && !rule->from_claim.empty()) {
            if (sent) {
                ApiError e = api_errors::make(error_code::param_from_claim,
                                              "a parameter taken from the caller's token was sent");
                e.errors.emplace_back(name, "comes from the caller's token and cannot be sent");
                return e;
            }
            if (!caller.is_jwt)
                return api_errors::make(error_code::sign_in_required,
                                        "this query needs a signed-in caller (a bearer token)");
            auto claim = caller.claims.scalars.find(rule->from_claim);
            if (claim == caller.claims.scalars.end())
                return api_errors::make(error_code::claim_missing,
                                        "the caller's token lacks a claim this query needs");
            out[i].is_null = false;
            out[i].value = claim->second;
            continue;
        }
        if (sent) {
            out[i].is_null = p->is_null;
            out[i].value = p->value;
            if (p->value.find('\0') != std::string::npos) {
                problems.emplace_back(name, "must not contain a NUL byte");
                only_missing = false;
            } else if (rule != nullptr && !p->is_null) {
                std::string problem = param_rules::check(*rule, p->value);
                if (problem.empty() && !rule->pattern.empty() &&
                    !matches_pattern(rule->pattern, p->value))
                    problem = "does not match the required pattern";
                if (!problem.empty()) {
                    problems.emplace_back(name, problem);
                    only_missing = false;
                }
            }
        } else if (rule != nullptr && rule->has_default) {
            out[i].is_null = rule->default_is_null;
            out[i].value = rule->default_text;
        } else if (rule == nullptr || rule->required) {
            problems.emplace_back(name, "is required");
        }
    }
    for (size_t i = 0; i < params.size(); i++) {
        const CallParam &p = params[i];
        bool known = std::find(query.param_names.begin(), query.param_names.end(), p.name) !=
                     query.param_names.end();
        bool repeated = false;
        for (size_t j = 0; j < i; j++)
            repeated = repeated || params[j].name == p.name;
        if (!known || repeated) {
            problems.emplace_back(p.name, known ? "is given more than once"
                                                : "is not a parameter of this query");
            only_missing = false;
        }
    }
    if (problems.empty())
        return ApiError();
    ApiError err = only_missing ? api_errors::make(error_code::param_required, "missing parameters")
                                : api_errors::make(error_code::param_invalid, "invalid parameters");
    err.errors = std::move(problems);
    return err;
}

} // namespace

struct QueryRunner::State {
    CatalogCache cache;
    std::map<std::pair<std::string, Oid>, PlanEntry> plans;
    jwt::Verifier verifier;
    uint64_t verifier_generation = 0; // cache generation + settings reloads it was built for
    // The session's search_path as last set by a committed call; unknown after an abort.
    std::string search_path;
    bool search_path_known = false;
    MemoryContext request_context = nullptr;
    GroupCommit group_commit;

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

    ApiError authenticate(const CallRequest &request, const char *key_hash_hex, Caller &caller);
    void configure_verifier();
    bool matches_pattern(const std::string &pattern, const std::string &value);
    void ensure_search_path(const std::string &path);
    void begin_call(const CachedQuery &query, const Caller &caller, Oid role);
    void end_call();
    PlanEntry &plan_for(const CachedQuery &query, Oid role);
    const PolicyDecision &decision_for(PlanEntry &entry, const CachedPolicy &policy);
    void execute(const CachedQuery &query, PlanEntry &entry, const PolicyDecision &decision,
                 const std::vector<Resolved> &values, const CallRequest &request,
                 CallResult &result);
    ApiError error_for(const pg::PgError &e, const CallRequest &request, const CachedQuery *query);
    void abort_call();
};

QueryRunner::QueryRunner() : state_(new State()) {}
QueryRunner::~QueryRunner() = default;

void QueryRunner::start()
{
    state_->cache.register_invalidation();
    CacheRegisterRelcacheCallback(on_relation_changed, (Datum)0);
    for (int i = 0; i < 3; i++)
        CacheRegisterSyscacheCallback(trust_object_caches[i], on_trust_object_changed,
                                      Int32GetDatum(i));

    for (int cache : trust_global_caches)
        CacheRegisterSyscacheCallback(cache, on_trust_global_changed, (Datum)0);
    state_->request_context =
        AllocSetContextCreate(TopMemoryContext, "querygate request", ALLOCSET_DEFAULT_SIZES);
}

void QueryRunner::State::configure_verifier()
{
    uint64_t generation = cache.generation() * 1000003 + settings::generation;
    if (generation == verifier_generation)
        return;
    verifier_generation = generation;
    jwt::Config config;
    config.hs256_secret = settings::jwt_secret ? settings::jwt_secret : "";
    config.jwks_json = cache.jwks();
    config.issuer = settings::jwt_issuer ? settings::jwt_issuer : "";
    config.audience = settings::jwt_audience ? settings::jwt_audience : "";
    std::string error;
    if (verifier.configure(config, error))
        return;
    // A bad secret (too short) turns off HS256 only; a bad JWKS turns off RS256/ES256 only. Keys
    // are served either way, and what is refused is said in the log.
    ereport(WARNING, (errmsg("querygate: some bearer tokens are refused: %s", error.c_str())));
    jwt::Config without_secret = config;
    without_secret.hs256_secret.clear();
    jwt::Config without_jwks = config;
    without_jwks.jwks_json.clear();
    std::string ignored;
    if (!verifier.configure(without_secret, ignored) && !verifier.configure(without_jwks, ignored))
        verifier.configure(jwt::Config(), ignored);
}

ApiError QueryRunner::State::authenticate(const CallRequest &request, const char *key_hash_hex,
                                          Caller &caller)
{
    std::string policy_name;
    if (!request.secret.empty()) {
        const CachedKey *key = cache.find_key(key_hash_hex);
        if (key == nullptr ||
            (key->expires_at_unix_us != 0 && key->expires_at_unix_us <= unix_now_us()))
            return api_errors::unauthorized();
        // Outside the key's addresses, or an unknown address: the same answer as a bad key.
        if (!key->any_address &&
            (request.client_ip.empty() ||
             !client_address::contains_any(key->allowed_ips, request.client_ip)))
            return api_errors::unauthorized();
        policy_name = key->policy;
        caller.has_tenant = key->has_tenant;
        caller.tenant = key->tenant;
    } else if (!request.bearer_token.empty()) {
        configure_verifier();
        std::string reason;
        if (!verifier.verify(request.bearer_token, unix_now_us() / 1000000, caller.claims,
                             reason)) {
            ereport(DEBUG1, (errmsg("querygate: bearer token refused: %s", reason.c_str())));
            return api_errors::unauthorized();
        }
        auto policy = caller.claims.scalars.find(settings::jwt_policy_claim);
        if (policy == caller.claims.scalars.end())
            return api_errors::unauthorized();
        policy_name = policy->second;
        caller.is_jwt = true;
        auto tenant = caller.claims.scalars.find(settings::jwt_tenant_claim);
        caller.has_tenant = tenant != caller.claims.scalars.end();
        caller.tenant = caller.has_tenant ? tenant->second : "";
    } else {
        return api_errors::unauthorized();
    }
    caller.policy = cache.find_policy(policy_name);
    if (caller.policy == nullptr)
        return api_errors::unauthorized();
    return ApiError();
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

void QueryRunner::State::begin_call(const CachedQuery &query, const Caller &caller, Oid role)
{
    ensure_search_path(query.search_path);
    const char *activity = query.sql.c_str();
    const char *tenant = caller.has_tenant ? caller.tenant.c_str() : nullptr;
    const char *claims = caller.is_jwt ? caller.claims.json.c_str() : nullptr;
    const int timeout = settings::statement_timeout;
    Oid *user = &saved_user;
    int *context = &saved_sec_context;
    int *nest = &guc_nest_level;
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
        *nest = call_hygiene_begin();
        GetUserIdAndSecContext(user, context);
        // LOCAL_USERID_CHANGE also forbids SET ROLE inside the call.
        SetUserIdAndSecContext(role, *context | SECURITY_LOCAL_USERID_CHANGE);
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        if (timeout > 0)
            enable_timeout_after(STATEMENT_TIMEOUT, timeout);
    });
    started_at = GetCurrentTimestamp();
}

void QueryRunner::State::end_call()
{
    Oid user = saved_user;
    int context = saved_sec_context;
    int nest = guc_nest_level;
    pg::guard([&] {
        disable_timeout(STATEMENT_TIMEOUT, false);
        SPI_finish();
        call_hygiene_end(nest, XactReadOnly);
        SetUserIdAndSecContext(user, context);
    });
}

PlanEntry &QueryRunner::State::plan_for(const CachedQuery &query, Oid role)
{
    PlanEntry &entry = plans[std::make_pair(query.name, role)];
    // Lock what the kept analysis depends on before asking whether it is fresh: the lock takes in
    // any pending invalidation, and once held, no change to those relations can commit until the
    // call ends. Without it, a change committed between this check and execution would re-plan
    // the statement under an analysis (and masks) made for the old one. The executor takes the
    // same locks a moment later, so this costs a local lock-table lookup each.
    if (entry.analysis != nullptr) {
        const QueryAnalysis *kept = entry.analysis;
        pg::guard([&] {
            for (int i = 0; i < kept->ndepends; i++)
                LockRelationOid(kept->depends[i], AccessShareLock);
        });
    }
    const bool plan_ok = entry.plan != nullptr && entry.revision == query.revision;
    if (plan_ok && entry.analysis != nullptr && entry.analysis_epoch == analysis_epoch)
        return entry;

    const char *sql = query.prepared_sql.c_str();
    int nparams = static_cast<int>(query.param_types.size());
    Oid *types = const_cast<Oid *>(query.param_types.data());
    SPIPlanPtr old = plan_ok ? nullptr : entry.plan;
    SPIPlanPtr plan = plan_ok ? entry.plan : nullptr;
    FmgrInfo *input = plan_ok ? entry.input : nullptr;
    Oid *ioparam = plan_ok ? entry.ioparam : nullptr;
    if (entry.analysis_context == nullptr)
        entry.analysis_context =
            AllocSetContextCreate(TopMemoryContext, "querygate analysis", ALLOCSET_SMALL_SIZES);
    MemoryContext analysis_cxt = entry.analysis_context;
    QueryAnalysis *analysis = nullptr;
    uint32 *hashes[3] = {nullptr, nullptr, nullptr};
    int nhashes[3] = {0, 0, 0};
    const Oid saved_by = query.saved_by;
    uint64_t epoch = analysis_epoch;
    pg::guard([&] {
        if (old != nullptr)
            SPI_freeplan(old);
        if (plan == nullptr) {
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
        }
        // What the statement touches, writes and returns, as this role sees it: made once here,
        // so a call never walks the query tree.
        MemoryContextReset(analysis_cxt);
        MemoryContext old_cxt = MemoryContextSwitchTo(analysis_cxt);
        analysis = static_cast<QueryAnalysis *>(palloc0(sizeof(QueryAnalysis)));
        analyze_query(sql, nparams, types, saved_by, analysis);
        const TrustDepends &d = analysis->trust_depends;
        const int counts[3] = {d.nfunctions, d.ntypes, 1};
        const Oid *oids[3] = {d.functions, d.types, &MyDatabaseId};
        for (int c = 0; c < 3; c++) {
            hashes[c] = static_cast<uint32 *>(palloc(sizeof(uint32) * Max(counts[c], 1)));
            nhashes[c] = counts[c];
            for (int i = 0; i < counts[c]; i++)
                hashes[c][i] =
                    GetSysCacheHashValue1(trust_object_caches[c], ObjectIdGetDatum(oids[c][i]));
        }
        MemoryContextSwitchTo(old_cxt);
    });
    if (!plan_ok && entry.input != nullptr) {
        pfree(entry.input);
        pfree(entry.ioparam);
    }
    entry.plan = plan;
    entry.input = input;
    entry.ioparam = ioparam;
    entry.revision = query.revision;
    entry.analysis = analysis;
    entry.analysis_epoch = epoch;
    entry.decisions.clear();
    // Watch every relation, function, domain and schema any kept analysis depends on.
    watch(analysis_depends, analysis->depends, analysis->ndepends);
    for (int c = 0; c < 3; c++)
        watch(trust_hashes[c], hashes[c], nhashes[c]);
    return entry;
}

const PolicyDecision &QueryRunner::State::decision_for(PlanEntry &entry, const CachedPolicy &policy)
{
    auto &slot = entry.decisions[policy.name];
    if (slot.first != cache.generation() ||
        slot.second.column_actions.size() != static_cast<size_t>(entry.analysis->noutputs)) {
        slot.second = decide(*entry.analysis, policy.rules);
        slot.first = cache.generation();
    }
    return slot.second;
}

void QueryRunner::State::execute(const CachedQuery &query, PlanEntry &entry,
                                 const PolicyDecision &decision,
                                 const std::vector<Resolved> &values, const CallRequest &request,
                                 CallResult &result)
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
    const char *hash_key = cache.mask_secret().data();
    const int hash_key_len = static_cast<int>(cache.mask_secret().size());

    Datum *values_out = static_cast<Datum *>(
        MemoryContextAllocZero(request_context, sizeof(Datum) * Max(nparams, 1)));
    char *nulls = static_cast<char *>(MemoryContextAllocZero(request_context, nparams + 1));
    StringInfo body = nullptr;
    bool has_more = false;
    const bool writes = entry.analysis->write_ops != 0;
    const bool returns_rows = entry.analysis->returns_rows;
    const long page = writes ? 1 : request.page;
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
            values_out[i] =
                InputFunctionCall(&input[i], const_cast<char *>(texts[i]), ioparam[i], -1);
        }
        *failing = -1;
        *phase_ptr = Phase::executing;

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
            appendStringInfo(body, "{\"rows_affected\":" UINT64_FORMAT "}", SPI_processed);
        } else if (SPI_tuptable == nullptr) {
            appendStringInfoString(body, "[]");
        } else {
            uint64 n = SPI_processed;
            has_more = !writes && n > static_cast<uint64>(page_size);
            uint64 rows = has_more ? static_cast<uint64>(page_size) : n;
            RowWriter *writer = row_writer_create(SPI_tuptable->tupdesc, masked ? actions : nullptr,
                                                  nactions, hash_key, hash_key_len);
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
    bool aborted = false;
    try {
        pg::guard([] {
            // What PostgresMain does after an error: no timeout or cancel may outlive the call.
            disable_all_timeouts(false);
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
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && settings::statement_timeout > 0 &&
        TimestampDifferenceExceeds(started_at, GetCurrentTimestamp(),
                                   settings::statement_timeout - 1))
        return api_errors::make(error_code::query_timeout,
                                "the query ran longer than the time limit");
    // The database's own message goes to the server log only: it may name tables, columns or
    // values the caller may not see.
    ereport(LOG,
            (errmsg("querygate: call of \"%s\" failed (request %s): %s", name,
                    request.request_id.c_str(), e.message.c_str()),
             e.detail.empty() ? 0 : errdetail_internal("%s", e.detail.c_str()), errhidestmt(true)));
    if (e.sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
        return api_errors::make(error_code::read_only, "this call may not write to the database");
    if (e.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
        return api_errors::make(error_code::permission_denied,
                                "the policy's role lacks a privilege this query needs");
    return api_errors::make(error_code::query_failed, "the query failed");
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
        Caller caller;
        std::vector<Resolved> values;
        bool wrote = false;
        if (!s.cache.refresh()) {
            result.error = api_errors::make(error_code::unavailable,
                                            "querygate is not installed in this database");
        } else if (ApiError denied = s.authenticate(request, hash_hex, caller); denied.set()) {
            result.error = std::move(denied);
        } else if (query = s.cache.find_query(request.query);
                   query == nullptr || caller.policy->queries.count(query->name) == 0) {
            query = nullptr;
            result.error = api_errors::query_not_found();
        } else if (ApiError bad = resolve_params(*query, caller, request.params, values,
                                                 [&s](const std::string &p, const std::string &v) {
                                                     return s.matches_pattern(p, v);
                                                 });
                   bad.set()) {
            result.error = std::move(bad);
        } else {
            Oid role = caller.policy->run_as;
            RoleStatus status = ROLE_MISSING;
            pg::guard([&] { status = role_status(role); });
            if (status == ROLE_MISSING) {
                ereport(LOG,
                        (errmsg("querygate: policy \"%s\" runs as a role that no longer exists",
                                caller.policy->name.c_str())));
                result.error = api_errors::make(error_code::query_failed, "the query failed");
            } else if (status == ROLE_PRIVILEGED && !caller.policy->allow_superuser) {
                // Made privileged (role_rules.hpp) after the policy was created: refused until a
                // member of the role says so (set_policy(..., allow_superuser => true)).
                ereport(LOG, (errmsg("querygate: policy \"%s\" runs as a privileged role, which it "
                                     "does not allow",
                                     caller.policy->name.c_str())));
                result.error = api_errors::make(error_code::privileged_role,
                                                "the policy's role is privileged (a superuser or "
                                                "alike), which the policy does not allow");
            } else {
                s.begin_call(*query, caller, role);
                PlanEntry &entry = s.plan_for(*query, role);
                const PolicyDecision &decision = s.decision_for(entry, *caller.policy);
                // The server-wide switch outranks every policy: with it off, no call writes.
                if (entry.analysis->write_ops != 0 && !settings::allow_writes) {
                    result.error = api_errors::make(error_code::read_only,
                                                    "writes are turned off on this server");
                } else if (decision.refused()) {
                    result.error = api_errors::make(decision.refusal, decision.refusal_message);
                } else {
                    // A granted write (the decision checked the policy's operations) runs in a
                    // read-write transaction; everything else stays read-only.
                    if (entry.analysis->write_ops != 0) {
                        XactReadOnly = false;
                        wrote = true;
                    }
                    s.execute(*query, entry, decision, values, request, result);
                }
                s.end_call();
                // After end_call, which undoes every setting made during the call: this one
                // (synchronous_commit for this transaction) must last until the commit.
                if (wrote)
                    s.group_commit.defer_this_commit();
            }
        }
        // Every path that got here ends its transaction with a commit (a read-only one costs
        // nothing); errors took the abort path below instead.
        s.group_commit.committing();
        pg::guard([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
            call_hygiene_after();
            pgstat_report_activity(STATE_IDLE, nullptr);
        });
        s.group_commit.committed();
    } catch (const pg::PgError &e) {
        result.error = s.error_for(e, request, query);
        result.body.clear();
        s.abort_call();
    } catch (const std::exception &e) {
        // Not PostgreSQL's error (out of memory in C++, say): the transaction is still open and
        // must be ended here, or every later call on this worker would fail.
        ereport(LOG, (errmsg("querygate: call of \"%s\" failed (request %s): %s",
                             request.query.c_str(), request.request_id.c_str(), e.what())));
        result.error = api_errors::make(error_code::internal_error, "internal error");
        result.body.clear();
        s.abort_call();
    }
    MemoryContextReset(s.request_context);
    return result;
}

uint64_t QueryRunner::hold_until()
{
    return state_->group_commit.hold_until();
}

void QueryRunner::end_round()
{
    state_->group_commit.end_round();
}

uint64_t QueryRunner::flushed()
{
    return state_->group_commit.flushed();
}

void QueryRunner::set_connections(unsigned n)
{
    state_->group_commit.set_connections(n);
}
