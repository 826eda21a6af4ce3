// The audit log (querygate.audit): every change to a catalog table, who asked for it, through which
// administration function, the row before and after (never a secret). PostgreSQL side.
//
// The rows are written by a trigger on each catalog table (audit_change in the install script), in
// the same transaction as the change, so a change rolled back leaves none. The trigger asks
// querygate.audit_context() who made it. Inside an administration function the catalog is written
// as the bootstrap superuser (a catalog session, catalog_access.hpp), so the session tells this
// file, as it begins, whom it acts for and which function opened it. A change made to a table
// directly (by its owner or a superuser) is the current user's, with no function. Nothing is
// recorded while CREATE or ALTER EXTENSION runs: an install's own rows (the hash mask's secret) are
// not a change an administrator made.
//
// Why a session's record is checked against the transaction and subtransaction it began in: an
// error can end a catalog session without its end (the error unwinds past it), and a change made
// afterwards, directly, must not be put on that function's account.
#pragma once

#include "pg/pg_headers.hpp"

namespace audit {

// A catalog session begins on behalf of caller, for the SQL function called last
// (pg::last_sql_function). Nested sessions keep the outermost one's record.
void session_begin(Oid caller);
// The session ends.
void session_end();

} // namespace audit
