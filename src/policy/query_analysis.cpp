// What a saved query touches, writes and returns: see query_analysis.hpp.
//
// Two trees. The relations a statement reads or writes (for table allow-lists) and the writes it
// makes come from the analyzed tree before the rewriter runs, so that a view counts as itself.
// The lineage of the output columns, the columns predicates use and the relations the analysis
// depends on come from the rewritten tree, where views are expanded into their defining queries,
// so that a rule on a view's base table applies through the view.
//
// Tracing follows each Var to the range-table entry it names, at its query level: a base table's
// column is a source; a subquery's, CTE's or set operation's column is traced through the output
// expression(s) that produce it; a join's column through its alias expansion (and, for a merged
// USING column, both inputs); a VALUES column through that column of every row. Expressions are
// walked whole, so casts, operators, function calls, CASE, aggregates (arguments, ORDER BY and
// FILTER), window functions and JSON builders derive from every Var inside them, and a sublink's
// subselect outputs are sources of the expression holding it. A function in FROM (other than a
// few pure built-ins) and a record returned by a user-defined function cannot be traced: such a
// column is marked unresolvable with the reason.
//
// PostgreSQL-style code: palloc'd plain data only, so ereport may jump out of any of it.
#include "policy/query_analysis.hpp"
#include "policy/code_trust.hpp"
#include "policy/function_effects.hpp"
#include "policy/saved_query_analysis.hpp"
#include "policy/tree_walker.hpp"
#include "policy/value_use.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_statistic_ext_data.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

#include <cstring>

namespace {

// ------------------------------------------------------------------ relations before rewrite

struct RelationCollector {
    int n;
    int capacity;
    Oid *oids;
    int write_ops;
};

void add_oid(RelationCollector *c, Oid relid)
{
    for (int i = 0; i < c->n; i++)
        if (c->oids[i] == relid)
            return;
    if (c->n == c->capacity) {
        c->capacity = c->capacity ? c->capacity * 2 : 8;
        c->oids = static_cast<Oid *>(c->oids ? repalloc(c->oids, sizeof(Oid) * c->capacity)
                                             : palloc(sizeof(Oid) * c->capacity));
    }
    c->oids[c->n++] = relid;
}

int write_op_of(CmdType type)
{
    switch (type) {
    case CMD_INSERT:
        return WRITE_INSERT;
    case CMD_UPDATE:
        return WRITE_UPDATE;
    case CMD_DELETE:
        return WRITE_DELETE;
    case CMD_MERGE:
        return WRITE_MERGE;
    default:
        return 0;
    }
}

// Every RTE_RELATION of every Query reachable from node (range tables, subqueries in FROM,
// sublinks anywhere, CTEs), and the command type of every Query. securityQuals are walked too
// (they are empty before rewrite; in the rewritten tree, what row-level security reads is still
// something the analysis depends on).
bool relation_walker(Node *node, RelationCollector *c)
{
    if (node == nullptr)
        return false;
    if (IsA(node, RangeTblEntry)) {
        RangeTblEntry *rte = reinterpret_cast<RangeTblEntry *>(node);
        if (rte->rtekind == RTE_RELATION)
            add_oid(c, rte->relid);
        return false; // range_table_walker goes on into the entry's contents
    }
    if (IsA(node, Query)) {
        Query *query = reinterpret_cast<Query *>(node);
        c->write_ops |= write_op_of(query->commandType);
        return query_tree_walker(query, WALKER(relation_walker), c, QTW_EXAMINE_RTES_BEFORE);
    }
    return expression_tree_walker(node, WALKER(relation_walker), c);
}

// ------------------------------------------------------------------ lineage

// A query level while tracing: Vars with varlevelsup > 0 name an RTE of an enclosing level.
// returning: the level's output list is its RETURNING list, whose Vars of the result relation
// hold the values written.
struct Level {
    Query *query;
    Level *parent;
    bool returning;
};

struct ColumnRef {
    Oid relid;
    AttrNumber attnum;
};

struct VisitKey {
    const void *node; // a Query, or a join's RangeTblEntry
    int index;        // its output column, or the join's merged column
    bool computing;   // traced under a computation (value_use.hpp), or passed through
};

// The base columns found for one output column (or for all predicates), deduplicated, with the
// first reason the sources cannot be known, and the (query, column) pairs already traced (which
// also ends the recursion of recursive CTEs). While tracing, `computing` says whether the value
// on its way to the output has been computed with (value_use.hpp), and `how`; each column keeps
// the first such use (hows[i]; NULL: it only ever passed through).
struct ColumnSet {
    int n;
    int capacity;
    ColumnRef *cols;
    const char **hows;
    const char *unresolvable;
    int nvisited;
    int visited_capacity;
    VisitKey *visited;
    bool computing;
    const char *how;
};

void add_column(ColumnSet *set, Oid relid, AttrNumber attnum)
{
    const char *how = set->computing ? set->how : nullptr;
    for (int i = 0; i < set->n; i++)
        if (set->cols[i].relid == relid && set->cols[i].attnum == attnum) {
            if (set->hows[i] == nullptr)
                set->hows[i] = how;
            return;
        }
    if (set->n == set->capacity) {
        set->capacity = set->capacity ? set->capacity * 2 : 8;
        set->cols = static_cast<ColumnRef *>(
            set->cols ? repalloc(set->cols, sizeof(ColumnRef) * set->capacity)
                      : palloc(sizeof(ColumnRef) * set->capacity));
        set->hows = static_cast<const char **>(
            set->hows ? repalloc(set->hows, sizeof(char *) * set->capacity)
                      : palloc(sizeof(char *) * set->capacity));
    }
    set->cols[set->n].relid = relid;
    set->cols[set->n].attnum = attnum;
    set->hows[set->n] = how;
    set->n++;
}

// True the first time (node, index) is seen in this set, in this context: a column first passed
// through may be computed with on another path.
bool first_visit(ColumnSet *set, const void *node, int index)
{
    for (int i = 0; i < set->nvisited; i++)
        if (set->visited[i].node == node && set->visited[i].index == index &&
            set->visited[i].computing == set->computing)
            return false;
    if (set->nvisited == set->visited_capacity) {
        set->visited_capacity = set->visited_capacity ? set->visited_capacity * 2 : 8;
        set->visited = static_cast<VisitKey *>(
            set->visited ? repalloc(set->visited, sizeof(VisitKey) * set->visited_capacity)
                         : palloc(sizeof(VisitKey) * set->visited_capacity));
    }
    set->visited[set->nvisited].node = node;
    set->visited[set->nvisited].index = index;
    set->visited[set->nvisited].computing = set->computing;
    set->nvisited++;
    return true;
}

void mark_unresolvable(ColumnSet *set, const char *reason)
{
    if (set->unresolvable == nullptr)
        set->unresolvable = reason;
}

void trace_expr(Node *expr, Level *level, ColumnSet *set);
SourceColumn *named_columns(const ColumnSet *set);
void trace_query_column(Query *query, AttrNumber attno, Level *parent, bool returning,
                        ColumnSet *set);
void trace_rte_column(Level *level, int rtindex, AttrNumber attno, ColumnSet *set);

// Column attno (0: every column) of every leaf of a set operation tree.
void trace_setop_leaves(Node *node, Level *level, AttrNumber attno, ColumnSet *set)
{
    check_stack_depth();
    if (node == nullptr)
        return;
    if (IsA(node, SetOperationStmt)) {
        SetOperationStmt *op = reinterpret_cast<SetOperationStmt *>(node);
        trace_setop_leaves(op->larg, level, attno, set);
        trace_setop_leaves(op->rarg, level, attno, set);
    } else if (IsA(node, RangeTblRef)) {
        trace_rte_column(level, reinterpret_cast<RangeTblRef *>(node)->rtindex, attno, set);
    }
}

// The list a query returns: its target list, or RETURNING for a write.
List *output_list(Query *query)
{
    return query->commandType == CMD_SELECT ? query->targetList : query->returningList;
}

// Every output column of a query (for a whole-row reference to it).
void trace_all_query_columns(Query *query, Level *parent, ColumnSet *set)
{
    ListCell *lc;
    foreach (lc, output_list(query)) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        if (!tle->resjunk)
            trace_query_column(query, tle->resno, parent, query->commandType != CMD_SELECT, set);
    }
}

// Every live column of a base relation (a whole-row reference to it).
void add_all_columns(Oid relid, ColumnSet *set)
{
    Relation rel = relation_open(relid, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    for (int i = 0; i < desc->natts; i++)
        if (!TupleDescAttr(desc, i)->attisdropped)
            add_column(set, relid, TupleDescAttr(desc, i)->attnum);
    relation_close(rel, AccessShareLock);
}

// The value assigned to column attno (0: every column) of a write's result relation, by the
// write's target list, its ON CONFLICT DO UPDATE SET list, and its MERGE actions. The expressions
// are traced at the write's level as plain reads (their Vars of the result relation are the old
// values).
void trace_assigned_values(Level *level, AttrNumber attno, bool include_on_conflict, ColumnSet *set)
{
    Query *query = level->query;
    Level plain = {query, level->parent, false};
    ListCell *lc;
    foreach (lc, query->targetList) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        if (!tle->resjunk && (attno == 0 || tle->resno == attno))
            trace_expr(reinterpret_cast<Node *>(tle->expr), &plain, set);
    }
    if (include_on_conflict && query->onConflict != nullptr) {
        foreach (lc, query->onConflict->onConflictSet) {
            TargetEntry *tle = lfirst_node(TargetEntry, lc);
            if (!tle->resjunk && (attno == 0 || tle->resno == attno))
                trace_expr(reinterpret_cast<Node *>(tle->expr), &plain, set);
        }
    }
    ListCell *la;
    foreach (la, query->mergeActionList) {
        MergeAction *action = lfirst_node(MergeAction, la);
        foreach (lc, action->targetList) {
            TargetEntry *tle = lfirst_node(TargetEntry, lc);
            if (!tle->resjunk && (attno == 0 || tle->resno == attno))
                trace_expr(reinterpret_cast<Node *>(tle->expr), &plain, set);
        }
    }
}

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

// The parser resolves a merged USING column of an inner, left or right join to the Var of one
// input, leaving no mark of the join; yet its value stands for both inputs' columns. So a Var that
// is the expansion of a join's merged column also derives from the other input's column.
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

// Column attno (> 0) of a join RTE: its alias expansion, and for a merged (USING) column, the
// column of both inputs, whichever side's value the join returns.
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

// Built-in set-returning functions whose rows derive from their arguments only: a function in FROM
// among these is traced through its arguments; any other is opaque (it can read anything).
const char *const transparent_functions[] = {
    "unnest",
    "generate_series",
    "generate_subscripts",
    "json_array_elements",
    "json_array_elements_text",
    "jsonb_array_elements",
    "jsonb_array_elements_text",
    "json_each",
    "json_each_text",
    "jsonb_each",
    "jsonb_each_text",
    "json_object_keys",
    "jsonb_object_keys",
    "json_to_record",
    "json_to_recordset",
    "jsonb_to_record",
    "jsonb_to_recordset",
    "json_populate_record",
    "json_populate_recordset",
    "jsonb_populate_record",
    "jsonb_populate_recordset",
    "jsonb_path_query",
    "regexp_matches",
    "regexp_split_to_table",
    "string_to_table",
};

// A function that can read the database (function_effects.hpp): its result is not traced through
// its arguments.
bool can_read_database(Oid funcid, void *)
{
    return function_reads_database(funcid);
}

bool is_transparent_function(Node *expr)
{
    if (expr == nullptr || !IsA(expr, FuncExpr))
        return false;
    Oid funcid = reinterpret_cast<FuncExpr *>(expr)->funcid;
    if (funcid >= FirstNormalObjectId || get_func_namespace(funcid) != PG_CATALOG_NAMESPACE)
        return false;
    char *name = get_func_name(funcid);
    if (name == nullptr)
        return false;
    for (const char *t : transparent_functions)
        if (std::strcmp(t, name) == 0)
            return true;
    return false;
}

// The view a rewritten subquery was expanded from, or InvalidOid. In PostgreSQL 15 the view's
// query keeps the view itself as its first range-table entry (*OLD*).
Oid view_of_subquery(Query *subquery)
{
    if (subquery == nullptr || subquery->rtable == NIL)
        return InvalidOid;
    RangeTblEntry *first = static_cast<RangeTblEntry *>(linitial(subquery->rtable));
    if (first->rtekind == RTE_RELATION && first->relkind == RELKIND_VIEW &&
        first->eref != nullptr && std::strcmp(first->eref->aliasname, "old") == 0)
        return first->relid;
    return InvalidOid;
}

// The sources of column attno (0: the whole row) of RTE rtindex at this level.
void trace_rte_column(Level *level, int rtindex, AttrNumber attno, ColumnSet *set)
{
    check_stack_depth();
    Query *query = level->query;
    if (rtindex < 1 || rtindex > list_length(query->rtable)) {
        mark_unresolvable(set, "a reference the analysis cannot follow");
        return;
    }
    RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
    switch (rte->rtekind) {
    case RTE_RELATION: {
        if (attno == 0)
            add_all_columns(rte->relid, set);
        else if (attno > 0)
            add_column(set, rte->relid, attno);
        // system columns (ctid, xmin, tableoid, ...) carry no table data
        if (query->commandType != CMD_SELECT) {
            // RETURNING shows the values written; EXCLUDED holds the values proposed for insertion.
            if (level->returning && rtindex == query->resultRelation)
                trace_assigned_values(level, attno, true, set);
            else if (query->onConflict != nullptr && rtindex == query->onConflict->exclRelIndex)
                trace_assigned_values(level, attno, false, set);
        }
        break;
    }
    case RTE_SUBQUERY: {
        // An expanded view is a source itself as well, so a rule on a view's column applies.
        Oid view = view_of_subquery(rte->subquery);
        if (OidIsValid(view)) {
            if (attno == 0)
                add_all_columns(view, set);
            else if (attno > 0)
                add_column(set, view, attno);
        }
        if (attno == 0)
            trace_all_query_columns(rte->subquery, level, set);
        else
            trace_query_column(rte->subquery, attno, level, false, set);
        break;
    }
    case RTE_JOIN:
        if (attno == 0) {
            for (int i = 1; i <= list_length(rte->joinaliasvars); i++)
                trace_join_column(level, rtindex, rte, i, set);
        } else {
            trace_join_column(level, rtindex, rte, attno, set);
        }
        break;
    case RTE_CTE: {
        Level *owner = level;
        for (Index i = 0; i < rte->ctelevelsup && owner != nullptr; i++)
            owner = owner->parent;
        CommonTableExpr *found = nullptr;
        if (owner != nullptr) {
            ListCell *lc;
            foreach (lc, owner->query->cteList) {
                CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);
                if (std::strcmp(cte->ctename, rte->ctename) == 0) {
                    found = cte;
                    break;
                }
            }
        }
        if (found == nullptr || found->ctequery == nullptr || !IsA(found->ctequery, Query)) {
            mark_unresolvable(set, "a WITH query the analysis cannot find");
            break;
        }
        Query *cte_query = reinterpret_cast<Query *>(found->ctequery);
        if (attno == 0)
            trace_all_query_columns(cte_query, owner, set);
        else
            trace_query_column(cte_query, attno, owner, cte_query->commandType != CMD_SELECT, set);
        break;
    }
    case RTE_VALUES: {
        ListCell *row;
        foreach (row, rte->values_lists) {
            List *exprs = static_cast<List *>(lfirst(row));
            if (attno == 0)
                trace_expr(reinterpret_cast<Node *>(exprs), level, set);
            else if (attno <= list_length(exprs))
                trace_expr(static_cast<Node *>(list_nth(exprs, attno - 1)), level, set);
        }
        break;
    }
    case RTE_FUNCTION: {
        ListCell *lc;
        foreach (lc, rte->functions) {
            RangeTblFunction *rtfunc = lfirst_node(RangeTblFunction, lc);
            if (!is_transparent_function(rtfunc->funcexpr)) {
                mark_unresolvable(set, "a function in FROM");
                return;
            }
        }
        foreach (lc, rte->functions)
            trace_expr(lfirst_node(RangeTblFunction, lc)->funcexpr, level, set);
        break;
    }
    case RTE_TABLEFUNC:
        mark_unresolvable(set, "a table function in FROM");
        break;
    case RTE_NAMEDTUPLESTORE:
        mark_unresolvable(set, "a transition table");
        break;
    case RTE_RESULT:
        break;
    }
}

// The sources of output column attno of a query (a subquery, a CTE, a set operation's leaf, the
// statement itself), traced at that query's level.
void trace_query_column(Query *query, AttrNumber attno, Level *parent, bool returning,
                        ColumnSet *set)
{
    check_stack_depth();
    if (!first_visit(set, query, attno))
        return;
    Level level = {query, parent, returning};
    if (query->setOperations != nullptr) {
        // Column attno of a set operation is column attno of every leaf.
        trace_setop_leaves(query->setOperations, &level, attno, set);
        return;
    }
    ListCell *lc;
    foreach (lc, output_list(query)) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        if (!tle->resjunk && tle->resno == attno) {
            trace_expr(reinterpret_cast<Node *>(tle->expr), &level, set);
            return;
        }
    }
}

struct TraceContext {
    Level *level;
    ColumnSet *set;
};

// UPDATE ... SET (a, b) = (SELECT x, y ...) assigns each column a PARAM_MULTIEXPR Param, whose id
// names the sublink (high 16 bits) and its output column (low 16): the sublink itself sits in a
// junk entry of the target list (or of ON CONFLICT DO UPDATE's).
void trace_multiexpr(Level *level, const Param *param, ColumnSet *set)
{
    const int sublink_id = param->paramid >> 16;
    const AttrNumber column = static_cast<AttrNumber>(param->paramid & 0xFFFF);
    Query *query = level->query;
    List *lists[] = {query->targetList, query->onConflict ? query->onConflict->onConflictSet : NIL};
    for (List *list : lists) {
        ListCell *lc;
        foreach (lc, list) {
            Node *expr = reinterpret_cast<Node *>(lfirst_node(TargetEntry, lc)->expr);
            if (expr == nullptr || !IsA(expr, SubLink))
                continue;
            SubLink *sublink = reinterpret_cast<SubLink *>(expr);
            if (sublink->subLinkType == MULTIEXPR_SUBLINK && sublink->subLinkId == sublink_id &&
                sublink->subselect != nullptr && IsA(sublink->subselect, Query)) {
                trace_query_column(reinterpret_cast<Query *>(sublink->subselect), column, level,
                                   false, set);
                return;
            }
        }
    }
    mark_unresolvable(set, "a multiple-column assignment the analysis cannot follow");
}

bool trace_walker(Node *node, TraceContext *context)
{
    if (node == nullptr)
        return false;
    if (IsA(node, Param) && reinterpret_cast<Param *>(node)->paramkind == PARAM_MULTIEXPR) {
        trace_multiexpr(context->level, reinterpret_cast<Param *>(node), context->set);
        return false;
    }
    if (IsA(node, Var)) {
        Var *var = reinterpret_cast<Var *>(node);
        Level *level = context->level;
        for (Index i = 0; i < var->varlevelsup && level != nullptr; i++)
            level = level->parent;
        if (level == nullptr) {
            mark_unresolvable(context->set, "a reference the analysis cannot follow");
            return false;
        }
        trace_rte_column(level, var->varno, var->varattno, context->set);
        if (var->varattno > 0)
            trace_merged_partners(level, var, context->set);
        return false;
    }
    if (IsA(node, SubLink)) {
        // The tested expression, and every output of the subselect: an ARRAY(...) or scalar
        // sublink returns them, and an IN/ANY/EXISTS result depends on them.
        SubLink *sublink = reinterpret_cast<SubLink *>(node);
        if (trace_walker(sublink->testexpr, context))
            return true;
        if (sublink->subselect != nullptr && IsA(sublink->subselect, Query))
            trace_all_query_columns(reinterpret_cast<Query *>(sublink->subselect), context->level,
                                    context->set);
        return false;
    }
    // count(x) does not look at x's value: what is computed with the count is not computed
    // with x (its lineage still leads to x, so the count is masked as x is).
    if (IsA(node, Aggref) && passes_value_through(node) && context->set->computing) {
        ColumnSet *set = context->set;
        const char *was_how = set->how;
        set->computing = false;
        bool stop = expression_tree_walker(node, WALKER(trace_walker), context);
        set->computing = true;
        set->how = was_how;
        return stop;
    }
    // A value computed by a function that can read the database is not traced through its
    // arguments: get_ssn(id) may return a masked column that no Var here names.
    if (check_functions_in_node(node, can_read_database, nullptr))
        mark_unresolvable(context->set,
                          "a function that can read any table (a user-defined function)");
    if (IsA(node, Query))
        return false; // only reached through sublinks, handled above
    return expression_tree_walker(node, WALKER(trace_walker), context);
}

void trace_expr(Node *expr, Level *level, ColumnSet *set)
{
    check_stack_depth();
    // Once a value is computed with, everything under it is: the context outlives this call only
    // as long as the expression being traced.
    const bool was_computing = set->computing;
    const char *was_how = set->how;
    if (!was_computing && !passes_value_through(expr)) {
        set->computing = true;
        set->how = value_use(expr);
    }
    TraceContext context = {level, set};
    (void)trace_walker(expr, &context);
    set->computing = was_computing;
    set->how = was_how;
}

// ------------------------------------------------------------------ uses

// What a statement does with columns besides returning them, gathered over every query level:
// - predicates: the columns it compares (WHERE, JOIN ON, GROUP BY, HAVING, ORDER BY, DISTINCT (ON
//   or not), set operations but UNION ALL, window PARTITION BY / ORDER BY, LIMIT / OFFSET, the
//   arguments of functions in FROM, ON CONFLICT targets, MERGE conditions), and the columns a
//   constraint compares when a write assigns a value (add_constraint_comparisons);
// - unselected: columns computed with in expressions that run although no output shows them: every
//   output of a CTE (computed whole), and set-returning or volatile expressions in the outputs of
//   subqueries (the planner keeps those even when nothing above uses them);
// - writes: for each column a write assigns (at any level: data-modifying CTEs and rule actions
//   too), the columns its value comes from.
// Row-level security quals and WITH CHECK options are the database's own and are not walked.
struct Uses {
    ColumnSet predicates;
    ColumnSet unselected;
    int nwrites;
    int writes_capacity;
    WriteLineage *writes;
};

void collect_uses(Query *query, Level *parent, Uses *uses, bool is_cte);

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

void trace_sort_group(List *clauses, List *targetList, Level *level, ColumnSet *set)
{
    ListCell *lc;
    foreach (lc, clauses) {
        SortGroupClause *clause = lfirst_node(SortGroupClause, lc);
        trace_expr(get_sortgroupclause_expr(clause, targetList), level, set);
    }
}

void trace_jointree_quals(Node *node, Level *level, ColumnSet *set)
{
    if (node == nullptr)
        return;
    if (IsA(node, FromExpr)) {
        FromExpr *from = reinterpret_cast<FromExpr *>(node);
        trace_expr(from->quals, level, set);
        ListCell *lc;
        foreach (lc, from->fromlist)
            trace_jointree_quals(static_cast<Node *>(lfirst(lc)), level, set);
    } else if (IsA(node, JoinExpr)) {
        JoinExpr *join = reinterpret_cast<JoinExpr *>(node);
        trace_expr(join->quals, level, set);
        trace_jointree_quals(join->larg, level, set);
        trace_jointree_quals(join->rarg, level, set);
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
void trace_unselected(Query *query, Level *level, bool is_cte, ColumnSet *set)
{
    ListCell *lc;
    foreach (lc, output_list(query)) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        Node *expr = reinterpret_cast<Node *>(tle->expr);
        if (!tle->resjunk &&
            (is_cte || expression_returns_set(expr) || contain_volatile_functions(expr)))
            trace_expr(expr, level, set);
    }
}

// A write of a guessed value that conflicts or fails tells whether some row holds it: a unique or
// exclusion index or a check constraint over the written column compares it, and a foreign key
// compares the referenced column. Those columns are predicates.
bool expression_uses_column(const char *node_text, AttrNumber attno)
{
    if (node_text == nullptr)
        return false;
    Bitmapset *columns = nullptr;
    pull_varattnos(static_cast<Node *>(stringToNode(node_text)), 1, &columns);
    return bms_is_member(attno - FirstLowInvalidHeapAttributeNumber, columns);
}

bool index_compares(Oid index_oid, AttrNumber attno)
{
    HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
    if (!HeapTupleIsValid(tuple))
        return false;
    Form_pg_index index = reinterpret_cast<Form_pg_index>(GETSTRUCT(tuple));
    bool compares = false;
    if (index->indisunique || index->indisexclusion) {
        for (int k = 0; k < index->indnatts && !compares; k++)
            compares = index->indkey.values[k] == attno;
        const int parts[] = {Anum_pg_index_indexprs, Anum_pg_index_indpred};
        for (int part : parts) {
            bool isnull;
            Datum value = SysCacheGetAttr(INDEXRELID, tuple, part, &isnull);
            compares =
                compares || (!isnull && expression_uses_column(TextDatumGetCString(value), attno));
        }
    }
    ReleaseSysCache(tuple);
    return compares;
}

void add_constraint_comparisons(Oid relid, AttrNumber attno, ColumnSet *predicates)
{
    Relation rel = relation_open(relid, AccessShareLock);
    bool compared = false;
    ListCell *lc;
    foreach (lc, RelationGetIndexList(rel))
        compared = compared || index_compares(lfirst_oid(lc), attno);
    TupleConstr *constr = RelationGetDescr(rel)->constr;
    for (int c = 0; constr != nullptr && c < constr->num_check && !compared; c++)
        compared = expression_uses_column(constr->check[c].ccbin, attno);
    if (compared)
        add_column(predicates, relid, attno);
    foreach (lc, RelationGetFKeyList(rel)) {
        ForeignKeyCacheInfo *fk = lfirst_node(ForeignKeyCacheInfo, lc);
        for (int k = 0; k < fk->nkeys; k++)
            if (fk->conkey[k] == attno)
                add_column(predicates, fk->confrelid, fk->confkey[k]);
    }
    relation_close(rel, AccessShareLock);
}

// Each column a write assigns: its value's lineage; and what its constraints compare.
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
            add_constraint_comparisons(relid, tle->resno, &uses->predicates);
        }
    }
}

void collect_uses(Query *query, Level *parent, Uses *uses, bool is_cte)
{
    check_stack_depth();
    Level level = {query, parent, false};
    ColumnSet *set = &uses->predicates;

    trace_jointree_quals(reinterpret_cast<Node *>(query->jointree), &level, set);
    trace_expr(query->havingQual, &level, set);
    // A row count computed from a column tells as much as a filter on it.
    trace_expr(query->limitCount, &level, set);
    trace_expr(query->limitOffset, &level, set);
    trace_sort_group(query->groupClause, query->targetList, &level, set);
    trace_sort_group(query->sortClause, query->targetList, &level, set);
    // DISTINCT (ON or not) compares the values it keeps apart, as GROUP BY does: how many rows
    // come back tells whether they were equal.
    trace_sort_group(query->distinctClause, query->targetList, &level, set);
    // So do UNION, INTERSECT and EXCEPT (all but UNION ALL), over every column of every leaf.
    if (query->setOperations != nullptr && set_operation_compares(query->setOperations))
        trace_setop_leaves(query->setOperations, &level, 0, set);
    ListCell *lc;
    foreach (lc, query->windowClause) {
        WindowClause *wc = lfirst_node(WindowClause, lc);
        trace_sort_group(wc->partitionClause, query->targetList, &level, set);
        trace_sort_group(wc->orderClause, query->targetList, &level, set);
    }
    if (query->onConflict != nullptr) {
        // ON CONFLICT (ssn) finds the row that holds the caller's value: a comparison.
        trace_expr(reinterpret_cast<Node *>(query->onConflict->arbiterElems), &level, set);
        trace_expr(query->onConflict->arbiterWhere, &level, set);
        trace_expr(query->onConflict->onConflictWhere, &level, set);
    }
    foreach (lc, query->mergeActionList)
        trace_expr(lfirst_node(MergeAction, lc)->qual, &level, set);
    if (parent != nullptr)
        trace_unselected(query, &level, is_cte, &uses->unselected);
    collect_writes(query, &level, uses);

    // The queries below this one.
    foreach (lc, query->cteList) {
        CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);
        if (cte->ctequery != nullptr && IsA(cte->ctequery, Query))
            collect_uses(reinterpret_cast<Query *>(cte->ctequery), &level, uses, true);
    }
    SublinkContext context = {&level, uses};
    foreach (lc, query->rtable) {
        RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
        switch (rte->rtekind) {
        case RTE_SUBQUERY:
            collect_uses(rte->subquery, &level, uses, false);
            break;
        case RTE_FUNCTION: {
            // The arguments of a function in FROM decide how many rows it makes:
            // generate_series(1, salary / 1000) counts a masked column out loud.
            ListCell *fc;
            foreach (fc, rte->functions)
                trace_expr(lfirst_node(RangeTblFunction, fc)->funcexpr, &level, set);
            (void)sublink_walker(reinterpret_cast<Node *>(rte->functions), &context);
            break;
        }
        case RTE_TABLEFUNC:
            trace_expr(reinterpret_cast<Node *>(rte->tablefunc), &level, set);
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
    // Sublinks in the query's own expressions (not the range table, the CTEs or its RLS checks).
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
        (void)sublink_walker(part, &context);
    foreach (lc, query->windowClause) {
        WindowClause *wc = lfirst_node(WindowClause, lc);
        (void)sublink_walker(wc->startOffset, &context);
        (void)sublink_walker(wc->endOffset, &context);
    }
}

// ------------------------------------------------------------------ results

SourceColumn *named_columns(const ColumnSet *set)
{
    SourceColumn *out = static_cast<SourceColumn *>(palloc0(sizeof(SourceColumn) * Max(set->n, 1)));
    for (int i = 0; i < set->n; i++) {
        Oid relid = set->cols[i].relid;
        out[i].relid = relid;
        out[i].attnum = set->cols[i].attnum;
        char *schema = get_namespace_name(get_rel_namespace(relid));
        char *table = get_rel_name(relid);
        char *column = get_attname(relid, set->cols[i].attnum, true);
        out[i].schema = schema ? schema : pstrdup("?");
        out[i].table = table ? table : pstrdup("?");
        out[i].column = column ? column : psprintf("#%d", set->cols[i].attnum);
        out[i].computed = set->hows[i];
    }
    return out;
}

} // namespace

void analyze_query(const char *sql, int nparams, const Oid *param_types, Oid saved_by,
                   QueryAnalysis *out)
{
    memset(out, 0, sizeof(*out));

    ErrorContextCallback callback;
    callback.callback = analysis_error_callback;
    callback.arg = const_cast<char *>(sql);
    callback.previous = error_context_stack;
    error_context_stack = &callback;

    List *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
    if (list_length(raw) != 1)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("a saved query must be exactly one SQL statement"),
                        errdetail("The text holds %d statements.", list_length(raw))));
    Query *query =
        parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, param_types, nparams, nullptr);
    if (query->commandType == CMD_UTILITY)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("a saved query must be SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE")));

    // Before rewrite: whose code it runs (code_trust.hpp), what it names (views as themselves),
    // what it writes, and whether it calls a function that reads the database by itself.
    out->untrusted =
        untrusted_code(query, GetUserId(), saved_by, param_types, nparams, &out->trust_depends);
    out->reads_database =
        first_function_where(reinterpret_cast<Node *>(query), function_reads_database);
    RelationCollector named = {0, 0, nullptr, 0};
    (void)relation_walker(reinterpret_cast<Node *>(query), &named);
    out->nrelations = named.n;
    out->relations = static_cast<RelationRef *>(palloc0(sizeof(RelationRef) * Max(named.n, 1)));
    for (int i = 0; i < named.n; i++) {
        out->relations[i].relid = named.oids[i];
        char *schema = get_namespace_name(get_rel_namespace(named.oids[i]));
        char *name = get_rel_name(named.oids[i]);
        out->relations[i].schema = schema ? schema : pstrdup("?");
        out->relations[i].name = name ? name : pstrdup("?");
    }
    out->write_ops = named.write_ops;
    out->returns_rows = query->commandType == CMD_SELECT || query->returningList != NIL;

    // After rewrite (views expanded; the rewriter works on this tree in place).
    List *rewritten = QueryRewrite(query);
    Query *top = nullptr;
    RelationCollector depends = {0, 0, nullptr, 0};
    Uses uses;
    memset(&uses, 0, sizeof(uses));
    ListCell *lc;
    foreach (lc, rewritten) {
        Query *q = lfirst_node(Query, lc);
        if (q->canSetTag && top == nullptr)
            top = q;
        (void)relation_walker(reinterpret_cast<Node *>(q), &depends);
        collect_uses(q, nullptr, &uses, false);
        if (out->writes_outside == nullptr)
            out->writes_outside =
                first_function_where(reinterpret_cast<Node *>(q), function_writes_outside);
    }
    out->ndepends = depends.n;
    out->depends = depends.oids ? depends.oids : static_cast<Oid *>(palloc0(sizeof(Oid)));
    // Statistics hold copies of column values (histogram bounds, most common values), which no
    // lineage can connect to the columns they were taken from: pg_stats, pg_stats_ext and
    // pg_stats_ext_exprs read these two.
    for (int i = 0; i < depends.n && out->value_copies == nullptr; i++)
        if (depends.oids[i] == StatisticRelationId || depends.oids[i] == StatisticExtDataRelationId)
            out->value_copies = psprintf("pg_catalog.%s", get_rel_name(depends.oids[i]));
    out->npredicates = uses.predicates.n;
    out->predicates = named_columns(&uses.predicates);
    out->predicate_unresolvable =
        uses.predicates.unresolvable ? pstrdup(uses.predicates.unresolvable) : nullptr;
    out->nunselected = uses.unselected.n;
    out->unselected = named_columns(&uses.unselected);
    out->nwrites = uses.nwrites;
    out->writes =
        uses.writes ? uses.writes : static_cast<WriteLineage *>(palloc0(sizeof(WriteLineage)));

    // The outputs: the statement's own target list (or RETURNING), as the client receives it.
    if (top != nullptr && out->returns_rows) {
        List *outputs = output_list(top);
        int n = 0;
        foreach (lc, outputs)
            if (!lfirst_node(TargetEntry, lc)->resjunk)
                n++;
        out->noutputs = n;
        out->outputs = static_cast<OutputLineage *>(palloc0(sizeof(OutputLineage) * Max(n, 1)));
        int i = 0;
        foreach (lc, outputs) {
            TargetEntry *tle = lfirst_node(TargetEntry, lc);
            if (tle->resjunk)
                continue;
            ColumnSet set;
            memset(&set, 0, sizeof(set));
            trace_query_column(top, tle->resno, nullptr, top->commandType != CMD_SELECT, &set);
            OutputLineage *o = &out->outputs[i++];
            o->name = pstrdup(tle->resname ? tle->resname : "?column?");
            o->nsources = set.n;
            o->sources = named_columns(&set);
            o->unresolvable = set.unresolvable ? pstrdup(set.unresolvable) : nullptr;
        }
    } else {
        out->outputs = static_cast<OutputLineage *>(palloc0(sizeof(OutputLineage)));
    }

    error_context_stack = callback.previous;
}
