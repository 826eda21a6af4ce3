// The checks an ad-hoc statement (SQL a caller writes: POST /sql) passes before it is planned,
// beyond those every saved query passes (policy_decision.hpp). A saved query is written by an
// administrator; an ad-hoc one by the caller, who may write it to learn what its policy hides: that
// a table exists, what a catalog holds, a role's name. So:
//
// - Names: every relation the statement names must be on its policy's allow-list, and a name that
//   is not, or that names nothing, is refused with one answer (refused_name, at the name's place),
//   whichever it is. The reg* types (regclass, regrole, ...) turn a text into a catalog lookup and
//   an oid into a name: no expression of one may appear, and a lookup that fails while the
//   statement is analysed is refused with that same answer (adhoc_hides_error).
// - Functions: a built-in that is not immutable may read the catalogs or the server's settings
//   (current_setting, pg_get_viewdef, has_table_privilege, pg_relation_size, ...): only those
//   listed in adhoc_statement.cpp, and those that are stable only because dates and times depend
//   on the time zone, are allowed; so are current_date and its kin, not current_user and its kin.
//   A function that is not built-in can read any table (function_effects.hpp), so a policy with
//   an allow-list never runs one: it is refused as a name, as one that does not exist is, so that
//   a caller cannot tell which functions exist. System columns (ctid, xmin, tableoid) are refused
//   as names too: where a row is kept, who wrote it, which partition holds it.
// - Form: one SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE.
//
// PostgreSQL-style code: runs inside the call's transaction, as the policy's role, with the
// statement's search_path; ereports what PostgreSQL's parser and analyzer refuse.
#pragma once

#include "pg/pg_headers.hpp"

#include "policy/query_analysis.hpp"

enum AdhocRefusal {
    ADHOC_ALLOWED = 0,
    ADHOC_NOT_ONE_STATEMENT, // not exactly one statement of the kinds above
    ADHOC_REFUSED_NAME,      // a relation not allowed or not there, a reg* lookup, a system
                             // column, a function that is not built-in
    ADHOC_REFUSED_FUNCTION,  // a function the statement may not call
};

struct AdhocChecked {
    AdhocRefusal refusal;
    int position;   // where in the prepared text (a character, from 1); 0: not known
    char *function; // ADHOC_REFUSED_FUNCTION: its name, as "name()"
    Oid *param_types;
    // ADHOC_ALLOWED: the statement parsed and analysed (with those parameter types), for its
    // plan and the policy's analysis to start from in the same transaction (PlanCache::plan_for).
    ParsedStatement parsed;
};

// Parses and analyses `prepared_sql` ($1..$nparams), inferring the parameters' types, and checks
// it against the policy's allow-list (`allowed`, `nallowed` relations). An error of PostgreSQL's
// parser or analyzer is raised as it is (see adhoc_hides_error).
void check_adhoc_statement(const char *prepared_sql, int nparams, const Oid *allowed, int nallowed,
                           AdhocChecked *out);

// Whether an error raised while an ad-hoc statement is scanned, parsed or analysed is about its
// text (its syntax, names, types, or a limit it is past: SQLSTATE classes 42, 22, 0A, 54, 3F), and
// so the caller's to hear; else it is about the call (a cancel, a stop, memory), answered as any
// call's.
bool adhoc_statement_error(int sqlerrcode);

// Whether an error raised by check_adhoc_statement (its SQLSTATE, as ERRCODE_*) may say whether
// something exists that the caller may not see (a relation, a role, a schema or a type that a
// reg* lookup or a qualified name did not find): it is then answered as a refused name.
bool adhoc_hides_error(int sqlerrcode);
