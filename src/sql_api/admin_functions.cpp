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

namespace {

// One version of a saved query, as save_query was given it: its SQL, description and parameter
// rules (JSON text; nullptr for none), the saver's search_path made explicit, and the saver: the
// author of the SQL, whoever publishes it.
struct QueryVersion {
    const char *name;
    const char *sql;
    const char *description;
    const char *rules;
    const char *search_path;
    Oid saved_by;
};

// Analyzes the version's SQL under its search_path, as the caller (every later analysis and every
// call resolve names through exactly this path), and checks its parameter rules now, not at the
// first call: unknown rules, rules for parameters the SQL does not have, defaults that break
// their own rules, patterns that do not compile. Outside a catalog session.
void analyze_version(const QueryVersion &v, AnalyzedQuery *analyzed)
{
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", v.search_path, PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    analyze_saved_query(v.sql, analyzed);
    if (v.rules != nullptr) {
        ParamPatterns patterns;
        if (char *problem = validate_param_rules(v.rules, analyzed, &patterns))
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
            if (patterns.examples[i] != nullptr &&
                !pattern_matches_whole(patterns.patterns[i], patterns.examples[i]))
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("invalid parameter rules: the example of parameter \"%s\" "
                                       "does not match its pattern",
                                       patterns.names[i])));
        }
    }
    AtEOXact_GUC(true, nest);
}

// Serializes the saves and publications of one query's name (its row may not exist yet to be
// locked: a first save, or drafts only) until the transaction ends. Inside a catalog session.
void lock_query_name(const char *name)
{
    exec1("SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('querygate.saved_query'), "
          "pg_catalog.hashtext($1))",
          name);
    // The row too, so that a grant of it that has not committed yet is waited for (grant_query
    // locks it) and then seen.
    exec1("SELECT 1 FROM querygate.saved_query WHERE name = $1 FOR UPDATE", name);
}

// Keeps the version as the query's next one (published now, or a draft); returns its number.
// Inside a catalog session.
int add_version(const CatalogSession *session, const QueryVersion &v, bool published)
{
    const char *args[7] = {v.name,
                           v.sql,
                           v.description,
                           v.rules,
                           v.search_path,
                           psprintf("%u", session->saved_userid),
                           published ? "true" : "false"};
    catalog_exec_texts(
        "INSERT INTO querygate.saved_query_version (name, version, sql, description, "
        "param_rules, search_path, saved_by, published_at) "
        "SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4::pg_catalog.jsonb, $5, "
        "$6::pg_catalog.oid::pg_catalog.regrole, "
        "CASE WHEN $7::pg_catalog.bool THEN pg_catalog.now() END "
        "FROM querygate.saved_query_version WHERE name = $1 RETURNING version",
        7, args);
    return pg_strtoint32(catalog_result_text(0, 1, CurrentMemoryContext));
}

// Makes the version the one callers get: saved_query holds it under a new revision (which tells
// every worker to plan it again), saved by the version's saver (a draft's author, not whoever
// publishes it), and every policy granted the query must still accept it as it now reads, as if
// its saver granted it (the saver must be able to act as each of their roles): a draft is not a
// way to have a member publish SQL its author could not grant.
// Inside a catalog session, with lock_query_name held.
void publish_version(const CatalogSession *session, const QueryVersion &v, int version,
                     const AnalyzedQuery &analyzed)
{
    catalog_require_query_actor(session, v.name);
    Oid types[10] = {TEXTOID, TEXTOID,    TEXTOID, TEXTARRAYOID, REGTYPEARRAYOID,
                     TEXTOID, REGROLEOID, TEXTOID, TEXTOID,      INT4OID};
    Datum values[10] = {CStringGetTextDatum(v.name),
                        CStringGetTextDatum(v.sql),
                        CStringGetTextDatum(analyzed.prepared_sql),
                        text_array(analyzed.param_names, analyzed.nparams),
                        oid_array(analyzed.param_types, analyzed.nparams, REGTYPEOID),
                        CStringGetTextDatum(v.search_path),
                        ObjectIdGetDatum(v.saved_by),
                        v.description ? CStringGetTextDatum(v.description) : (Datum)0,
                        v.rules ? CStringGetTextDatum(v.rules) : (Datum)0,
                        Int32GetDatum(version)};
    bool nulls[10] = {false,
                      false,
                      false,
                      false,
                      false,
                      false,
                      false,
                      v.description == nullptr,
                      v.rules == nullptr,
                      false};
    catalog_exec("INSERT INTO querygate.saved_query AS q (name, sql, prepared_sql, param_names, "
                 "param_types, search_path, saved_by, description, param_rules, version, "
                 "revision) "
                 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::pg_catalog.jsonb, $10, "
                 "nextval('querygate.saved_query_revision')) "
                 "ON CONFLICT (name) DO UPDATE SET sql = excluded.sql, "
                 "prepared_sql = excluded.prepared_sql, param_names = excluded.param_names, "
                 "param_types = excluded.param_types, search_path = excluded.search_path, "
                 "saved_by = excluded.saved_by, description = excluded.description, "
                 "param_rules = excluded.param_rules, version = excluded.version, "
                 "revision = excluded.revision, updated_at = now()",
                 10, types, values, nulls);
    const char *args[2] = {v.name, psprintf("%d", version)};
    // A draft's first publication (a version saved as published already has its time).
    catalog_exec_texts("UPDATE querygate.saved_query_version SET published_at = pg_catalog.now() "
                       "WHERE name = $1 AND version = $2::pg_catalog.int4 AND published_at IS NULL",
                       2, args);
    GrantedPolicies granted;
    catalog_granted_policies(v.name, &granted);
    for (int i = 0; i < granted.n; i++)
        check_grant(granted.names[i], v.name);
}

// publish_query and rollback_query: version `version` of the query (the newest when null) made
// the one callers get, analyzed again under the search_path it was saved with (the tables it
// names may have changed since).
Datum publish_saved_version(FunctionCallInfo fcinfo, bool version_required)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the query name");
    if (version_required && PG_ARGISNULL(1))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("the version must not be null")));
    const MemoryContext here = CurrentMemoryContext;
    CatalogSession session;
    catalog_session_begin(&session);
    lock_query_name(name);
    const char *args[2] = {name, PG_ARGISNULL(1) ? nullptr : psprintf("%d", PG_GETARG_INT32(1))};
    if (catalog_exec_texts("SELECT version, sql, description, param_rules::pg_catalog.text, "
                           "search_path, saved_by::pg_catalog.oid "
                           "FROM querygate.saved_query_version WHERE name = $1 "
                           "AND ($2::pg_catalog.int4 IS NULL OR version = $2::pg_catalog.int4) "
                           "ORDER BY version DESC LIMIT 1",
                           2, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        args[1] ? errmsg("saved query \"%s\" has no version %s", name, args[1])
                                : errmsg("saved query \"%s\" does not exist", name)));
    const int version = pg_strtoint32(catalog_result_text(0, 1, here));
    QueryVersion v = {name,
                      catalog_result_text(0, 2, here),
                      catalog_result_text(0, 3, here),
                      catalog_result_text(0, 4, here),
                      catalog_result_text(0, 5, here),
                      static_cast<Oid>(strtoul(catalog_result_text(0, 6, here), nullptr, 10))};
    catalog_session_end(&session);

    AnalyzedQuery analyzed;
    analyze_version(v, &analyzed);
    catalog_session_begin(&session);
    publish_version(&session, v, version, analyzed);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

} // namespace

QUERYGATE_SQL_FUNCTION(querygate_save_query)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the query name");
    check_object_name("query", name);
    QueryVersion v = {name, sql_text_arg(fcinfo, 1, "the query's SQL"),
                      PG_ARGISNULL(2) ? nullptr : text_to_cstring(PG_GETARG_TEXT_PP(2)), nullptr,
                      // The saver's search_path made explicit (saved_query_analysis.hpp).
                      explicit_search_path(), GetUserId()};
    if (!PG_ARGISNULL(3)) {
        Jsonb *rules = PG_GETARG_JSONB_P(3);
        v.rules = JsonbToCString(nullptr, &rules->root, VARSIZE(rules));
    }
    // A draft is kept and checked like any version, but callers go on getting the published one
    // until publish_query.
    const bool publish = PG_ARGISNULL(4) || PG_GETARG_BOOL(4);
    AnalyzedQuery analyzed;
    analyze_version(v, &analyzed);

    const MemoryContext here = CurrentMemoryContext;
    CatalogSession session;
    catalog_session_begin(&session);
    lock_query_name(name);
    // A description not given is the one the query had (its newest version's): re-saving the SQL
    // does not wipe it. An empty one clears it.
    if (v.description == nullptr) {
        const char *args[1] = {name};
        if (catalog_exec_texts("SELECT description FROM querygate.saved_query_version "
                               "WHERE name = $1 ORDER BY version DESC LIMIT 1",
                               1, args) > 0)
            v.description = catalog_result_text(0, 1, here);
    } else if (v.description[0] == '\0') {
        v.description = nullptr;
    }
    const int version = add_version(&session, v, publish);
    if (publish)
        publish_version(&session, v, version, analyzed);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}

QUERYGATE_SQL_FUNCTION(querygate_publish_query)
{
    return publish_saved_version(fcinfo, false);
}

QUERYGATE_SQL_FUNCTION(querygate_rollback_query)
{
    return publish_saved_version(fcinfo, true);
}

QUERYGATE_SQL_FUNCTION(querygate_drop_query)
{
    require_admin();
    char *name = sql_text_arg(fcinfo, 0, "the query name");
    CatalogSession session;
    catalog_session_begin(&session);
    lock_query_name(name);
    catalog_require_query_actor(&session, name);
    const uint64 live = exec1("DELETE FROM querygate.saved_query WHERE name = $1", name);
    const uint64 versions =
        exec1("DELETE FROM querygate.saved_query_version WHERE name = $1", name);
    if (live == 0 && versions == 0)
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
