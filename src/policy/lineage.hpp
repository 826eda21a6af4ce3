// The lineage of a value: the base-table columns it derives from, traced through the rewritten
// tree (views expanded) at every query level, and whether it was computed with on the way
// (value_use.hpp). Internal to the analysis (query_analysis.cpp, column_uses.cpp).
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
// What a trace gathers is column_set.hpp's; how a join's columns are traced, join_columns.hpp's.
//
// PostgreSQL-style code: palloc'd plain data only, so ereport may jump out of any of it.
#pragma once

#include "pg/pg_headers.hpp"
#include "policy/column_set.hpp"
#include "policy/query_analysis.hpp"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace lineage {

// A query level while tracing: Vars with varlevelsup > 0 name an RTE of an enclosing level.
// returning: the level's output list is its RETURNING list, whose Vars of the result relation
// hold the values written.
struct Level {
    Query *query;
    Level *parent;
    bool returning;
};

// The sources of an expression at a level.
void trace_expr(Node *expr, Level *level, ColumnSet *set);
// The sources of column attno (0: the whole row, field by field) of RTE rtindex at a level.
void trace_rte_column(Level *level, int rtindex, AttrNumber attno, ColumnSet *set);
// The sources of output column attno of a query (a subquery, a CTE, a set operation's leaf, the
// statement itself), traced at that query's level.
void trace_query_column(Query *query, AttrNumber attno, Level *parent, bool returning,
                        ColumnSet *set);
// Column attno (0: every column) of every leaf of a set operation tree.
void trace_setop_leaves(Node *node, Level *level, AttrNumber attno, ColumnSet *set);
// The value assigned to column attno (0: every column) of a write's result relation, by the
// write's target list, its ON CONFLICT DO UPDATE SET list, and its MERGE actions. The expressions
// are traced at the write's level as plain reads (their Vars of the result relation are the old
// values).
void trace_assigned_values(Level *level, AttrNumber attno, bool include_on_conflict,
                           ColumnSet *set);
// The list a query returns: its target list, or RETURNING for a write.
List *output_list(Query *query);

} // namespace lineage
