// Nothing a call does outlives it.
//
// A worker is one PostgreSQL session that serves every caller of every policy, one call after
// another, so whatever a call leaves in the session is seen by the next caller: a setting changed
// with set_config(..., false) (search_path, request.jwt.claims, row_security), a session-level
// advisory lock, a prepared statement, a cursor WITH HOLD, a temporary table, the sequence values
// currval() and lastval() return, the seed of random(). (LISTEN would be one too; PostgreSQL
// refuses it in any background process.) And a read call runs in a
// read-only transaction, which does not stop every write: a notification, a large object or
// anything else that assigns a transaction id gets through.
//
// So each call is bracketed:
// - call_hygiene_begin, inside the call's transaction before any of its SQL runs: forgets what only
//   this session could see of earlier calls (prepared statements, sequence state), reseeds
//   random() from the server's generator, and opens the GUC nest level the call runs in;
// - call_hygiene_end, after its statement ran and before commit: refuses (ERROR 25006, answered as
//   403 read_only) a read call that assigned a transaction id or queued a notification, refuses
//   any call that created a temporary object, closes cursors it declared WITH HOLD (commit would
//   otherwise materialise them), and undoes every setting the call changed, session-level ones
//   included;
// - call_hygiene_after, once the transaction has ended either way: releases session-level advisory
//   locks, which survive both commit and abort.
// An aborted call needs nothing more: abort undoes settings, temporary objects, notifications and
// cursors itself.
//
// PostgreSQL-style code: call inside pg::guard; may ereport.
#pragma once

// Returns the GUC nest level to pass to call_hygiene_end.
int call_hygiene_begin(void);
// read_only: the call ran in a read-only transaction.
void call_hygiene_end(int guc_nest_level, bool read_only);
void call_hygiene_after(void);
