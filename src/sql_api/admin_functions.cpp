// The SQL administration API: save_query, drop_query, create_policy, drop_policy, grant_query,
// revoke_query, create_key, revoke_key. PostgreSQL-style code (no C++ objects with destructors), so
// ereport may jump out of any of it. Every function checks its caller (an administrator; and for
// anything that changes a policy, one who may act as its role), then writes the catalog in a
// catalog session (catalog_access.hpp); the catalog's triggers tell the HTTP workers at commit.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"
extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include "sql_api/catalog_access.hpp"
#include "sql_api/governance.hpp"
#include "sql_api/limit_functions.hpp"
#include "policy/grant_check.hpp"
#include "policy/role_rules.hpp"
#include "policy/saved_query_analysis.hpp"
#include "auth/secrets.hpp"

namespace {

uint64 exec1(const char *sql, const char *arg)
{
    const char *args[1] = {arg};
    return catalog_exec_texts(sql, 1, args);
}

uint64 exec2(const char *sql, const char *a, const char *b)
{
    const char *args[2] = {a, b};
    return catalog_exec_texts(sql, 2, args);
}

Datum text_array(char **items, int n)
{
    Datum *datums = static_cast<Datum *>(palloc(sizeof(Datum) * Max(n, 1)));
    for (int i = 0; i < n; i++)
        datums[i] = CStringGetTextDatum(items[i]);
    return PointerGetDatum(construct_array(datums, n, TEXTOID, -1, false, TYPALIGN_INT));
}

Datum oid_array(Oid *items, int n, Oid element_type)
{
    Datum *datums = static_cast<Datum *>(palloc(sizeof(Datum) * Max(n, 1)));
    for (int i = 0; i < n; i++)
        datums[i] = ObjectIdGetDatum(items[i]);
    return PointerGetDatum(
        construct_array(datums, n, element_type, sizeof(Oid), true, TYPALIGN_INT));
}

} // namespace

QUERYGATE_SQL_FUNCTION(querygate_save_query)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the query name");
    check_object_name("query", name);
    char *sql = sql_text_arg(fcinfo, 1, "the query's SQL");

    // The saver's search_path made explicit (saved_query_analysis.hpp), and in force while the
    // statement is analyzed: every later analysis and every call resolve names through exactly
    // the path this one did.
    char *search_path = explicit_search_path();
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    AnalyzedQuery analyzed;
    analyze_saved_query(sql, &analyzed);

    // Parameter rules are checked now, not at the first call: unknown rules, rules for parameters
    // the SQL does not have, defaults that break their own rules, patterns that do not compile.
    if (!PG_ARGISNULL(3)) {
        Jsonb *rules = PG_GETARG_JSONB_P(3);
        char *json = JsonbToCString(nullptr, &rules->root, VARSIZE(rules));
        ParamPatterns patterns;
        if (char *problem = validate_param_rules(json, &analyzed, &patterns))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("invalid parameter rules: %s", problem)));
        for (int i = 0; i < patterns.n; i++) {
            bool ok = pattern_matches_whole(patterns.patterns[i],
                                            patterns.defaults[i] ? patterns.defaults[i] : "");
            if (patterns.defaults[i] != nullptr && !ok)
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("invalid parameter rules: the default of parameter \"%s\" "
                                       "does not match its pattern",
                                       patterns.names[i])));
        }
    }
    AtEOXact_GUC(true, nest);

    CatalogSession session;
    catalog_session_begin(&session);
    // The query's row is locked first, so a grant of it that has not committed yet is waited for
    // (grant_query locks it too) and then seen below.
    exec1("SELECT 1 FROM querygate.saved_query WHERE name = $1 FOR UPDATE", name);
    // Re-saving a granted query changes what its policies run: the saver must be able to act as
    // each of their roles, and each must still accept the query as it now reads.
    catalog_require_query_actor(&session, name);
    Oid types[9] = {TEXTOID, TEXTOID,    TEXTOID, TEXTARRAYOID, REGTYPEARRAYOID,
                    TEXTOID, REGROLEOID, TEXTOID, JSONBOID};
    Datum values[9] = {CStringGetTextDatum(name),
                       CStringGetTextDatum(sql),
                       CStringGetTextDatum(analyzed.prepared_sql),
                       text_array(analyzed.param_names, analyzed.nparams),
                       oid_array(analyzed.param_types, analyzed.nparams, REGTYPEOID),
                       CStringGetTextDatum(search_path),
                       ObjectIdGetDatum(session.saved_userid),
                       PG_ARGISNULL(2) ? (Datum)0 : PG_GETARG_DATUM(2),
                       PG_ARGISNULL(3) ? (Datum)0 : PG_GETARG_DATUM(3)};
    bool nulls[9] = {false, false, false,           false,          false,
                     false, false, PG_ARGISNULL(2), PG_ARGISNULL(3)};
    catalog_exec("INSERT INTO querygate.saved_query AS q (name, sql, prepared_sql, param_names, "
                 "param_types, search_path, saved_by, description, param_rules, revision) "
                 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                 "nextval('querygate.saved_query_revision')) "
                 "ON CONFLICT (name) DO UPDATE SET sql = excluded.sql, "
                 "prepared_sql = excluded.prepared_sql, param_names = excluded.param_names, "
                 "param_types = excluded.param_types, search_path = excluded.search_path, "
                 "saved_by = excluded.saved_by, description = excluded.description, "
                 "param_rules = excluded.param_rules, revision = excluded.revision, "
                 "updated_at = now()",
                 9, types, values, nulls);
    GrantedPolicies granted;
    catalog_granted_policies(name, &granted);
    for (int i = 0; i < granted.n; i++)
        check_grant(granted.names[i], name);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_drop_query)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the query name");
    CatalogSession session;
    catalog_session_begin(&session);
    exec1("SELECT 1 FROM querygate.saved_query WHERE name = $1 FOR UPDATE", name);
    catalog_require_query_actor(&session, name);
    if (exec1("DELETE FROM querygate.saved_query WHERE name = $1", name) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("saved query \"%s\" does not exist", name)));
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_create_policy)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the policy name");
    check_object_name("policy", name);
    Oid run_as = PG_ARGISNULL(1) ? GetUserId() : PG_GETARG_OID(1);
    bool allow_superuser = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
    // The same rule as SET ROLE: nobody hands out more than they could use themselves.
    if (!may_act_as(GetUserId(), run_as))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied to create a policy that runs as \"%s\"",
                               role_name_or_oid(run_as)),
                        errdetail("Only a superuser or a member of a role may create a policy that "
                                  "runs as it.")));
    // A superuser policy turns every saved query into a superuser session: never by default.
    if (role_is_privileged(run_as) && !allow_superuser)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("policy \"%s\" would run as \"%s\", a privileged role%s", name,
                        role_name_or_oid(run_as),
                        PG_ARGISNULL(1) ? " (without run_as, a policy runs as its creator)" : ""),
                 errdetail("%s", privileged_role_detail),
                 errhint("Pass run_as => a role that holds only the privileges its queries need, "
                         "or allow_superuser => true if that is really meant.")));

    CatalogSession session;
    catalog_session_begin(&session);
    if (exec1("SELECT 1 FROM querygate.policy WHERE name = $1", name) > 0)
        ereport(ERROR,
                (errcode(ERRCODE_DUPLICATE_OBJECT), errmsg("policy \"%s\" already exists", name)));
    Oid types[3] = {TEXTOID, REGROLEOID, BOOLOID};
    Datum values[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(run_as),
                       BoolGetDatum(allow_superuser)};
    catalog_exec("INSERT INTO querygate.policy (name, run_as, allow_superuser) VALUES ($1, $2, $3)",
                 3, types, values, nullptr);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_drop_policy)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the policy name");
    bool cascade = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, name);
    uint64 active =
        exec1("SELECT 1 FROM querygate.api_key WHERE policy = $1 AND revoked_at IS NULL", name);
    if (active > 0 && !cascade)
        ereport(ERROR,
                (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
                 errmsg("policy \"%s\" is used by %llu active key(s)", name,
                        (unsigned long long)active),
                 errhint("Revoke the keys first, or call drop_policy(name, cascade => true), "
                         "which revokes them.")));
    if (active > 0)
        exec1("UPDATE querygate.api_key SET revoked_at = now() "
              "WHERE policy = $1 AND revoked_at IS NULL",
              name);
    exec1("DELETE FROM querygate.policy WHERE name = $1", name);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

// grant_query and revoke_query: the same checks, then one statement on the grant.
void change_grant(FunctionCallInfo fcinfo, bool grant)
{
    require_admin();
    char *policy = sql_text_arg(fcinfo, 0, "the policy name");
    char *query = sql_text_arg(fcinfo, 1, "the query name");
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, policy);
    if (grant) {
        // Locks the query's row until commit: a save or drop of it waits for this grant, and this
        // grant waits for one already under way, then checks the query as it then reads.
        if (exec1("SELECT 1 FROM querygate.saved_query WHERE name = $1 FOR SHARE", query) == 0)
            catalog_require_query(query);
        check_grant(policy, query);
        exec2("INSERT INTO querygate.query_grant (policy, query) VALUES ($1, $2) "
              "ON CONFLICT DO NOTHING",
              policy, query);
    } else {
        catalog_require_query(query);
        exec2("DELETE FROM querygate.query_grant WHERE policy = $1 AND query = $2", policy, query);
    }
    catalog_session_end(&session);
}

QUERYGATE_SQL_FUNCTION(querygate_grant_query)
{
    change_grant(fcinfo, true);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_revoke_query)
{
    change_grant(fcinfo, false);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_create_key)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the key name");
    check_object_name("key", name);
    char *policy = sql_text_arg(fcinfo, 1, "the policy name");
    bool has_expiry = !PG_ARGISNULL(2);
    if (has_expiry && PG_GETARG_TIMESTAMPTZ(2) <= GetCurrentTimestamp())
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("expires_at must be in the future")));

    char secret[secrets::key_text_length + 1];
    if (!secrets::new_key(secret))
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("could not generate a key: the random source failed")));
    bytea *hash = static_cast<bytea *>(palloc(VARHDRSZ + secrets::sha256_length));
    SET_VARSIZE(hash, VARHDRSZ + secrets::sha256_length);
    secrets::sha256(secret, secrets::key_text_length,
                    reinterpret_cast<unsigned char *>(VARDATA(hash)));

    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, policy);
    if (exec1("SELECT 1 FROM querygate.api_key WHERE name = $1 AND revoked_at IS NULL", name) > 0)
        ereport(ERROR,
                (errcode(ERRCODE_DUPLICATE_OBJECT), errmsg("key \"%s\" already exists", name),
                 errhint("Revoke it first, or choose another name.")));
    Oid types[6] = {TEXTOID, TEXTOID, BYTEAOID, TIMESTAMPTZOID, CIDRARRAYOID, TEXTOID};
    Datum values[6] = {CStringGetTextDatum(name),
                       CStringGetTextDatum(policy),
                       PointerGetDatum(hash),
                       has_expiry ? PG_GETARG_DATUM(2) : (Datum)0,
                       PG_ARGISNULL(3) ? (Datum)0 : PG_GETARG_DATUM(3),
                       PG_ARGISNULL(4) ? (Datum)0 : PG_GETARG_DATUM(4)};
    bool nulls[6] = {false, false, false, !has_expiry, PG_ARGISNULL(3), PG_ARGISNULL(4)};
    catalog_exec("INSERT INTO querygate.api_key (name, policy, key_hash, expires_at, allowed_ips, "
                 "tenant) VALUES ($1, $2, $3, $4, $5, $6)",
                 6, types, values, nulls);
    // Limits of its own (limit_functions.hpp), when any is given.
    for (int i = 5; i < 10; i++)
        if (PG_NARGS() > i && !PG_ARGISNULL(i)) {
            apply_limits(fcinfo, 5, true, name);
            break;
        }
    catalog_session_end(&session);
    // The secret leaves the server once, as this result; it is never stored or logged.
    PG_RETURN_TEXT_P(cstring_to_text(secret));
}

QUERYGATE_SQL_FUNCTION(querygate_revoke_key)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the key name");
    CatalogSession session;
    catalog_session_begin(&session);
    if (exec1("SELECT policy FROM querygate.api_key WHERE name = $1 AND revoked_at IS NULL",
              name) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("key \"%s\" does not exist or is already revoked", name)));
    catalog_require_policy_actor(&session,
                                 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
    exec1("UPDATE querygate.api_key SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL",
          name);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

// n bytes from OpenSSL's CSPRNG: the mask secret, made by the install script.
QUERYGATE_SQL_FUNCTION(querygate_random_bytes)
{
    int32 n = PG_GETARG_INT32(0);
    if (n < 1 || n > 1024)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("random_bytes takes 1 to 1024 bytes")));
    bytea *out = static_cast<bytea *>(palloc(VARHDRSZ + n));
    SET_VARSIZE(out, VARHDRSZ + n);
    if (!secrets::random_bytes(reinterpret_cast<unsigned char *>(VARDATA(out)), n))
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("could not generate random bytes: the random source failed")));
    PG_RETURN_BYTEA_P(out);
}
