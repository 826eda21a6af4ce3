// What a function does besides computing its result from its arguments, as far as governance cares:
// whether it can read the database by itself (so neither a table allow-list nor masking by lineage
// can see what it returns), and whether it writes somewhere a read-only transaction does not stop
// (so a read call must not run it). PostgreSQL-style code: plain data, may ereport.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "nodes/nodes.h"
}

// True for a function whose result can hold any value the role may read: every user-defined
// function (its body can read any table; so can a user-defined operator, aggregate or type's I/O),
// and the built-ins that run SQL given as text, read whole tables, large objects, logical decoding
// or the server's files (query_to_xml, table_to_xml, ts_stat, ts_rewrite, lo_get, pg_read_file,
// pg_logical_slot_get_changes, ...).
bool function_reads_database(Oid funcid);

// True for a built-in that writes where XactReadOnly does not reach: notifications, logical
// decoding messages, large objects, replication slots and origins, index summaries, statistics
// resets, WAL switches, transaction ids (txid_current assigns one, which a commit record then
// writes).
bool function_writes_outside(Oid funcid);

// For a built-in that runs SQL given as text (query_to_xml, ts_stat, ts_rewrite), the index of the
// argument that holds it; -1 for any other function. That SQL is code too (code_trust.hpp).
int sql_text_argument(Oid funcid);

// The first function in node (a Query or an expression, walked whole: sublinks, subqueries, CTEs,
// functions in FROM) for which test returns true, as "name()"; nullptr when there is none.
// The tree is the caller's: views are not expanded here.
char *first_function_where(Node *node, bool (*test)(Oid funcid));
