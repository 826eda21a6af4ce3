// What the database checks on each row a write changes, beside the statement: CHECK constraints,
// unique and exclusion indexes (their columns, expressions and predicates), foreign keys both
// ways, stored generated columns, row-level security's WITH CHECK, and triggers. A call whose
// outcome (a row written, or an error) depends on such a check learns what the check compared:
// `UPDATE staff SET cap = :cap` under `CHECK (salary <= cap)` answers 200 or 500 as :cap passes the
// hidden salary. So every column a check reads is a use of that column, refused under a masking
// policy like a predicate (rules/policy_checks.cpp, mask_predicate). Internal to the analysis
// (column_uses.cpp calls it for every write at every level).
#pragma once

#include "policy/query_analysis.hpp"

extern "C" {
#include "nodes/bitmapset.h"
#include "nodes/pg_list.h"
}

namespace row_checks {

enum class Write { insert, update, remove };

// Appends to *checks (a List of RowCheck *) the checks a write of kind `write` on relid makes.
// `assigned`: the attribute numbers the write assigns (an update's SET list; an insert assigns
// every column, a delete none).
void collect(Oid relid, Write write, const Bitmapset *assigned, List **checks);

} // namespace row_checks
