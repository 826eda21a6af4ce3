// The governance SQL API: allow_tables, mask, unmask, grant_writes, grant_events, revoke_events,
// grant_adhoc, revoke_adhoc, set_policy, set_jwks, isolate_tenant; and the parameter-rule checks
// save_query makes. Each function that changes a policy requires a caller who may act as the
// policy's role (catalog_require_policy_actor). PostgreSQL-style code (no C++ objects with
// destructors alive across a PostgreSQL call); the pure C++ validators are called through small
// functions that return a palloc'd message.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"
extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"
}

#include "sql_api/catalog_access.hpp"
#include "sql_api/governance.hpp"
#include "policy/grant_check.hpp"
#include "auth/jwt.hpp"
#include "rules/mask_rules.hpp"
#include "rules/param_rules.hpp"
#include "policy/query_analysis.hpp"

namespace {

// Pure C++ validators, wrapped so that no C++ object outlives the call: each returns nullptr or a
// palloc'd problem.
char *normalise_pattern(const char *text, char **normalised)
{
    masking::Pattern p;
    std::string error;
    if (!masking::parse_pattern(text, p, error))
        return pstrdup(error.c_str());
    *normalised = pstrdup(masking::pattern_text(p).c_str());
    return nullptr;
}

bool valid_hash_scope(const char *scope)
{
    size_t n = 0;
    for (; scope[n] != '\0'; n++) {
        const char c = scope[n];
        const bool letter = c >= 'a' && c <= 'z';
        if (!(letter || (n > 0 && ((c >= '0' && c <= '9') || c == '_'))))
            return false;
    }
    return n >= 1 && n <= 63;
}

char *normalise_action(const char *text, const char **name)
{
    masking::Action a;
    if (!masking::parse_action(text, a))
        return pstrdup("action must be hash, mask, mask_email, partial(lead,trail) with counts of "
                       "0 to 31, null or drop");
    *name = pstrdup(masking::action_name(a).c_str());
    return nullptr;
}

char *check_jwks(const char *json)
{
    jwt::Verifier verifier;
    jwt::Config config;
    config.jwks_json = json;
    std::string error;
    if (!verifier.configure(config, error))
        return pstrdup(error.c_str());
    return nullptr;
}

} // namespace

char *validate_param_rules(const char *json, const AnalyzedQuery *query, ParamPatterns *patterns)
{
    std::vector<param_rules::Rule> rules;
    std::string error;
    if (!param_rules::parse(json, rules, error))
        return pstrdup(error.c_str());
    for (const param_rules::Rule &r : rules) {
        bool found = false;
        for (int i = 0; i < query->nparams; i++)
            found = found || r.name == query->param_names[i];
        if (!found)
            return psprintf("parameter \"%s\" has rules but is not used in the query",
                            r.name.c_str());
    }
    patterns->n = 0;
    patterns->names = static_cast<char **>(palloc0(sizeof(char *) * (rules.size() + 1)));
    patterns->patterns = static_cast<char **>(palloc0(sizeof(char *) * (rules.size() + 1)));
    patterns->defaults = static_cast<char **>(palloc0(sizeof(char *) * (rules.size() + 1)));
    patterns->examples = static_cast<char **>(palloc0(sizeof(char *) * (rules.size() + 1)));
    for (const param_rules::Rule &r : rules) {
        if (r.pattern.empty())
            continue;
        patterns->names[patterns->n] = pstrdup(r.name.c_str());
        patterns->patterns[patterns->n] = pstrdup(r.pattern.c_str());
        patterns->defaults[patterns->n] =
            r.has_default && !r.default_is_null ? pstrdup(r.default_text.c_str()) : nullptr;
        patterns->examples[patterns->n] = r.has_example ? pstrdup(r.example_text.c_str()) : nullptr;
        patterns->n++;
    }
    return nullptr;
}

bool pattern_matches_whole(const char *pattern, const char *value)
{
    // PostgreSQL's own regular expressions (the ~ operator), anchored to the whole value.
    char *anchored = psprintf("^(?:%s)$", pattern);
    return DatumGetBool(DirectFunctionCall2Coll(
        textregexeq, C_COLLATION_OID, CStringGetTextDatum(value), CStringGetTextDatum(anchored)));
}

QUERYGATE_SQL_FUNCTION(querygate_allow_tables)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    // Stored as regclass[], which a dump writes by name.
    Oid types[2] = {TEXTOID, REGCLASSARRAYOID};
    Datum values[2] = {CStringGetTextDatum(policy), (Datum)0};
    bool nulls[2] = {false, PG_ARGISNULL(1)};
    if (!PG_ARGISNULL(1)) {
        ArrayType *tables = PG_GETARG_ARRAYTYPE_P(1);
        if (ARR_NDIM(tables) > 1 || array_contains_nulls(tables))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("tables must be a one-dimensional array without nulls")));
        values[1] = PointerGetDatum(tables);
    }
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, policy);
    // Ad-hoc SQL is fenced by the list (grant_adhoc): it is not removed from under it.
    if (catalog_exec("UPDATE querygate.policy SET allowed_tables = $2 WHERE name = $1 "
                     "AND ($2 IS NOT NULL OR NOT adhoc)",
                     2, types, values, nulls) == 0)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("policy \"%s\" has ad-hoc SQL, which needs a table allow-list", policy),
                 errdetail("A caller with ad-hoc SQL writes its own queries, so the policy's "
                           "allow-list is what fences the tables they reach."),
                 errhint("Turn ad-hoc SQL off first with querygate.revoke_adhoc.")));
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_mask)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    char *pattern = sql_text_arg(fcinfo, 1, "the column pattern");
    char *action = sql_text_arg(fcinfo, 2, "the action");
    char *normalised = nullptr;
    const char *action_name = nullptr;
    char *problem = normalise_pattern(pattern, &normalised);
    if (problem == nullptr)
        problem = normalise_action(action, &action_name);
    if (problem != nullptr)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid mask rule \"%s\": %s", pattern, problem)));
    const bool force = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
    // As grant_query refuses a query the masks would refuse, a mask that would make a granted
    // query refused is refused (the rule just written goes with the error), unless forced. Only
    // the queries the masks left callable before count: one refused already is not this mask's.
    const MemoryContext here = CurrentMemoryContext;
    char **callable = nullptr;
    uint64 ncallable = 0;
    CatalogSession session;
    if (!force) {
        catalog_session_begin(&session);
        // The analyses run as the policy's role: only someone who may act as it gets that far.
        catalog_require_policy_actor(&session, policy);
        const char *policy_arg[1] = {policy};
        const uint64 n = catalog_exec_texts(
            "SELECT query FROM querygate.query_grant WHERE policy = $1 ORDER BY query", 1,
            policy_arg);
        // In the caller's context: the session's is gone once it ends.
        char **granted =
            static_cast<char **>(MemoryContextAllocZero(here, sizeof(char *) * (n + 1)));
        for (uint64 i = 0; i < n; i++)
            granted[i] = catalog_result_text(i, 1, here);
        callable = static_cast<char **>(MemoryContextAllocZero(here, sizeof(char *) * (n + 1)));
        for (uint64 i = 0; i < n; i++)
            if (masks_allow_now(policy, granted[i]))
                callable[ncallable++] = granted[i];
        catalog_session_end(&session);
    }
    const char *args[3] = {policy, normalised, action_name};
    catalog_change_policy("INSERT INTO querygate.mask_rule (policy, pattern, action) "
                          "VALUES ($1, $2, $3) ON CONFLICT (policy, pattern) "
                          "DO UPDATE SET action = excluded.action",
                          3, args);
    if (ncallable > 0) {
        catalog_session_begin(&session);
        for (uint64 i = 0; i < ncallable; i++)
            check_masks_allow(policy, callable[i]);
        catalog_session_end(&session);
    }
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_unmask)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    char *pattern = sql_text_arg(fcinfo, 1, "the column pattern");
    char *normalised = nullptr;
    if (char *problem = normalise_pattern(pattern, &normalised))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid column pattern \"%s\": %s", pattern, problem)));
    const char *args[2] = {policy, normalised};
    if (catalog_change_policy("DELETE FROM querygate.mask_rule WHERE policy = $1 AND pattern = $2",
                              2, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("policy \"%s\" has no mask rule \"%s\"", policy, normalised)));
    PG_RETURN_VOID();
}

// The write operations named in ops (NULL: none), as the catalog stores them: by name, once each,
// in write_ops::all's order, whatever order and case were given, joined by commas ("" for none).
// ERROR for NULL or an unknown name.
static char *normalised_write_ops(FunctionCallInfo fcinfo, int arg)
{
    StringInfoData ops;
    initStringInfo(&ops);
    if (PG_ARGISNULL(arg))
        return ops.data;
    Datum *items;
    bool *item_nulls;
    int n;
    deconstruct_array(PG_GETARG_ARRAYTYPE_P(arg), TEXTOID, -1, false, TYPALIGN_INT, &items,
                      &item_nulls, &n);
    int bits = 0;
    for (int i = 0; i < n; i++) {
        if (item_nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("write operations must not be null")));
        char *op = TextDatumGetCString(items[i]);
        int bit = write_ops::from_name(op);
        if (bit == 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("unknown write operation \"%s\"", op),
                            errhint("The operations are insert, update, delete and merge.")));
        bits |= bit;
    }
    for (const write_ops::Op &op : write_ops::all)
        if (bits & op.bit)
            appendStringInfo(&ops, "%s%s", ops.len ? "," : "", op.name);
    return ops.data;
}

QUERYGATE_SQL_FUNCTION(querygate_grant_writes)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    char *ops = normalised_write_ops(fcinfo, 1);
    const char *args[2] = {policy, ops[0] != '\0' ? ops : nullptr};
    catalog_change_policy(
        "UPDATE querygate.policy SET write_ops = pg_catalog.string_to_array($2, ',') "
        "WHERE name = $1",
        2, args);
    PG_RETURN_VOID();
}

// Whether a policy's callers may send their own SQL. The caller then writes the query, so what
// a saved query's author decided (which tables, which writes) is the policy's alone to fence: it
// must have a table allow-list, and the SQL may write only what the policy may (grant_writes) and
// this grant names too. The row is locked while judged, so that a concurrent allow_tables(policy,
// NULL) waits and then finds ad-hoc SQL on (and the table's CHECK backs both).
QUERYGATE_SQL_FUNCTION(querygate_grant_adhoc)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    char *ops = normalised_write_ops(fcinfo, 1);
    // The caller's search_path (or the one given) made explicit before the catalog session
    // replaces both user and path, as save_query stores a saved query's.
    char *path = PG_ARGISNULL(2) ? explicit_search_path()
                                 : explicit_search_path_of(text_to_cstring(PG_GETARG_TEXT_PP(2)));
    const MemoryContext here = CurrentMemoryContext;
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, policy);
    const char *args[3] = {policy, ops, path};
    // Whether it has an allow-list, and the operations asked for that the policy may not use.
    if (catalog_exec_texts("SELECT allowed_tables IS NULL, (SELECT pg_catalog.string_agg(o, ', ' "
                           "ORDER BY n) FROM pg_catalog.unnest(pg_catalog.string_to_array($2, "
                           "',')) WITH ORDINALITY AS u(o, n) WHERE o <> ALL (coalesce(write_ops, "
                           "'{}'))) FROM querygate.policy WHERE name = $1 FOR UPDATE",
                           2, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("policy \"%s\" does not exist", policy)));
    char *no_list = catalog_result_text(0, 1, here);
    char *not_granted = catalog_result_text(0, 2, here);
    if (strcmp(no_list, "t") == 0)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("policy \"%s\" has no table allow-list", policy),
                 errdetail("A caller with ad-hoc SQL writes its own queries, so the policy's "
                           "allow-list is what fences the tables they reach."),
                 errhint("Give the policy one with querygate.allow_tables first.")));
    if (not_granted != nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("policy \"%s\" may not %s", policy, not_granted),
                        errdetail("Ad-hoc SQL may write only what the policy's saved queries "
                                  "may."),
                        errhint("Grant the policy the operation with querygate.grant_writes "
                                "first, or leave it out.")));
    catalog_exec_texts("UPDATE querygate.policy SET adhoc = true, "
                       "adhoc_write_ops = pg_catalog.string_to_array($2, ','), "
                       "adhoc_search_path = $3 WHERE name = $1",
                       3, args);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_revoke_adhoc)
{
    require_admin();
    const char *args[1] = {sql_text_arg(fcinfo, 0, "the policy name")};
    catalog_change_policy("UPDATE querygate.policy SET adhoc = false, adhoc_write_ops = NULL, "
                          "adhoc_search_path = NULL WHERE name = $1",
                          1, args);
    PG_RETURN_VOID();
}

// Whether a policy's callers may open GET /events. The events say only that a granted query ran
// and how it ended, never what it was given or returned; still a watcher learns when others call,
// so it is granted by name, never by default.
// scope: whose calls a watcher sees, 'own' or 'policy' (the policy's callers in the watcher's
// tenant); kept as it was when revoking.
static void set_events(FunctionCallInfo fcinfo, bool on, const char *scope)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    if (on && strcmp(scope, "own") != 0 && strcmp(scope, "policy") != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("the events scope must be 'own' or 'policy'")));
    const char *args[3] = {policy, on ? "true" : "false", scope};
    catalog_change_policy("UPDATE querygate.policy SET events = $2::pg_catalog.bool, "
                          "events_scope = CASE WHEN $2::pg_catalog.bool THEN $3 "
                          "ELSE events_scope END WHERE name = $1",
                          3, args);
}

QUERYGATE_SQL_FUNCTION(querygate_grant_events)
{
    set_events(fcinfo, true, sql_text_arg(fcinfo, 1, "the events scope"));
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_revoke_events)
{
    set_events(fcinfo, false, "own");
    PG_RETURN_VOID();
}

// How long the policy's calls may run; querygate.statement_timeout still bounds every call
// (the runner arms the shorter), so a policy can only shorten it. Zero removes it.
static void set_statement_timeout(FunctionCallInfo fcinfo, const char *policy)
{
    const Interval *timeout = PG_GETARG_INTERVAL_P(4);
    const double usecs = static_cast<double>(timeout->time) +
                         static_cast<double>(timeout->day) * USECS_PER_DAY +
                         static_cast<double>(timeout->month) * DAYS_PER_MONTH * USECS_PER_DAY;
    if (usecs < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("statement_timeout must not be negative"),
                        errhint("Use '0' to remove the policy's own time limit.")));
    const char *args[2] = {policy, usecs == 0 ? nullptr
                                              : DatumGetCString(DirectFunctionCall1(
                                                    interval_out, PG_GETARG_DATUM(4)))};
    catalog_exec_texts("UPDATE querygate.policy SET statement_timeout = "
                       "$2::pg_catalog.interval WHERE name = $1",
                       2, args);
}

// Whose hashes the policy's can be compared with: '' its own again; a name, every policy's
// that names it (joining hashes across them is then the point). Whoever may act as the role
// may choose, as they may change its masks.
static void set_hash_scope(FunctionCallInfo fcinfo, const char *policy)
{
    char *scope = text_to_cstring(PG_GETARG_TEXT_PP(6));
    const char *args[2] = {policy, scope[0] != '\0' ? scope : nullptr};
    if (scope[0] != '\0' && !valid_hash_scope(scope))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid hash scope \"%s\"", scope),
                        errhint("A scope is a lower-case letter, then up to 62 lower-case "
                                "letters, digits or underscores; '' is the policy's own.")));
    catalog_exec_texts("UPDATE querygate.policy SET hash_scope = $2 WHERE name = $1", 2, args);
}

// Which issuers' tokens may name the policy: whoever may act as its role may let a token
// issuer do so too, as they may give out its keys. Empty strings name no issuer.
static void set_jwt_issuers(FunctionCallInfo fcinfo, const char *policy)
{
    Oid output;
    bool varlena;
    getTypeOutputInfo(TEXTARRAYOID, &output, &varlena);
    const char *args[2] = {policy, OidOutputFunctionCall(output, PG_GETARG_DATUM(5))};
    if (catalog_exec_texts("UPDATE querygate.policy SET jwt_issuers = ARRAY(SELECT DISTINCT i "
                           "FROM pg_catalog.unnest($2::pg_catalog.text[]) i ORDER BY i) "
                           "WHERE name = $1 AND pg_catalog.array_position($2::pg_catalog.text[], "
                           "NULL) IS NULL AND pg_catalog.array_position($2::pg_catalog.text[], "
                           "'') IS NULL",
                           2, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("jwt_issuers must not hold NULL or an empty string"),
                        errhint("Name each issuer as its tokens' iss claim does.")));
}

QUERYGATE_SQL_FUNCTION(querygate_set_policy)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, policy);
    if (!PG_ARGISNULL(1)) {
        char *mode = text_to_cstring(PG_GETARG_TEXT_PP(1));
        if (strcmp(mode, "refuse") != 0 && strcmp(mode, "allow") != 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("mask_predicates must be 'refuse' or 'allow'")));
        const char *args[2] = {policy, mode};
        catalog_exec_texts("UPDATE querygate.policy SET mask_predicates = $2 WHERE name = $1", 2,
                           args);
    }
    // Whether the policy's role may be a superuser or a BYPASSRLS role: only someone who may act
    // as that role gets here (catalog_require_policy_actor), so only such a person can say yes.
    if (!PG_ARGISNULL(2)) {
        const char *args[2] = {policy, PG_GETARG_BOOL(2) ? "true" : "false"};
        catalog_exec_texts("UPDATE querygate.policy SET allow_superuser = $2::pg_catalog.bool "
                           "WHERE name = $1",
                           2, args);
    }
    // Whether the run history keeps the parameters of its callers' calls, masked by the policy's
    // rules (whoever may change those rules may see as much through explain).
    if (!PG_ARGISNULL(3)) {
        const char *args[2] = {policy, PG_GETARG_BOOL(3) ? "true" : "false"};
        catalog_exec_texts("UPDATE querygate.policy SET history_params = $2::pg_catalog.bool "
                           "WHERE name = $1",
                           2, args);
    }
    if (!PG_ARGISNULL(4))
        set_statement_timeout(fcinfo, policy);
    if (!PG_ARGISNULL(6))
        set_hash_scope(fcinfo, policy);
    if (!PG_ARGISNULL(5))
        set_jwt_issuers(fcinfo, policy);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_set_jwks)
{
    require_admin();
    // A token's claim picks its policy, so whoever chooses the keys that sign tokens can act as
    // every policy's role, present and future: that is a superuser's power (so is
    // querygate.jwt_secret, a superuser-only setting).
    if (!superuser())
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("permission denied to set the JWKS document"),
                 errdetail("A token's claim chooses its policy, so the JWKS document decides "
                           "who may act as every policy's role."),
                 errhint("Only a superuser may call querygate.set_jwks.")));
    CatalogSession session;
    if (PG_ARGISNULL(0)) {
        catalog_session_begin(&session);
        catalog_exec("DELETE FROM querygate.jwks", 0, nullptr, nullptr, nullptr);
        catalog_session_end(&session);
        PG_RETURN_VOID();
    }
    Jsonb *jwks = PG_GETARG_JSONB_P(0);
    char *text = JsonbToCString(nullptr, &jwks->root, VARSIZE(jwks));
    if (char *problem = check_jwks(text))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid JWKS document: %s", problem)));
    catalog_session_begin(&session);
    Oid types[1] = {JSONBOID};
    Datum values[1] = {PG_GETARG_DATUM(0)};
    catalog_exec("INSERT INTO querygate.jwks (keys) VALUES ($1) "
                 "ON CONFLICT (id) DO UPDATE SET keys = excluded.keys",
                 1, types, values, nullptr);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

// Whether `column` is the column Citus distributes `table` by (false without Citus). Inside SPI.
static bool citus_distribution_column(Oid table, const char *column)
{
    if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
        return false;
    Oid types[2] = {OIDOID, TEXTOID};
    Datum values[2] = {ObjectIdGetDatum(table), CStringGetTextDatum(column)};
    if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid "
                              "OPERATOR(pg_catalog.=) $1 AND partmethod OPERATOR(pg_catalog.<>) "
                              "'n' AND pg_catalog.column_to_column_name(logicalrelid, partkey) "
                              "OPERATOR(pg_catalog.=) $2",
                              2, types, values, nullptr, true, 1) != SPI_OK_SELECT)
        elog(ERROR, "querygate: could not read Citus's pg_dist_partition");
    return SPI_processed > 0;
}

QUERYGATE_SQL_FUNCTION(querygate_isolate_tenant)
{
    require_admin();
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("the table and the column must not be null")));
    Oid table = PG_GETARG_OID(0);
    char *column = NameStr(*PG_GETARG_NAME(1));
    AttrNumber attnum = get_attnum(table, column);
    if (attnum == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of table \"%s\" does not exist", column,
                               get_rel_name(table))));
    char *qualified = quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)),
                                                 get_rel_name(table));
    char *col = const_cast<char *>(quote_identifier(column));
    char *coltype = format_type_be(get_atttype(table, attnum));
    // The caller's own rights (they must own the table); only the search_path is fixed, so the
    // policy's expressions resolve to pg_catalog.
    char *tenant =
        psprintf("NULLIF(pg_catalog.current_setting('querygate.tenant', true), '')::%s", coltype);
    const char *statements[] = {
        psprintf("ALTER TABLE %s ENABLE ROW LEVEL SECURITY", qualified),
        psprintf("ALTER TABLE %s FORCE ROW LEVEL SECURITY", qualified),
        psprintf("DROP POLICY IF EXISTS querygate_tenant ON %s", qualified),
        psprintf("CREATE POLICY querygate_tenant ON %s USING (%s OPERATOR(pg_catalog.=) %s) "
                 "WITH CHECK (%s OPERATOR(pg_catalog.=) %s)",
                 qualified, col, tenant, col, tenant),
        psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s", qualified, col, tenant),
    };
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "querygate: SPI_connect failed");
    // Citus refuses any change to the column a table is distributed by, its default included
    // ("cannot execute ALTER TABLE command involving partition column"). Tenants by the
    // distribution column are how Citus shards them, so there the default is left out: a row is
    // written with its tenant named, and the policy's WITH CHECK still refuses another tenant's.
    const bool distribution_column = citus_distribution_column(table, column);
    for (const char *sql : statements) {
        if (distribution_column && sql == statements[4]) {
            ereport(NOTICE, (errmsg("\"%s\" is the column Citus distributes %s by: no default "
                                    "is set, and rows must name their tenant",
                                    column, qualified)));
            continue;
        }
        if (SPI_execute(sql, false, 0) < 0)
            elog(ERROR, "querygate: could not run \"%s\"", sql);
    }
    SPI_finish();
    AtEOXact_GUC(true, nest);
    PG_RETURN_VOID();
}
