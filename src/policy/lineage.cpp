// The lineage of a value: see lineage.hpp.
#include "policy/lineage.hpp"
#include "policy/function_effects.hpp"
#include "policy/stored_copies.hpp"
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

namespace lineage {

// Helpers and the exposed functions (lineage.hpp) call each other in both directions, so the
// whole file is one namespace.

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

void add_columns(ColumnSet *to, const ColumnSet *from)
{
    const bool was_computing = to->computing;
    const char *was_how = to->how;
    for (int i = 0; i < from->n; i++) {
        to->computing = from->hows[i] != nullptr;
        to->how = from->hows[i];
        add_column(to, from->cols[i].relid, from->cols[i].attnum);
    }
    to->computing = was_computing;
    to->how = was_how;
    if (to->unresolvable == nullptr)
        to->unresolvable = from->unresolvable;
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

// Adds a name to a ValueNames, once.
void add_name(ValueNames *names, int *capacity, const ColumnRef &name)
{
    for (int i = 0; i < names->n; i++)
        if (names->cols[i].relid == name.relid && names->cols[i].attnum == name.attnum)
            return;
    if (names->n == *capacity) {
        *capacity = *capacity ? *capacity * 2 : 8;
        names->cols = static_cast<ColumnRef *>(
            names->cols ? repalloc(names->cols, sizeof(ColumnRef) * *capacity)
                        : palloc(sizeof(ColumnRef) * *capacity));
    }
    names->cols[names->n++] = name;
}

// Keeps a value's names in the set, unless a value with the same names is kept already.
void keep_value(ColumnSet *set, ValueNames *names)
{
    ListCell *lc;
    foreach (lc, set->held) {
        const ValueNames *seen = static_cast<const ValueNames *>(lfirst(lc));
        bool same = seen->n == names->n;
        for (int i = 0; same && i < names->n; i++)
            same = seen->cols[i].relid == names->cols[i].relid &&
                   seen->cols[i].attnum == names->cols[i].attnum;
        if (same)
            return;
    }
    set->held = lappend(set->held, names);
}

// The names a value read from column attnum of table relid goes by (ValueNames): the column
// first, then its ancestors' same-named columns, then what it is read through.
void hold_value(ColumnSet *set, Oid relid, AttrNumber attnum, const ColumnRef *ancestors,
                int nancestors)
{
    ValueNames *names = static_cast<ValueNames *>(palloc0(sizeof(ValueNames)));
    int capacity = 0;
    ColumnRef column;
    column.relid = relid;
    column.attnum = attnum;
    add_name(names, &capacity, column);
    for (int i = 0; i < nancestors; i++)
        add_name(names, &capacity, ancestors[i]);
    ListCell *lc;
    foreach (lc, set->through)
        add_name(names, &capacity, *static_cast<ColumnRef *>(lfirst(lc)));
    keep_value(set, names);
}

// The same rows under other names (stored_copies.hpp): a partition's or a child table's column is
// its ancestors' same-named column too, so a rule on a parent covers every partition and child
// read by its own name. Column attno of a table: a source, with its ancestors', and a value held.
void read_table_column(RangeTblEntry *rte, AttrNumber attno, ColumnSet *set)
{
    if (attno <= 0)
        return; // system columns (ctid, xmin, tableoid, ...) carry no table data
    add_column(set, rte->relid, attno);
    const char *name = get_attname(rte->relid, attno, false);
    List *ancestors = relation_ancestors(rte->relid);
    ColumnRef *inherited =
        static_cast<ColumnRef *>(palloc0(sizeof(ColumnRef) * Max(list_length(ancestors), 1)));
    int n = 0;
    ListCell *lc;
    foreach (lc, ancestors) {
        const Oid parent = lfirst_oid(lc);
        const AttrNumber parent_attnum = get_attnum(parent, name);
        if (parent_attnum == InvalidAttrNumber)
            continue;
        add_column(set, parent, parent_attnum);
        inherited[n].relid = parent;
        inherited[n++].attnum = parent_attnum;
    }
    hold_value(set, rte->relid, attno, inherited, n);
    pfree(inherited);
}

// Output column attno of query, traced while `through` (a view's or materialized view's column,
// or nullptr) is what the values are read through.
void trace_query_through(Query *query, AttrNumber attno, Level *parent, Oid through, ColumnSet *set)
{
    if (OidIsValid(through)) {
        ColumnRef *ref = static_cast<ColumnRef *>(palloc0(sizeof(ColumnRef)));
        ref->relid = through;
        ref->attnum = attno;
        set->through = lappend(set->through, ref);
    }
    trace_query_column(query, attno, parent, false, set);
    if (OidIsValid(through))
        set->through = list_delete_last(set->through);
}

// Every column of RTE rtindex at this level as a field of a whole row: each traced into a set of
// its own (with what the enclosing trace computes with and reads through), its sources,
// parameters and reasons added to set, its made value and values kept as a Field of set (and the
// fields of a whole row within it too).
void trace_row_fields(Level *level, int rtindex, ColumnSet *set)
{
    Query *query = level->query;
    if (rtindex < 1 || rtindex > list_length(query->rtable)) {
        mark_unresolvable(set, "a reference the analysis cannot follow");
        return;
    }
    RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
    const int ncolumns = rte->eref != nullptr ? list_length(rte->eref->colnames) : 0;
    for (int k = 1; k <= ncolumns; k++) {
        // a dropped column keeps its place with an empty name
        if (strVal(list_nth(rte->eref->colnames, k - 1))[0] == '\0')
            continue;
        ColumnSet field;
        memset(&field, 0, sizeof(field));
        field.computing = set->computing;
        field.how = set->how;
        field.through = list_copy(set->through);
        // What the enclosing trace is visiting is visited here too: a recursive query's whole
        // row (`SELECT r::text FROM r` in r) ends its cycle as one column does.
        if (set->nvisited > 0) {
            field.visited =
                static_cast<VisitKey *>(palloc(sizeof(VisitKey) * set->visited_capacity));
            memcpy(field.visited, set->visited, sizeof(VisitKey) * set->nvisited);
            field.nvisited = set->nvisited;
            field.visited_capacity = set->visited_capacity;
        }
        trace_rte_column(level, rtindex, static_cast<AttrNumber>(k), &field);
        add_columns(set, &field);
        set->params = bms_add_members(set->params, field.params);
        Field *kept = static_cast<Field *>(palloc(sizeof(Field)));
        kept->made = field.made;
        kept->held = field.held;
        set->fields = lappend(set->fields, kept);
        set->fields = list_concat(set->fields, field.fields);
    }
}

// The sources of column attno (0: the whole row, field by field) of RTE rtindex at this level.
void trace_rte_column(Level *level, int rtindex, AttrNumber attno, ColumnSet *set)
{
    check_stack_depth();
    // A whole row is a composite: each of its fields is traced as a value of its own (Field), so
    // that what a hash may carry is judged field by field.
    if (attno == 0) {
        trace_row_fields(level, rtindex, set);
        return;
    }
    Query *query = level->query;
    if (rtindex < 1 || rtindex > list_length(query->rtable)) {
        mark_unresolvable(set, "a reference the analysis cannot follow");
        return;
    }
    RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
    switch (rte->rtekind) {
    case RTE_RELATION: {
        if (rte->relkind == RELKIND_MATVIEW) {
            // A materialized view is traced through its defining query, as a view's is; its own
            // name stays a source, so a rule on it applies as well.
            if (attno > 0) {
                add_column(set, rte->relid, attno);
                Query *defining = matview_query(rte->relid);
                if (defining == nullptr)
                    mark_unresolvable(set, "a materialized view whose query cannot be read");
                else
                    trace_query_through(defining, attno, level, rte->relid, set);
            }
        } else {
            read_table_column(rte, attno, set);
        }
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
        if (OidIsValid(view) && attno > 0)
            add_column(set, view, attno);
        trace_query_through(rte->subquery, attno, level, view, set);
        break;
    }
    case RTE_JOIN:
        trace_join_column(level, rtindex, rte, attno, set);
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
        trace_query_column(cte_query, attno, owner, cte_query->commandType != CMD_SELECT, set);
        break;
    }
    case RTE_VALUES: {
        ListCell *row;
        foreach (row, rte->values_lists) {
            List *exprs = static_cast<List *>(lfirst(row));
            if (attno >= 1 && attno <= list_length(exprs))
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
    if (IsA(node, Param) && reinterpret_cast<Param *>(node)->paramkind == PARAM_EXTERN) {
        ColumnSet *set = context->set;
        set->params = bms_add_member(set->params, reinterpret_cast<Param *>(node)->paramid);
        if (set->made == nullptr)
            set->made = "a parameter";
        return false;
    }
    // A null stays null under every mask, so it carries nothing.
    if (IsA(node, Const) && !reinterpret_cast<Const *>(node)->constisnull) {
        if (context->set->made == nullptr)
            context->set->made = "a constant";
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
    // An aggregate makes a value of its own, count(x) too: a count the caller steers by a filter
    // is a number it chooses.
    if (IsA(node, Aggref) && context->set->made == nullptr)
        context->set->made = value_use(node);
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
        if (set->made == nullptr)
            set->made = set->how;
    }
    TraceContext context = {level, set};
    (void)trace_walker(expr, &context);
    set->computing = was_computing;
    set->how = was_how;
}

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

} // namespace lineage
