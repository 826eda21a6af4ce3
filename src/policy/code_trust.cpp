// Whose code a saved query runs as its policy's role: see code_trust.hpp.
#include "policy/code_trust.hpp"
#include "policy/function_effects.hpp"
#include "policy/role_rules.hpp"
#include "policy/tree_walker.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/varlena.h"
}

namespace {

char *role_name(Oid role)
{
    return role == ACL_ID_PUBLIC ? pstrdup("PUBLIC") : role_name_or_oid(role);
}

void remember(Oid oid, int *n, Oid **items)
{
    for (int i = 0; i < *n; i++)
        if ((*items)[i] == oid)
            return;
    // Sizes 8, 16, 32...: reallocate when n reaches a power of two from 8 up.
    if (*n == 0)
        *items = static_cast<Oid *>(palloc(sizeof(Oid) * 8));
    else if (*n >= 8 && (*n & (*n - 1)) == 0)
        *items = static_cast<Oid *>(repalloc(*items, sizeof(Oid) * *n * 2));
    (*items)[(*n)++] = oid;
}

struct TrustContext {
    Oid role;
    char *reason;
    TrustDepends *depends;
};

// ------------------------------------------------------------------ the search_path

// True when a role that cannot act as the context's role may create objects in the schema; the
// first such role (ACL_ID_PUBLIC for PUBLIC) goes into *creator.
bool untrusted_creator(Oid nsp, Oid role, Oid *creator)
{
    HeapTuple tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
    if (!HeapTupleIsValid(tuple))
        return false; // resolved a moment ago; the caller judged the name
    Oid owner = reinterpret_cast<Form_pg_namespace>(GETSTRUCT(tuple))->nspowner;
    bool isnull;
    Datum acl_datum = SysCacheGetAttr(NAMESPACEOID, tuple, Anum_pg_namespace_nspacl, &isnull);
    bool found = false;
    if (!may_act_as(owner, role)) {
        *creator = owner;
        found = true;
    } else if (!isnull) {
        Acl *acl = DatumGetAclP(acl_datum);
        AclItem *items = ACL_DAT(acl);
        for (int i = 0; i < ACL_NUM(acl) && !found; i++) {
            if (!(ACLITEM_GET_PRIVS(items[i]) & ACL_CREATE))
                continue;
            Oid grantee = items[i].ai_grantee;
            if (grantee == ACL_ID_PUBLIC || !may_act_as(grantee, role)) {
                *creator = grantee;
                found = true;
            }
        }
    }
    ReleaseSysCache(tuple);
    return found;
}

// Every name of the active search_path, as written (PostgreSQL's own list leaves out schemas that
// do not exist or that the role may not use, and either may change later).
char *untrusted_schema(Oid role)
{
    List *names = NIL;
    if (!SplitIdentifierString(pstrdup(namespace_search_path), ',', &names))
        return pstrdup("the query's search_path cannot be parsed");
    ListCell *lc;
    foreach (lc, names) {
        const char *name = static_cast<const char *>(lfirst(lc));
        if (strcmp(name, "pg_catalog") == 0 || strcmp(name, "pg_temp") == 0)
            continue;
        if (strcmp(name, "$user") == 0)
            name = role_name_or_oid(role);
        Oid nsp = get_namespace_oid(name, true);
        if (!OidIsValid(nsp))
            return psprintf("schema \"%s\" of the query's search_path does not exist, so whoever "
                            "creates it would decide what the query's names mean",
                            name);
        if (isAnyTempNamespace(nsp))
            return psprintf("schema \"%s\" of the query's search_path is another session's "
                            "temporary schema",
                            name);
        Oid creator = InvalidOid;
        if (untrusted_creator(nsp, role, &creator))
            return psprintf(
                "role \"%s\" may create objects in schema \"%s\", which is on the query's "
                "search_path, and cannot act as \"%s\"",
                role_name(creator), name, role_name(role));
    }
    return nullptr;
}

// ------------------------------------------------------------------ types

// A domain (and the domains it is over, and the element domain of an array) owned by a role that
// cannot act as the context's role: its checks run as that role whenever a value is coerced to it.
bool untrusted_type(Oid type, TrustContext *context)
{
    while (type >= FirstNormalObjectId) {
        HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
        if (!HeapTupleIsValid(tuple))
            return false;
        Form_pg_type form = reinterpret_cast<Form_pg_type>(GETSTRUCT(tuple));
        const char typtype = form->typtype;
        const Oid owner = form->typowner;
        const Oid base = form->typbasetype;
        const Oid element = form->typelem;
        const bool is_array = IsTrueArrayType(form);
        ReleaseSysCache(tuple);
        if (is_array) {
            type = element;
            continue;
        }
        if (typtype != TYPTYPE_DOMAIN)
            return false;
        remember(type, &context->depends->ntypes, &context->depends->types);
        if (!may_act_as(owner, context->role)) {
            context->reason =
                psprintf("domain %s is owned by role \"%s\", which cannot act as \"%s\" (a "
                         "domain's checks run as the caller)",
                         format_type_be(type), role_name(owner), role_name(context->role));
            return true;
        }
        type = base;
    }
    return false;
}

bool untrusted_type_list(List *types, TrustContext *context)
{
    ListCell *lc;
    foreach (lc, types)
        if (untrusted_type(lfirst_oid(lc), context))
            return true;
    return false;
}

// ------------------------------------------------------------------ functions and operators

bool untrusted_function(Oid funcid, void *arg);

// The aggregate's support functions run as the caller too.
bool untrusted_aggregate_support(Oid aggfnoid, TrustContext *context)
{
    HeapTuple tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
    if (!HeapTupleIsValid(tuple))
        return false;
    Form_pg_aggregate agg = reinterpret_cast<Form_pg_aggregate>(GETSTRUCT(tuple));
    const Oid support[] = {agg->aggtransfn,     agg->aggfinalfn,    agg->aggcombinefn,
                           agg->aggserialfn,    agg->aggdeserialfn, agg->aggmtransfn,
                           agg->aggminvtransfn, agg->aggmfinalfn};
    ReleaseSysCache(tuple);
    for (Oid f : support)
        if (OidIsValid(f) && untrusted_function(f, context))
            return true;
    return false;
}

bool untrusted_function(Oid funcid, void *arg)
{
    TrustContext *context = static_cast<TrustContext *>(arg);
    if (funcid < FirstNormalObjectId)
        return false; // a built-in: owned by the bootstrap superuser, not alterable by others
    remember(funcid, &context->depends->nfunctions, &context->depends->functions);
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tuple))
        return false; // the planner will say the function does not exist
    Form_pg_proc proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
    Oid owner = proc->proowner;
    bool aggregate = proc->prokind == PROKIND_AGGREGATE;
    ReleaseSysCache(tuple);
    if (!may_act_as(owner, context->role)) {
        context->reason =
            psprintf("function %s is owned by role \"%s\", which cannot act as \"%s\"",
                     format_procedure(funcid), role_name(owner), role_name(context->role));
        return true;
    }
    return aggregate && untrusted_aggregate_support(funcid, context);
}

// The planner may turn an operator into its commutator or negator; their functions run then.
bool untrusted_operator_partners(Oid opno, TrustContext *context)
{
    if (opno < FirstNormalObjectId)
        return false;
    const Oid partners[] = {get_commutator(opno), get_negator(opno)};
    for (Oid other : partners) {
        RegProcedure code = OidIsValid(other) ? get_opcode(other) : InvalidOid;
        if (OidIsValid(code) && untrusted_function(code, context))
            return true;
    }
    return false;
}

Oid operator_of(Node *node)
{
    if (IsA(node, OpExpr) || IsA(node, DistinctExpr) || IsA(node, NullIfExpr))
        return reinterpret_cast<OpExpr *>(node)->opno;
    if (IsA(node, ScalarArrayOpExpr))
        return reinterpret_cast<ScalarArrayOpExpr *>(node)->opno;
    return InvalidOid;
}

// ------------------------------------------------------------------ the walk

bool trust_walker(Node *node, TrustContext *context);

// SQL handed to a built-in as text is judged like the statement itself; text that is not a
// constant is chosen at run time, by the caller.
bool untrusted_sql_text(FuncExpr *call, int argument, TrustContext *context)
{
    Node *arg = argument < list_length(call->args)
                    ? strip_implicit_coercions(static_cast<Node *>(list_nth(call->args, argument)))
                    : nullptr;
    if (arg == nullptr || !IsA(arg, Const) || reinterpret_cast<Const *>(arg)->constisnull) {
        context->reason = psprintf("%s runs SQL text that is not a constant of the query",
                                   format_procedure(call->funcid));
        return true;
    }
    char *sql = TextDatumGetCString(reinterpret_cast<Const *>(arg)->constvalue);
    ListCell *lc;
    foreach (lc, raw_parser(sql, RAW_PARSE_DEFAULT)) {
        Query *query =
            parse_analyze_fixedparams(lfirst_node(RawStmt, lc), sql, nullptr, 0, nullptr);
        if (query->commandType == CMD_UTILITY) {
            context->reason = psprintf("%s runs a utility statement given as text",
                                       format_procedure(call->funcid));
            return true;
        }
        if (trust_walker(reinterpret_cast<Node *>(query), context))
            return true;
    }
    return false;
}

bool trust_walker(Node *node, TrustContext *context)
{
    if (node == nullptr)
        return false;
    check_stack_depth();
    if (IsA(node, Query))
        return query_tree_walker(reinterpret_cast<Query *>(node), WALKER(trust_walker), context, 0);
    if (check_functions_in_node(node, untrusted_function, context))
        return true;
    Oid opno = operator_of(node);
    if (OidIsValid(opno) && untrusted_operator_partners(opno, context))
        return true;
    if (IsA(node, FuncExpr)) {
        FuncExpr *call = reinterpret_cast<FuncExpr *>(node);
        int argument = sql_text_argument(call->funcid);
        if (argument >= 0 && untrusted_sql_text(call, argument, context))
            return true;
    }
    if (IsA(node, CoerceToDomain) &&
        untrusted_type(reinterpret_cast<CoerceToDomain *>(node)->resulttype, context))
        return true;
    // A column definition list (f() AS t(x some_domain)): each value is coerced to its type.
    if (IsA(node, RangeTblFunction) &&
        untrusted_type_list(reinterpret_cast<RangeTblFunction *>(node)->funccoltypes, context))
        return true;
    return expression_tree_walker(node, WALKER(trust_walker), context);
}

} // namespace

char *untrusted_code(Query *query, Oid role, Oid saved_by, const Oid *param_types, int nparams,
                     TrustDepends *depends)
{
    if (!may_act_as(saved_by, role))
        return psprintf("the query was saved by role \"%s\", which cannot act as \"%s\"",
                        role_name(saved_by), role_name(role));
    if (char *schema = untrusted_schema(role))
        return schema;
    TrustContext context = {role, nullptr, depends};
    // A parameter's value goes through its type's input function, a domain's checks included.
    for (int i = 0; i < nparams; i++)
        if (untrusted_type(param_types[i], &context))
            return context.reason;
    (void)trust_walker(reinterpret_cast<Node *>(query), &context);
    return context.reason;
}
