// Whether the current user holds the privileges a statement needs on its tables and views, as
// the executor checks them at every call (ExecCheckRTPerms: table or column privileges, views
// through their owners'). A policy whose role lacks one would answer every call 403
// permission_denied without saying why to its caller; so grant_query warns with the table and
// the privilege named, explain shows them, and the API's description leaves the query out.
// Functions' EXECUTE and sequences' USAGE are checked as the statement runs, not here.
//
// PostgreSQL-style code: palloc'd, may ereport.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "nodes/pg_list.h"
}

// The first privilege missing, as "SELECT on public.films", over the rewritten statement (every
// level: subqueries, sublinks, CTEs); nullptr when the current user has them all.
char *first_missing_privilege(List *rewritten);
