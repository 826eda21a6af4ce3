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
// PostgreSQL-style code: palloc'd plain data only, so ereport may jump out of any of it.
#pragma once

#include "pg/pg_headers.hpp"
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

struct ColumnRef {
    Oid relid;
    AttrNumber attnum;
};

// The names one value read from a table goes by (HeldValue in query_analysis.hpp): the column, the
// same-named column of each of its table's ancestors, and the columns of the views and
// materialized views it was read through.
struct ValueNames {
    int n;
    ColumnRef *cols;
};

// A field of a whole row (a composite value): what reaches it, as made and held in ColumnSet.
struct Field {
    const char *made;
    List *held;
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
// the first such use (hows[i]; NULL: it only ever passed through). params: the statement's
// parameters ($n, as n) met on the way, for the run history (param_uses in column_uses.hpp).
// made: the first value met on the way that no column holds (a parameter, a constant, or what a
// computation made: value_use.hpp), for what a hash may carry (policy_decision.hpp); NULL: every
// value traced is a column's, passed through. held: the ValueNames of every value read from a
// table on the way (deduplicated), while `through` holds the view and materialized view columns
// (ColumnRef *) being traced through. fields: a Field for every field of a whole row met (their
// sources are the set's, their made values and held values are not). Zeroed to start.
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
    Bitmapset *params;
    const char *made;
    List *held;
    List *through;
    List *fields;
};

void add_column(ColumnSet *set, Oid relid, AttrNumber attnum);
// Adds every column of `from` to `to`, with what computed with it, and its reason to be
// unresolvable when `to` has none.
void add_columns(ColumnSet *to, const ColumnSet *from);
// The sources of an expression at a level.
void trace_expr(Node *expr, Level *level, ColumnSet *set);
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
// The set's columns with their names, palloc'd (at least one element).
SourceColumn *named_columns(const ColumnSet *set);

} // namespace lineage
