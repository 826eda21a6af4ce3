// What a statement does with columns besides returning them. Internal to the analysis
// (query_analysis.cpp).
#pragma once

#include "policy/lineage.hpp"

namespace lineage {

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

// Gathers the uses of a query and of every query below it. Zero *uses to start.
void collect_uses(Query *query, Level *parent, Uses *uses, bool is_cte);

} // namespace lineage
