// How the administration functions read and write querygate's catalog tables.
//
// The functions are SECURITY INVOKER (they must analyze a saved query with the caller's identity
// and search_path), while the catalog tables grant nothing to anyone. So each function first checks
// the caller (superuser, or a member of querygate_admin), then opens a catalog session: SPI as the
// bootstrap superuser with search_path fixed to pg_catalog, pg_temp, so that no operator or
// function a caller planted earlier in their search_path can run with those rights. An error
// anywhere rolls the user and the setting back with the transaction.
#pragma once

#include "pg/pg_headers.hpp"

#include "policy/policy_rows.hpp"

struct CatalogSession {
    Oid saved_userid;
    int saved_sec_context;
    int guc_nest_level;
};

// ERROR 42501 unless the current user is a superuser or has querygate_admin's privileges.
void require_admin(void);

void catalog_session_begin(CatalogSession *session);
void catalog_session_end(CatalogSession *session);

// Runs a catalog statement with text arguments (NULL for SQL NULL); returns SPI_processed.
// Must be called inside a catalog session.
uint64 catalog_exec(const char *sql, int nargs, const Oid *types, const Datum *values,
                    const bool *nulls);

// catalog_exec with text arguments (nullptr for SQL NULL).
uint64 catalog_exec_texts(const char *sql, int nargs, const char *const *args);

// The text of column `col` (from 1) of row `row` of the last catalog statement's result, copied
// into `into` (which outlives the session); nullptr for NULL.
char *catalog_result_text(uint64 row, int col, MemoryContext into);

// One change to a policy's rows, in a catalog session of its own, by a caller who may change the
// policy (catalog_require_policy_actor): args[0] is the policy's name, $1 in sql. Returns the
// number of rows processed.
uint64 catalog_change_policy(const char *sql, int nargs, const char *const *args);

// ERROR 42704 unless the saved query exists. Inside a catalog session.
void catalog_require_query(const char *query);

// Who may change a policy (its grants, keys, masks, allow-list, writes, settings) or analyze a
// query as its role: a superuser or a member of its run_as role, the rule of SET ROLE
// (role_rules.hpp), judged for the user who called the administration function. ERROR 42704
// unless the policy exists, 42501 unless the caller may act as its role. Returns the role.
// Inside a catalog session.
Oid catalog_require_policy_actor(const CatalogSession *session, const char *policy);

// The policy's row and its mask rules (policy_rows.hpp), as text copied into `into` (which outlives
// the session), for decide_plain. ERROR 42704 unless the policy exists. Inside a catalog session.
void catalog_read_policy_row(const char *policy, MemoryContext into, PolicyRow *row);

// The policies a saved query is granted to, by name, with their roles. Inside a catalog session;
// the arrays live in the session's SPI memory.
struct GrantedPolicies {
    int n;
    char **names;
    Oid *run_as;
};
void catalog_granted_policies(const char *query, GrantedPolicies *out);

// catalog_require_policy_actor for every policy the saved query is granted to.
void catalog_require_query_actor(const CatalogSession *session, const char *query);

// The text argument n of a SQL-callable function; ERROR 22004 when it is NULL ("<what> must not be
// null").
char *sql_text_arg(FunctionCallInfo fcinfo, int n, const char *what);

// ERROR 22023 unless name is 1-63 characters of [A-Za-z0-9_.-] starting with a letter or digit.
void check_object_name(const char *kind, const char *name);

// The context a saved query runs in on an HTTP call: the policy's run_as role and the query's
// stored search_path. analyze_query and explain run inside it so they see exactly what a call
// would.
struct QueryContext {
    Oid saved_userid;
    int saved_sec_context;
    int guc_nest_level;
};
void query_context_begin(QueryContext *context, Oid run_as, const char *search_path);
void query_context_end(QueryContext *context);
