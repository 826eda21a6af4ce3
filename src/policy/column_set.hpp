// What one trace of a value's lineage (lineage.hpp) gathers: the base columns found, with what
// computed with each on the way, the (query, column) pairs already traced, the parameters met, and
// the values held with the names each goes by; and the columns named for the analysis
// (SourceColumn in query_analysis.hpp). Internal to the analysis.
//
// PostgreSQL-style code: palloc'd plain data only, so ereport may jump out of any of it.
#pragma once

#include "pg/pg_headers.hpp"
#include "policy/query_analysis.hpp"

extern "C" {
#include "nodes/bitmapset.h"
#include "nodes/pg_list.h"
}

namespace lineage {

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
// computation made: value_use.hpp), for what a hash may carry (rules/policy_checks.hpp); NULL:
// every value traced is a column's, passed through. held: the ValueNames of every value read from a
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

// Adds a column, once, with what computes with it now (set->how, while set->computing).
void add_column(ColumnSet *set, Oid relid, AttrNumber attnum);
// Adds every column of `from` to `to`, with what computed with it, and its reason to be
// unresolvable when `to` has none.
void add_columns(ColumnSet *to, const ColumnSet *from);
// True the first time (node, index) is seen in this set, in this context (set->computing): a
// column first passed through may be computed with on another path.
bool first_visit(ColumnSet *set, const void *node, int index);
// Keeps the first reason the set's sources cannot be known.
void mark_unresolvable(ColumnSet *set, const char *reason);
// Holds the value read from column attnum of table relid (ValueNames): named by the column, then
// by its ancestors' same-named columns (nancestors of them), then by what the set is read through.
void hold_value(ColumnSet *set, Oid relid, AttrNumber attnum, const ColumnRef *ancestors,
                int nancestors);
// The set's columns with their names, palloc'd (at least one element).
SourceColumn *named_columns(const ColumnSet *set);

} // namespace lineage
