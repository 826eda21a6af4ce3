// The lineage of a value: see lineage.hpp.
#include "policy/lineage.hpp"
#include "policy/function_effects.hpp"
#include "policy/join_columns.hpp"
#include "policy/stored_copies.hpp"
#include "policy/tree_walker.hpp"
#include "policy/value_use.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <cstring>

namespace lineage {

// Helpers and the exposed functions (lineage.hpp) call each other in both directions, so the
// whole file is one namespace.

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

// The same rows under other names (stored_copies.hpp): a partition's or a child table's column is
// its ancestors' same-named column too, so a rule on a parent covers every partition and child
// read by its own name. Column attno of a table: a source, with its ancestors', and a value held.
void read_table_column(RangeTblEntry *rte, AttrNumber attno, ColumnSet *set)
{
    if (attno <= 0)
        return; // system columns (ctid, xmin, tableoid, ...) carry no table data
    add_column(set, rte->relid, attno);
    HeapTuple tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(rte->relid), Int16GetDatum(attno));
    if (!HeapTupleIsValid(tuple))
        elog(ERROR, "cache lookup failed for attribute %d of relation %u", attno, rte->relid);
    const Form_pg_attribute attribute = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));
    // A column no parent gives (a table's own, of a table that inherits nothing) is no ancestor's:
    // a partition's and a child's inherited columns count their parents (attinhcount), at every
    // level, so pg_inherits is read only for those.
    const bool from_parents = attribute->attinhcount > 0;
    const char *name = pstrdup(NameStr(attribute->attname));
    ReleaseSysCache(tuple);
    const List *ancestors = from_parents ? relation_ancestors(rte->relid) : NIL;
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

// Column attno of a table or materialized view at this level, and for a write, the values its
// RETURNING shows of the result relation, or EXCLUDED holds.
void trace_relation_column(Level *level, int rtindex, RangeTblEntry *rte, AttrNumber attno,
                           ColumnSet *set)
{
    Query *query = level->query;
    if (rte->relkind == RELKIND_MATVIEW) {
        // A materialized view is traced through its defining query, as a view's is; its own name
        // stays a source, so a rule on it applies as well.
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
}

// Column attno of a WITH query, traced at the level that defines it.
void trace_cte_column(Level *level, RangeTblEntry *rte, AttrNumber attno, ColumnSet *set)
{
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
        return;
    }
    Query *cte_query = reinterpret_cast<Query *>(found->ctequery);
    trace_query_column(cte_query, attno, owner, cte_query->commandType != CMD_SELECT, set);
}

// A column of functions in FROM: traced through their arguments when every one is transparent,
// else unresolvable.
void trace_function_column(Level *level, RangeTblEntry *rte, ColumnSet *set)
{
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
    case RTE_RELATION:
        trace_relation_column(level, rtindex, rte, attno, set);
        break;
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
    case RTE_CTE:
        trace_cte_column(level, rte, attno, set);
        break;
    case RTE_VALUES: {
        ListCell *row;
        foreach (row, rte->values_lists) {
            List *exprs = static_cast<List *>(lfirst(row));
            if (attno >= 1 && attno <= list_length(exprs))
                trace_expr(static_cast<Node *>(list_nth(exprs, attno - 1)), level, set);
        }
        break;
    }
    case RTE_FUNCTION:
        trace_function_column(level, rte, set);
        break;
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

} // namespace lineage
