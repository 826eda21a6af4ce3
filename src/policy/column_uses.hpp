// What a statement does with columns besides returning them. Internal to the analysis
// (query_analysis.cpp).
#pragma once

#include "policy/lineage.hpp"

namespace lineage {

// What a statement does with columns besides returning them, gathered over every query level:
// - predicates: the columns it compares (WHERE, JOIN ON, GROUP BY, HAVING, ORDER BY, DISTINCT (ON
//   or not), set operations but UNION ALL, window PARTITION BY / ORDER BY, LIMIT / OFFSET, the
//   arguments of functions in FROM, ON CONFLICT targets, MERGE conditions);
// - unselected: columns computed with in expressions that run although no output shows them: every
//   output of a CTE (computed whole), and set-returning or volatile expressions in the outputs of
//   subqueries (the planner keeps those even when nothing above uses them);
// - writes: for each column a write assigns (at any level: data-modifying CTEs and rule actions
//   too), the columns its value comes from;
// - row_checks: what the database checks on each row a write or delete changes (row_checks.hpp);
// - met: for each of the statement's parameters, the columns it meets, for the run history (a
//   parameter's value is masked there as strictly as the columns it meets): those of each
//   predicate it is in (a conjunct of WHERE, JOIN ON or HAVING, a sort or group key, a function
//   argument in FROM, ...), the column a value it is in is assigned to and that value's sources,
//   and the sources of an output it is in (at any level, so also of a CTE's or a subquery's).
// Row-level security quals that filter rows are the database's own and are not walked (a WITH
// CHECK that fails a write is a row check).
struct Uses {
    ColumnSet predicates;
    ColumnSet unselected;
    int nwrites;
    int writes_capacity;
    WriteLineage *writes;
    List *row_checks; // RowCheck *: what the database checks on the rows written (row_checks.hpp)
    int nparams;      // set by the caller, with met: nparams zeroed sets
    ColumnSet *met;   // met[n - 1]: what $n meets
};

// The columns of one site (a predicate, an assigned value, an output) are met by every parameter
// in it; target, when not null, is the column the site's value is assigned to.
void meet(Uses *uses, const ColumnSet *site, const ColumnSet *target);

// Gathers the uses of a query and of every query below it. Zero *uses to start.
void collect_uses(Query *query, Level *parent, Uses *uses, bool is_cte);

} // namespace lineage
