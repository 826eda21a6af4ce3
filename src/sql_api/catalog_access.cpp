// Catalog sessions for the administration functions: see catalog_access.hpp.
#include "sql_api/catalog_access.hpp"

extern "C" {
#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
}

#include "common/chars.hpp"
#include "sql_api/audit.hpp"
#include "policy/role_rules.hpp"

#include <cstring>

void require_admin(void)
{
    if (superuser())
        return;
    Oid admin = get_role_oid("querygate_admin", true);
    if (OidIsValid(admin) && has_privs_of_role(GetUserId(), admin))
        return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("permission denied to administer querygate"),
                    errhint("Only superusers and members of querygate_admin may manage saved "
                            "queries, policies and keys.")));
}

void catalog_session_begin(CatalogSession *session)
{
    GetUserIdAndSecContext(&session->saved_userid, &session->saved_sec_context);
    audit::session_begin(session->saved_userid); // whom the catalog's audit rows are for
    SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, session->saved_sec_context |
                                                      SECURITY_LOCAL_USERID_CHANGE |
                                                      SECURITY_RESTRICTED_OPERATION);
    session->guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "querygate: SPI_connect failed");
}

void catalog_session_end(CatalogSession *session)
{
    SPI_finish();
    AtEOXact_GUC(true, session->guc_nest_level);
    SetUserIdAndSecContext(session->saved_userid, session->saved_sec_context);
    audit::session_end();
}

uint64 catalog_exec(const char *sql, int nargs, const Oid *types, const Datum *values,
                    const bool *nulls)
{
    char *nullflags = static_cast<char *>(palloc(nargs + 1));
    for (int i = 0; i < nargs; i++)
        nullflags[i] = (nulls && nulls[i]) ? 'n' : ' ';
    nullflags[nargs] = '\0';
    int rc = SPI_execute_with_args(sql, nargs, const_cast<Oid *>(types),
                                   const_cast<Datum *>(values), nullflags, false, 0);
    if (rc < 0)
        elog(ERROR, "querygate: catalog statement failed: %s", SPI_result_code_string(rc));
    return SPI_processed;
}

uint64 catalog_exec_texts(const char *sql, int nargs, const char *const *args)
{
    Oid *types = static_cast<Oid *>(palloc(sizeof(Oid) * Max(nargs, 1)));
    Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * Max(nargs, 1)));
    bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * Max(nargs, 1)));
    for (int i = 0; i < nargs; i++) {
        types[i] = TEXTOID;
        nulls[i] = args[i] == nullptr;
        values[i] = nulls[i] ? (Datum)0 : CStringGetTextDatum(args[i]);
    }
    return catalog_exec(sql, nargs, types, values, nulls);
}

namespace {

void require_actor(const CatalogSession *session, const char *policy, Oid run_as)
{
    if (may_act_as(session->saved_userid, run_as))
        return;
    char *role = role_name_or_oid(run_as);
    ereport(
        ERROR,
        (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
         errmsg("permission denied to change policy \"%s\"", policy),
         errdetail("Policy \"%s\" runs its queries as role \"%s\". Only a superuser or a member "
                   "of \"%s\" may change what the policy can run or reveal, or use it.",
                   policy, role, role),
         errhint("This is the rule of SET ROLE: nobody makes a policy do what they could not do "
                 "themselves.")));
}

} // namespace

Oid catalog_require_policy_actor(const CatalogSession *session, const char *policy)
{
    const char *args[1] = {policy};
    if (catalog_exec_texts("SELECT run_as FROM querygate.policy WHERE name = $1", 1, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("policy \"%s\" does not exist", policy)));
    bool isnull;
    Oid run_as =
        DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    require_actor(session, policy, run_as);
    return run_as;
}

uint64 catalog_change_policy(const char *sql, int nargs, const char *const *args)
{
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, args[0]);
    uint64 n = catalog_exec_texts(sql, nargs, args);
    catalog_session_end(&session);
    return n;
}

char *catalog_result_text(uint64 row, int col, MemoryContext into)
{
    MemoryContext spi = MemoryContextSwitchTo(into);
    char *text = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
    MemoryContextSwitchTo(spi);
    return text;
}

void catalog_read_policy_row(const char *policy, MemoryContext into, PolicyRow *row)
{
    const char *args[1] = {policy};
    memset(row, 0, sizeof(*row));
    if (catalog_exec_texts(psprintf("%s WHERE name = $1", policy_rows_select), 1, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("policy \"%s\" does not exist", policy)));
    MemoryContext spi = MemoryContextSwitchTo(into);
    for (int c = 0; c < POLICY_COLUMNS; c++)
        row->cells[c] = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c + 1);
    MemoryContextSwitchTo(spi);

    uint64 n = catalog_exec_texts(
        psprintf("%s WHERE policy = $1 ORDER BY pattern", mask_rows_select), 1, args);
    MemoryContextSwitchTo(into);
    const char **patterns = static_cast<const char **>(palloc0(sizeof(char *) * Max(n, 1)));
    const char **actions = static_cast<const char **>(palloc0(sizeof(char *) * Max(n, 1)));
    for (uint64 i = 0; i < n; i++) {
        patterns[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
        actions[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
    }
    row->nmasks = static_cast<int>(n);
    row->patterns = patterns;
    row->actions = actions;
    MemoryContextSwitchTo(spi);
}

void catalog_granted_policies(const char *query, GrantedPolicies *out)
{
    const char *args[1] = {query};
    uint64 n = catalog_exec_texts("SELECT p.name, p.run_as FROM querygate.query_grant g "
                                  "JOIN querygate.policy p ON p.name = g.policy "
                                  "WHERE g.query = $1 ORDER BY p.name",
                                  1, args);
    out->n = static_cast<int>(n);
    out->names = static_cast<char **>(palloc0(sizeof(char *) * Max(n, 1)));
    out->run_as = static_cast<Oid *>(palloc0(sizeof(Oid) * Max(n, 1)));
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        out->names[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
        out->run_as[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
    }
}

void catalog_require_query_actor(const CatalogSession *session, const char *query)
{
    GrantedPolicies granted;
    catalog_granted_policies(query, &granted);
    for (int i = 0; i < granted.n; i++)
        require_actor(session, granted.names[i], granted.run_as[i]);
}

void catalog_require_query(const char *query)
{
    const char *args[1] = {query};
    if (catalog_exec_texts("SELECT 1 FROM querygate.saved_query WHERE name = $1", 1, args) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("saved query \"%s\" does not exist", query)));
}

char *sql_text_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", what)));
    return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

void check_object_name(const char *kind, const char *name)
{
    size_t len = std::strlen(name);
    bool ok = len >= 1 && len <= 63 && chars::is_alnum(name[0]);
    for (size_t i = 0; ok && i < len; i++)
        ok = chars::is_alnum(name[i]) || name[i] == '_' || name[i] == '.' || name[i] == '-';
    if (!ok)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid %s name \"%s\"", kind, name),
                        errdetail("A %s name is 1 to 63 characters of letters, digits, \"_\", "
                                  "\".\" and \"-\", starting with a letter or digit.",
                                  kind)));
}

void query_context_begin(QueryContext *context, Oid run_as, const char *search_path)
{
    GetUserIdAndSecContext(&context->saved_userid, &context->saved_sec_context);
    context->guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    SetUserIdAndSecContext(run_as, context->saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
}

void query_context_end(QueryContext *context)
{
    SetUserIdAndSecContext(context->saved_userid, context->saved_sec_context);
    AtEOXact_GUC(true, context->guc_nest_level);
}
