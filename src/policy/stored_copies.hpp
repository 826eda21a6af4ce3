// The same rows under another name: a partition or a child table holds rows of its ancestors
// (partitioned tables, inheritance parents), and a materialized view holds what its defining query
// returned. A mask on the original must cover the copy, present and future (lineage.cpp adds
// the ancestors' columns and traces a materialized view's query, as a view's).
// PostgreSQL-style code: ereports on error, allocates in CurrentMemoryContext.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
}

// Every table relid inherits from, at any depth, each once, nearest first (an OID list; NIL for a
// table with none). Read from pg_inherits, so a partition attached later has its parent's from then
// on (the attach invalidates the relation, and so every analysis that read it). Read once per
// command of the transaction: an analysis asks again at every column of the table it reads. The
// list is shared by those asking: read it, do not change it.
const List *relation_ancestors(Oid relid);

// The defining query of materialized view relid, with the views it reads expanded as the planner
// would (the rewriter), or nullptr when it cannot be read.
Query *matview_query(Oid relid);
