// Turns a saved query as an administrator writes it (:name placeholders) into what the workers
// prepare ($n parameters with inferred types), refusing at save time what could not run.
// PostgreSQL-style code: it reports problems with ereport(ERROR).
#pragma once

#include "pg/pg_headers.hpp"

struct AnalyzedQuery {
    char *prepared_sql; // the statement with $1..$n
    int nparams;
    char **param_names; // param_names[i] is $(i+1)
    Oid *param_types;
};

// Parses and analyzes sql in the caller's session (its search_path, its visible objects).
void analyze_saved_query(const char *sql, AnalyzedQuery *out);

// An error context callback (arg: the analyzed SQL text) that reports an error's position against
// that text, as SPI does, instead of against the SQL statement that called the analysis.
void analysis_error_callback(void *arg);

// The current search_path made explicit, as it will be stored with a saved query: "pg_catalog",
// then every schema the current path resolves to, in order ("$user" and names that exist now;
// pg_catalog and temporary schemas left out), then "pg_temp". pg_catalog first and pg_temp last
// mean neither a built-in nor a temporary object can be shadowed; resolving "$user" now means the
// path names the same schemas whichever role later runs the query. palloc'd.
char *explicit_search_path(void);

// explicit_search_path() of a search_path given as text (as SET search_path takes it) instead of
// the session's, for a setting stored beside saved queries' (grant_adhoc's search_path). Every
// schema it names must exist and be usable by the current user ("$user" and pg_temp excepted, as
// PostgreSQL excepts them): ERROR 3F000 or 42501 otherwise, where PostgreSQL would leave it out
// of the path without a word; ERROR 22023 for text that is not a list of names. palloc'd.
char *explicit_search_path_of(const char *path);

// True for a name reserved by the HTTP API (page, page_size, format).
bool is_reserved_param_name(const char *name);
