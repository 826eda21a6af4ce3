// A join's columns in a value's lineage: see join_columns.hpp.
#include "policy/join_columns.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"
}

namespace lineage {

namespace {

// The range-table index of a join tree node (a RangeTblRef or a JoinExpr).
int jointree_rtindex(Node *node)
{
    if (node == nullptr)
        return 0;
    if (IsA(node, RangeTblRef))
        return reinterpret_cast<RangeTblRef *>(node)->rtindex;
    if (IsA(node, JoinExpr))
        return reinterpret_cast<JoinExpr *>(node)->rtindex;
    return 0;
}

// The JoinExpr whose RTE is rtindex, anywhere in a join tree.
JoinExpr *find_join(Node *node, int rtindex)
{
    if (node == nullptr)
        return nullptr;
    if (IsA(node, JoinExpr)) {
        JoinExpr *join = reinterpret_cast<JoinExpr *>(node);
        if (join->rtindex == rtindex)
            return join;
        JoinExpr *found = find_join(join->larg, rtindex);
        return found ? found : find_join(join->rarg, rtindex);
    }
    if (IsA(node, FromExpr)) {
        ListCell *lc;
        foreach (lc, reinterpret_cast<FromExpr *>(node)->fromlist) {
            JoinExpr *found = find_join(static_cast<Node *>(lfirst(lc)), rtindex);
            if (found)
                return found;
        }
    }
    return nullptr;
}

// Merged column attno of a USING join: the column of both inputs, whichever side's value the
// join returns (once per set).
void trace_merged_inputs(Level *level, int rtindex, RangeTblEntry *rte, AttrNumber attno,
                         ColumnSet *set)
{
    if (!first_visit(set, rte, attno))
        return;
    JoinExpr *join = find_join(reinterpret_cast<Node *>(level->query->jointree), rtindex);
    if (join == nullptr) {
        mark_unresolvable(set, "a join whose inputs cannot be found");
        return;
    }
    int left = jointree_rtindex(join->larg), right = jointree_rtindex(join->rarg);
    if (left > 0 && attno <= list_length(rte->joinleftcols))
        trace_rte_column(level, left, list_nth_int(rte->joinleftcols, attno - 1), set);
    if (right > 0 && attno <= list_length(rte->joinrightcols))
        trace_rte_column(level, right, list_nth_int(rte->joinrightcols, attno - 1), set);
}

} // namespace

void trace_merged_partners(Level *level, Var *var, ColumnSet *set)
{
    int rtindex = 0;
    ListCell *lc;
    foreach (lc, level->query->rtable) {
        rtindex++;
        RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind != RTE_JOIN || rte->joinmergedcols == 0)
            continue;
        for (int k = 0; k < rte->joinmergedcols && k < list_length(rte->joinaliasvars); k++) {
            Node *alias =
                strip_implicit_coercions(static_cast<Node *>(list_nth(rte->joinaliasvars, k)));
            if (alias != nullptr && IsA(alias, Var)) {
                Var *merged = reinterpret_cast<Var *>(alias);
                if (merged->varlevelsup == 0 && merged->varno == var->varno &&
                    merged->varattno == var->varattno)
                    trace_merged_inputs(level, rtindex, rte, k + 1, set);
            }
        }
    }
}

void trace_join_column(Level *level, int rtindex, RangeTblEntry *rte, AttrNumber attno,
                       ColumnSet *set)
{
    if (attno < 1 || attno > list_length(rte->joinaliasvars))
        return;
    Node *alias = static_cast<Node *>(list_nth(rte->joinaliasvars, attno - 1));
    // A FULL JOIN's merged column is COALESCE(left, right): whichever value is there, unchanged;
    // trace_merged_inputs follows both sides.
    bool merged_coalesce = attno <= rte->joinmergedcols && alias != nullptr &&
                           IsA(strip_implicit_coercions(alias), CoalesceExpr);
    if (alias != nullptr && !merged_coalesce)
        trace_expr(alias, level, set);
    if (attno <= rte->joinmergedcols)
        trace_merged_inputs(level, rtindex, rte, attno, set);
}

} // namespace lineage
