// A join's columns in a value's lineage (lineage.hpp): a join's column is its alias expansion,
// and a merged USING column is the column of both inputs, whichever side's value the join returns.
// Internal to the analysis.
//
// PostgreSQL-style code: palloc'd plain data only, so ereport may jump out of any of it.
#pragma once

#include "policy/lineage.hpp"

namespace lineage {

// Column attno (> 0) of a join RTE (rtindex at the level): its alias expansion, and for a merged
// (USING) column, the column of both inputs.
void trace_join_column(Level *level, int rtindex, RangeTblEntry *rte, AttrNumber attno,
                       ColumnSet *set);
// The parser resolves a merged USING column of an inner, left or right join to the Var of one
// input, leaving no mark of the join; yet its value stands for both inputs' columns. So a Var
// (varattno > 0) that is the expansion of a join's merged column at its level also derives from
// the other input's column.
void trace_merged_partners(Level *level, Var *var, ColumnSet *set);

} // namespace lineage
