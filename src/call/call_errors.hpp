// What a call that failed with a PostgreSQL error answers its caller, and what the server log
// says of it.
//
// What it promises: a caller's own parameter value that its type refused is named back to the
// caller (400 param_invalid, with the type's message); an answer or export over its size, a stop
// request, a caller that hung up and the call's time limit are each said as what they are; for
// everything else the database's own message goes to the server log only (it may name tables,
// columns or values the caller may not see), and the caller hears its kind: 403 read_only,
// row_not_allowed or permission_denied, or 500 query_failed.
//
// Call it before the call's transaction is aborted (call_transaction.hpp): it reads what the
// failed call left (its cancel's cause), which the abort clears. Its log line is written under
// pg::HeldInterrupts, since the call's cancel may still be pending.
#pragma once

#include "call/adhoc_statements.hpp"
#include "call/catalog_cache.hpp"
#include "call/statement_run.hpp"
#include "common/api_error.hpp"
#include "common/call.hpp"
#include "pg/pg_guard.hpp"

// What the server log calls a call: its query's name, quoted, or "SQL a caller wrote" (an ad-hoc
// statement's name is the worker's own, and the statement's text is never logged).
std::string logged_name(const CallRequest &request);

// `query`: the query called, once found (else the request's name is logged); `progress`: how
// far its statement got.
ApiError call_error(const pg::PgError &e, const CallRequest &request, const CachedQuery *query,
                    const StatementRun::Progress &progress);

// SQL a caller wrote that PostgreSQL's scanner, parser or analyzer refused (`nparams`: its
// placeholders): 400 invalid_sql with PostgreSQL's message and hint, and where, when the text as
// run is the caller's (no placeholders); or, for an error that could tell whether something the
// caller may not see exists (adhoc_hides_error), the answer a refused name has.
ApiError adhoc_error(const pg::PgError &e, std::size_t nparams);
// What an ad-hoc statement's checks refused, as the caller hears it; none when they allow it.
ApiError adhoc_refusal(const AdhocStatement &statement);
