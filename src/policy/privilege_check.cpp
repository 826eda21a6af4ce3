// The privileges a statement needs: see privilege_check.hpp.
#include "policy/privilege_check.hpp"
#include "policy/tree_walker.hpp"

extern "C" {
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
}

namespace {

struct Privilege {
    AclMode bit;
    const char *name;
};
constexpr Privilege privileges[] = {
    {ACL_SELECT, "SELECT"}, {ACL_INSERT, "INSERT"}, {ACL_UPDATE, "UPDATE"}, {ACL_DELETE, "DELETE"}};

// Whether the current user may do with the relation what `rte` asks, as the executor judges it
// (its columns included); only the privileges in `perms`.
bool permitted(const RangeTblEntry *rte, AclMode perms)
{
    RangeTblEntry one = *rte;
    one.requiredPerms = perms;
    return ExecCheckRTPerms(list_make1(&one), false);
}

bool missing_walker(Node *node, char **missing)
{
    if (node == nullptr || *missing != nullptr)
        return *missing != nullptr;
    if (IsA(node, RangeTblEntry)) {
        const RangeTblEntry *rte = reinterpret_cast<RangeTblEntry *>(node);
        if (rte->rtekind == RTE_RELATION && rte->requiredPerms != 0 &&
            !permitted(rte, rte->requiredPerms)) {
            const char *which = "a privilege";
            for (const Privilege &p : privileges)
                if ((rte->requiredPerms & p.bit) != 0 && !permitted(rte, p.bit)) {
                    which = p.name;
                    break;
                }
            const char *schema = get_namespace_name(get_rel_namespace(rte->relid));
            const char *name = get_rel_name(rte->relid);
            *missing = psprintf("%s on %s.%s", which, schema ? schema : "?", name ? name : "?");
            return true;
        }
        return false; // range_table_walker goes on into the entry's contents
    }
    if (IsA(node, Query))
        return query_tree_walker(reinterpret_cast<Query *>(node), WALKER(missing_walker), missing,
                                 QTW_EXAMINE_RTES_BEFORE);
    return expression_tree_walker(node, WALKER(missing_walker), missing);
}

} // namespace

char *first_missing_privilege(List *rewritten)
{
    char *missing = nullptr;
    ListCell *lc;
    foreach (lc, rewritten) {
        (void)missing_walker(reinterpret_cast<Node *>(lfirst_node(Query, lc)), &missing);
        if (missing != nullptr)
            break;
    }
    return missing;
}
