// Whether an expression hands a value through unchanged, and if not, what uses it.
//
// Under a masking policy a masked value may reach an answer only unchanged (then masked): anything
// that computes with it (an operator, a function, a cast, CASE, a comparison) makes the answer, an
// error or the time taken depend on the hidden value, and hashing or masking the result cannot
// hide that (`balance > :x` hashes to one of two values). PostgreSQL-style code.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "nodes/nodes.h"
}

// True for an expression that hands a value through unchanged: a column reference (a whole row
// included), under binary-compatible relabelings only (any other cast, implicit ones included, can
// fail for some values), count() of one (it does not look at the value), a scalar subquery (its
// output is judged where the subquery makes it), a constant or a parameter. Not a field of a
// composite column ((addr).zip): a mask applies to the whole value, and the same action on one
// field shows more of it (a zip code's first digit, which rows share a zip code).
bool passes_value_through(Node *expr);

// What expr does with the values under it, for a person: "lower()", "operator +", "CASE",
// "a cast to integer", "aggregate max()", ... palloc'd or static.
const char *value_use(Node *expr);
