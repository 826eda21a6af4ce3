// Whose code a saved query runs as its policy's role: see code_trust.hpp.
#include "code_trust.hpp"
#include "role_rules.hpp"
#include "saved_query_analysis.hpp"

#include "tree_walker.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
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

// The first role that may create objects in the schema and cannot act as role, or InvalidOid
// (PUBLIC is ACL_ID_PUBLIC, which is 0 too: found says which).
bool untrusted_creator(Oid nsp, Oid role, Oid *creator)
{
    HeapTuple tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
    if (!HeapTupleIsValid(tuple))
        return false; // dropped since the path was computed: nothing can be found in it
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

char *untrusted_schema(Oid role, TrustDepends *depends)
{
    ListCell *lc;
    foreach (lc, search_path_schemas()) {
        Oid nsp = lfirst_oid(lc);
        remember(nsp, &depends->nschemas, &depends->schemas);
        Oid creator = InvalidOid;
        if (untrusted_creator(nsp, role, &creator))
            return psprintf("role \"%s\" may create objects in schema \"%s\", which is on the query's "
                            "search_path, and cannot act as \"%s\"",
                            role_name(creator), get_namespace_name(nsp), role_name(role));
    }
    return nullptr;
}

struct TrustContext {
    Oid role;
    char *reason;
    TrustDepends *depends;
};

bool untrusted_function(Oid funcid, void *arg);

// The aggregate's support functions run as the caller too.
bool untrusted_aggregate_support(Oid aggfnoid, TrustContext *context)
{
    HeapTuple tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
    if (!HeapTupleIsValid(tuple))
        return false;
    Form_pg_aggregate agg = reinterpret_cast<Form_pg_aggregate>(GETSTRUCT(tuple));
    const Oid support[] = {agg->aggtransfn,  agg->aggfinalfn,   agg->aggcombinefn,
                           agg->aggserialfn, agg->aggdeserialfn, agg->aggmtransfn,
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
    bool definer = proc->prosecdef;
    bool aggregate = proc->prokind == PROKIND_AGGREGATE;
    ReleaseSysCache(tuple);
    if (!definer && !may_act_as(owner, context->role)) {
        context->reason = psprintf("function %s is owned by role \"%s\", which cannot act as \"%s\"",
                                   format_procedure(funcid), role_name(owner),
                                   role_name(context->role));
        return true;
    }
    return aggregate && untrusted_aggregate_support(funcid, context);
}

bool untrusted_domain(Oid type, TrustContext *context)
{
    if (type < FirstNormalObjectId)
        return false;
    remember(type, &context->depends->ndomains, &context->depends->domains);
    HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
    if (!HeapTupleIsValid(tuple))
        return false;
    Oid owner = reinterpret_cast<Form_pg_type>(GETSTRUCT(tuple))->typowner;
    ReleaseSysCache(tuple);
    if (may_act_as(owner, context->role))
        return false;
    context->reason = psprintf("domain %s is owned by role \"%s\", which cannot act as \"%s\" (its "
                               "checks run as the caller)",
                               format_type_be(type), role_name(owner), role_name(context->role));
    return true;
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
    if (IsA(node, CoerceToDomain) &&
        untrusted_domain(reinterpret_cast<CoerceToDomain *>(node)->resulttype, context))
        return true;
    return expression_tree_walker(node, WALKER(trust_walker), context);
}

} // namespace

char *untrusted_code(Query *query, Oid role, TrustDepends *depends)
{
    if (char *schema = untrusted_schema(role, depends))
        return schema;
    TrustContext context = {role, nullptr, depends};
    (void)trust_walker(reinterpret_cast<Node *>(query), &context);
    return context.reason;
}
