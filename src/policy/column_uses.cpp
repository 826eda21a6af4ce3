// What a statement does with columns besides returning them: see column_uses.hpp.
#include "policy/column_uses.hpp"
#include "policy/row_checks.hpp"
#include "policy/tree_walker.hpp"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_statistic_ext_data.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include <cstring>

namespace lineage {

namespace {

struct SublinkContext {
    Level *level;
    Uses *uses;
};

bool sublink_walker(Node *node, SublinkContext *context)
{
    if (node == nullptr)
        return false;
    if (IsA(node, Query)) {
        collect_uses(reinterpret_cast<Query *>(node), context->level, context->uses, false);
        return false;
    }
    return expression_tree_walker(node, WALKER(sublink_walker), context);
}

// One predicate, a site of its own (meet): each conjunct of an AND apart, so that a parameter
// compared with one column does not meet the columns of the conjuncts beside it.
void trace_predicate(Node *expr, Level *level, Uses *uses)
{
    if (expr == nullptr)
        return;
    if (IsA(expr, BoolExpr) && reinterpret_cast<BoolExpr *>(expr)->boolop == AND_EXPR) {
        ListCell *lc;
        foreach (lc, reinterpret_cast<BoolExpr *>(expr)->args)
            trace_predicate(static_cast<Node *>(lfirst(lc)), level, uses);
        return;
    }
    if (IsA(expr, List)) {
        ListCell *lc;
        foreach (lc, reinterpret_cast<List *>(expr))
            trace_predicate(static_cast<Node *>(lfirst(lc)), level, uses);
        return;
    }
    ColumnSet site;
    memset(&site, 0, sizeof(site));
    trace_expr(expr, level, &site);
    add_columns(&uses->predicates, &site);
    meet(uses, &site, nullptr);
}

void trace_sort_group(List *clauses, List *targetList, Level *level, Uses *uses)
{
    ListCell *lc;
    foreach (lc, clauses) {
        SortGroupClause *clause = lfirst_node(SortGroupClause, lc);
        trace_predicate(get_sortgroupclause_expr(clause, targetList), level, uses);
    }
}

void trace_jointree_quals(Node *node, Level *level, Uses *uses)
{
    if (node == nullptr)
        return;
    if (IsA(node, FromExpr)) {
        FromExpr *from = reinterpret_cast<FromExpr *>(node);
        trace_predicate(from->quals, level, uses);
        ListCell *lc;
        foreach (lc, from->fromlist)
            trace_jointree_quals(static_cast<Node *>(lfirst(lc)), level, uses);
    } else if (IsA(node, JoinExpr)) {
        JoinExpr *join = reinterpret_cast<JoinExpr *>(node);
        trace_predicate(join->quals, level, uses);
        trace_jointree_quals(join->larg, level, uses);
        trace_jointree_quals(join->rarg, level, uses);
    }
}

// True when a set operation tree compares rows: anything but UNION ALL, at any node.
bool set_operation_compares(Node *node)
{
    if (node == nullptr || !IsA(node, SetOperationStmt))
        return false;
    SetOperationStmt *op = reinterpret_cast<SetOperationStmt *>(node);
    return op->op != SETOP_UNION || !op->all || set_operation_compares(op->larg) ||
           set_operation_compares(op->rarg);
}

// The outputs of a query below the statement that run whether or not anything uses them.
// Each output is also a site (meet): a parameter in a subquery's or a CTE's output meets its
// sources, whether or not the output runs unselected.
void trace_unselected(Query *query, Level *level, bool is_cte, Uses *uses)
{
    ListCell *lc;
    foreach (lc, output_list(query)) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        Node *expr = reinterpret_cast<Node *>(tle->expr);
        if (tle->resjunk)
            continue;
        ColumnSet site;
        memset(&site, 0, sizeof(site));
        trace_expr(expr, level, &site);
        meet(uses, &site, nullptr);
        if (is_cte || expression_returns_set(expr) || contain_volatile_functions(expr))
            add_columns(&uses->unselected, &site);
    }
}

// The columns a target list assigns.
Bitmapset *assigned_columns(List *target_list)
{
    Bitmapset *assigned = nullptr;
    ListCell *lc;
    foreach (lc, target_list) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        if (!tle->resjunk && tle->resno > 0)
            assigned = bms_add_member(assigned, tle->resno);
    }
    return assigned;
}

// What the database checks on the rows the query inserts, updates or deletes (row_checks.hpp).
void collect_row_checks(Query *query, Uses *uses)
{
    if (query->resultRelation < 1 || query->resultRelation > list_length(query->rtable))
        return;
    const Oid relid = rt_fetch(query->resultRelation, query->rtable)->relid;
    using row_checks::Write;
    switch (query->commandType) {
    case CMD_INSERT:
        row_checks::collect(relid, Write::insert, nullptr, &uses->row_checks);
        if (query->onConflict != nullptr && query->onConflict->action == ONCONFLICT_UPDATE)
            row_checks::collect(relid, Write::update,
                                assigned_columns(query->onConflict->onConflictSet),
                                &uses->row_checks);
        break;
    case CMD_UPDATE:
        row_checks::collect(relid, Write::update, assigned_columns(query->targetList),
                            &uses->row_checks);
        break;
    case CMD_DELETE:
        row_checks::collect(relid, Write::remove, nullptr, &uses->row_checks);
        break;
    case CMD_MERGE: {
        ListCell *la;
        foreach (la, query->mergeActionList) {
            MergeAction *action = lfirst_node(MergeAction, la);
            if (action->commandType == CMD_INSERT)
                row_checks::collect(relid, Write::insert, nullptr, &uses->row_checks);
            else if (action->commandType == CMD_UPDATE)
                row_checks::collect(relid, Write::update, assigned_columns(action->targetList),
                                    &uses->row_checks);
            else if (action->commandType == CMD_DELETE)
                row_checks::collect(relid, Write::remove, nullptr, &uses->row_checks);
        }
        break;
    }
    default:
        break;
    }
}

// Each column a write assigns: its value's lineage.
void collect_writes(Query *query, Level *level, Uses *uses)
{
    if (query->commandType != CMD_INSERT && query->commandType != CMD_UPDATE &&
        query->commandType != CMD_MERGE)
        return;
    if (query->resultRelation < 1 || query->resultRelation > list_length(query->rtable))
        return;
    Oid relid = rt_fetch(query->resultRelation, query->rtable)->relid;
    List *lists =
        list_make2(query->targetList, query->onConflict ? query->onConflict->onConflictSet : NIL);
    ListCell *la;
    foreach (la, query->mergeActionList)
        lists = lappend(lists, lfirst_node(MergeAction, la)->targetList);
    Bitmapset *done = nullptr;
    ListCell *ll;
    foreach (ll, lists) {
        ListCell *lc;
        foreach (lc, static_cast<List *>(lfirst(ll))) {
            TargetEntry *tle = lfirst_node(TargetEntry, lc);
            if (tle->resjunk || tle->resno < 1 || bms_is_member(tle->resno, done))
                continue;
            done = bms_add_member(done, tle->resno);
            ColumnSet set;
            memset(&set, 0, sizeof(set));
            trace_assigned_values(level, tle->resno, true, &set);
            ColumnSet target;
            memset(&target, 0, sizeof(target));
            add_column(&target, relid, tle->resno);
            meet(uses, &set, &target);
            if (uses->nwrites == uses->writes_capacity) {
                uses->writes_capacity = uses->writes_capacity ? uses->writes_capacity * 2 : 8;
                uses->writes = static_cast<WriteLineage *>(
                    uses->writes
                        ? repalloc(uses->writes, sizeof(WriteLineage) * uses->writes_capacity)
                        : palloc(sizeof(WriteLineage) * uses->writes_capacity));
            }
            WriteLineage *w = &uses->writes[uses->nwrites++];
            w->target = named_columns(&target)[0];
            w->nsources = set.n;
            w->sources = named_columns(&set);
            w->unresolvable = set.unresolvable ? pstrdup(set.unresolvable) : nullptr;
        }
    }
}

// What a query compares (WHERE, JOIN ON, HAVING, LIMIT and OFFSET, GROUP BY, ORDER BY, DISTINCT,
// set operations but UNION ALL, windows, ON CONFLICT, MERGE conditions): each a predicate.
void trace_comparisons(Query *query, Level *level, Uses *uses)
{
    trace_jointree_quals(reinterpret_cast<Node *>(query->jointree), level, uses);
    trace_predicate(query->havingQual, level, uses);
    // A row count computed from a column tells as much as a filter on it.
    trace_predicate(query->limitCount, level, uses);
    trace_predicate(query->limitOffset, level, uses);
    trace_sort_group(query->groupClause, query->targetList, level, uses);
    trace_sort_group(query->sortClause, query->targetList, level, uses);
    // DISTINCT (ON or not) compares the values it keeps apart, as GROUP BY does: how many rows
    // come back tells whether they were equal.
    trace_sort_group(query->distinctClause, query->targetList, level, uses);
    // So do UNION, INTERSECT and EXCEPT (all but UNION ALL), over every column of every leaf.
    if (query->setOperations != nullptr && set_operation_compares(query->setOperations)) {
        ColumnSet site;
        memset(&site, 0, sizeof(site));
        trace_setop_leaves(query->setOperations, level, 0, &site);
        add_columns(&uses->predicates, &site);
        meet(uses, &site, nullptr);
    }
    ListCell *lc;
    foreach (lc, query->windowClause) {
        WindowClause *wc = lfirst_node(WindowClause, lc);
        trace_sort_group(wc->partitionClause, query->targetList, level, uses);
        trace_sort_group(wc->orderClause, query->targetList, level, uses);
    }
    if (query->onConflict != nullptr) {
        // ON CONFLICT (ssn) finds the row that holds the caller's value: a comparison.
        trace_predicate(reinterpret_cast<Node *>(query->onConflict->arbiterElems), level, uses);
        trace_predicate(query->onConflict->arbiterWhere, level, uses);
        trace_predicate(query->onConflict->onConflictWhere, level, uses);
    }
    foreach (lc, query->mergeActionList)
        trace_predicate(lfirst_node(MergeAction, lc)->qual, level, uses);
}

// The sublinks in a query's own expressions (not the range table, the CTEs or its RLS checks).
void collect_own_sublinks(Query *query, SublinkContext *context)
{
    Node *parts[] = {
        reinterpret_cast<Node *>(query->targetList),
        reinterpret_cast<Node *>(query->returningList),
        reinterpret_cast<Node *>(query->jointree),
        query->havingQual,
        query->limitOffset,
        query->limitCount,
        reinterpret_cast<Node *>(query->onConflict),
        reinterpret_cast<Node *>(query->mergeActionList),
    };
    for (Node *part : parts)
        (void)sublink_walker(part, context);
    ListCell *lc;
    foreach (lc, query->windowClause) {
        WindowClause *wc = lfirst_node(WindowClause, lc);
        (void)sublink_walker(wc->startOffset, context);
        (void)sublink_walker(wc->endOffset, context);
    }
}

// The queries below this one: its CTEs, its range table's subqueries and the sublinks anywhere in
// it; and the arguments of its functions in FROM, which are predicates.
void collect_below(Query *query, Level *level, Uses *uses)
{
    ListCell *lc;
    foreach (lc, query->cteList) {
        CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);
        if (cte->ctequery != nullptr && IsA(cte->ctequery, Query))
            collect_uses(reinterpret_cast<Query *>(cte->ctequery), level, uses, true);
    }
    SublinkContext context = {level, uses};
    foreach (lc, query->rtable) {
        RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
        switch (rte->rtekind) {
        case RTE_SUBQUERY:
            collect_uses(rte->subquery, level, uses, false);
            break;
        case RTE_FUNCTION: {
            // The arguments of a function in FROM decide how many rows it makes:
            // generate_series(1, salary / 1000) counts a masked column out loud.
            ListCell *fc;
            foreach (fc, rte->functions)
                trace_predicate(lfirst_node(RangeTblFunction, fc)->funcexpr, level, uses);
            (void)sublink_walker(reinterpret_cast<Node *>(rte->functions), &context);
            break;
        }
        case RTE_TABLEFUNC:
            trace_predicate(reinterpret_cast<Node *>(rte->tablefunc), level, uses);
            (void)sublink_walker(reinterpret_cast<Node *>(rte->tablefunc), &context);
            break;
        case RTE_VALUES:
            (void)sublink_walker(reinterpret_cast<Node *>(rte->values_lists), &context);
            break;
        case RTE_RELATION:
            (void)sublink_walker(reinterpret_cast<Node *>(rte->tablesample), &context);
            break;
        default:
            break;
        }
    }
    collect_own_sublinks(query, &context);
}

} // namespace

void meet(Uses *uses, const ColumnSet *site, const ColumnSet *target)
{
    int p = -1;
    while ((p = bms_next_member(site->params, p)) >= 0) {
        if (p < 1 || p > uses->nparams)
            continue;
        ColumnSet *met = &uses->met[p - 1];
        add_columns(met, site);
        if (target != nullptr)
            add_columns(met, target);
    }
}

void collect_uses(Query *query, Level *parent, Uses *uses, bool is_cte)
{
    check_stack_depth();
    Level level = {query, parent, false};
    trace_comparisons(query, &level, uses);
    if (parent != nullptr)
        trace_unselected(query, &level, is_cte, uses);
    collect_writes(query, &level, uses);
    collect_row_checks(query, uses);
    collect_below(query, &level, uses);
}

} // namespace lineage
