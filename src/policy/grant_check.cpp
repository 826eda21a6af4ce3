// What a grant of a saved query to a policy requires: see grant_check.hpp.
#include "policy/grant_check.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/resowner.h"
}

#include "sql_api/catalog_access.hpp"
#include "policy/query_analysis.hpp"
#include "policy/role_rules.hpp"

namespace {

// The policy's and the query's columns a grant depends on, copied out of SPI's tuples.
struct GrantInputs {
    Oid run_as;
    bool allow_superuser;
    PolicyRow rules;
    char *sql;
    int nparams;
    Oid *param_types;
    char *search_path;
    Oid saved_by;
};

void read_inputs(const char *policy, const char *query, GrantInputs *in)
{
    const char *args[2] = {policy, query};
    if (catalog_exec_texts("SELECT p.run_as, p.allow_superuser, q.prepared_sql, "
                           "q.param_types, q.search_path, q.saved_by "
                           "FROM querygate.policy p, querygate.saved_query q "
                           "WHERE p.name = $1 AND q.name = $2",
                           2, args) == 0)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT),
                 errmsg("policy \"%s\" or saved query \"%s\" does not exist", policy, query)));
    HeapTuple tuple = SPI_tuptable->vals[0];
    TupleDesc desc = SPI_tuptable->tupdesc;
    bool isnull;
    in->run_as = DatumGetObjectId(SPI_getbinval(tuple, desc, 1, &isnull));
    in->allow_superuser = DatumGetBool(SPI_getbinval(tuple, desc, 2, &isnull));
    in->sql = SPI_getvalue(tuple, desc, 3);
    Datum *types;
    deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tuple, desc, 4, &isnull)), REGTYPEOID,
                      sizeof(Oid), true, TYPALIGN_INT, &types, nullptr, &in->nparams);
    in->param_types = static_cast<Oid *>(palloc(sizeof(Oid) * Max(in->nparams, 1)));
    for (int i = 0; i < in->nparams; i++)
        in->param_types[i] = DatumGetObjectId(types[i]);
    in->search_path = SPI_getvalue(tuple, desc, 5);
    in->saved_by = DatumGetObjectId(SPI_getbinval(tuple, desc, 6, &isnull));
    catalog_read_policy_row(policy, CurrentMemoryContext, &in->rules);
}

// The statement as the policy's role sees it: with the query's stored search_path.
void analyze_as_policy(const GrantInputs &in, QueryAnalysis *analysis)
{
    QueryContext context;
    query_context_begin(&context, in.run_as, in.search_path);
    analyze_query(in.sql, in.nparams, in.param_types, in.saved_by, analysis);
    query_context_end(&context);
}

// What the policy's masks would refuse at every call (mask_unresolvable, mask_expression,
// mask_hash_input, mask_predicate) is refused now, with the same words a caller would get; and,
// for a grant, what its table allow-list would. mask_hint: the way out when a mask is the change
// (nullptr: a grant's).
void refuse_as_policy_would(const char *policy, const char *query, const QueryAnalysis &analysis,
                            const PolicyRow &rules, const char *mask_hint)
{
    PlainDecision decision;
    memset(&decision, 0, sizeof(decision));
    decide_plain(&analysis, &rules, &decision);
    if (decision.failed)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s", decision.message)));
    if (strncmp(decision.code, "mask_", 5) == 0)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("policy \"%s\" would refuse saved query \"%s\": %s", policy, query,
                        decision.message),
                 errdetail("Every call would be refused with %s.", decision.code),
                 errhint("%s", mask_hint != nullptr ? mask_hint
                               : strcmp(decision.code, error_code::mask_hash_input.code) == 0
                                   ? "Return a hashed column by itself, with nothing merged into "
                                     "it, or call querygate.set_policy(policy, mask_predicates => "
                                     "'allow') if the policy trusts its queries."
                                   : "Return masked columns unchanged, or call "
                                     "querygate.set_policy(policy, mask_predicates => 'allow') "
                                     "if the policy trusts its queries.")));
    // The table allow-list: every relation the statement names, and no function that can read any
    // table by itself.
    if (strcmp(decision.code, error_code::table_not_allowed.code) == 0 && mask_hint == nullptr)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("policy \"%s\" would refuse saved query \"%s\": %s", policy, query,
                               decision.message),
                        errhint("Add the table with querygate.allow_tables, read the data through "
                                "a view and allow the view, or grant another query.")));
}

} // namespace

void check_grant(const char *policy, const char *query)
{
    GrantInputs in;
    read_inputs(policy, query, &in);
    char *role = role_name_or_oid(in.run_as);

    if (!in.allow_superuser && role_is_privileged(in.run_as))
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("policy \"%s\" runs as \"%s\", a privileged role", policy, role),
                 errdetail("%s", privileged_role_detail),
                 errhint("Give the policy a role that holds only the privileges its queries "
                         "need, or call querygate.set_policy(policy, allow_superuser => true) "
                         "if that is really meant.")));
    if (!may_act_as(in.saved_by, in.run_as))
        ereport(
            ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
             errmsg("saved query \"%s\" was saved by role \"%s\", which cannot act as \"%s\"",
                    query, role_name_or_oid(in.saved_by), role),
             errdetail("Policy \"%s\" runs its queries as \"%s\", so a query granted to it must "
                       "have been written by a superuser or a member of that role.",
                       policy, role),
             errhint("Save the query again as such a role (querygate.save_query), then grant "
                     "it.")));

    QueryAnalysis analysis;
    analyze_as_policy(in, &analysis);
    if (analysis.untrusted != nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("saved query \"%s\" runs code that policy \"%s\"'s role does not trust",
                        query, policy),
                 errdetail("The %s.", analysis.untrusted),
                 errhint("Code may run as a policy's role only if its author could act as "
                         "that role: make the owner a member of \"%s\" (GRANT \"%s\" TO "
                         "owner), make the function SECURITY DEFINER, or save the query with "
                         "a search_path of schemas only such roles can create in.",
                         role, role)));
    // A privilege the role lacks is only warned of: it may be granted next (a GRANT is outside
    // the catalog, in any order), and can be revoked after any check. The API's description
    // leaves the query out meanwhile (call/api_describer.cpp).
    if (analysis.missing_privilege != nullptr)
        ereport(WARNING,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("policy \"%s\" runs as \"%s\", which lacks %s: every call of saved "
                        "query \"%s\" is refused (403 permission_denied) until it is granted",
                        policy, role, analysis.missing_privilege, query),
                 errhint("GRANT the privilege to \"%s\"; querygate.explain('%s', '%s') shows "
                         "what the query needs.",
                         role, policy, query)));
    refuse_as_policy_would(policy, query, analysis, in.rules, nullptr);
}

bool masks_allow_now(const char *policy, const char *query)
{
    // A query that cannot be analyzed now (its table dropped since its grant, say) is not
    // callable either: its error is rolled back with a subtransaction of its own, and the answer
    // is no.
    const MemoryContext caller_context = CurrentMemoryContext;
    const ResourceOwner caller_owner = CurrentResourceOwner;
    volatile bool allowed = false;
    BeginInternalSubTransaction(nullptr);
    PG_TRY();
    {
        GrantInputs in;
        read_inputs(policy, query, &in);
        QueryAnalysis analysis;
        analyze_as_policy(in, &analysis);
        PlainDecision decision;
        memset(&decision, 0, sizeof(decision));
        decide_plain(&analysis, &in.rules, &decision);
        allowed = !decision.failed && strncmp(decision.code, "mask_", 5) != 0;
        ReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(caller_context);
        CurrentResourceOwner = caller_owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_context);
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(caller_context);
        CurrentResourceOwner = caller_owner;
        allowed = false;
    }
    PG_END_TRY();
    return allowed;
}

void check_masks_allow(const char *policy, const char *query)
{
    GrantInputs in;
    read_inputs(policy, query, &in);
    QueryAnalysis analysis;
    analyze_as_policy(in, &analysis);
    refuse_as_policy_would(policy, query, analysis, in.rules,
                           "Revoke the query or change it first, or call querygate.mask(..., "
                           "force => true) to mask anyway: its calls are then refused.");
}
