// Whose code a saved query runs as its policy's role.
//
// A call runs as the policy's run_as role R, so any code it runs acts with R's rights. The rule is
// that of SET ROLE: code may run as R only if its author could act as R anyway (a superuser or a
// member of R). Tables and views count as PostgreSQL counts them: R reads them because their
// owners GRANTed it, which is trusting those owners (their triggers, policies and view bodies) in
// PostgreSQL already. Functions are different: EXECUTE is granted to PUBLIC by default, so calling a
// function says nothing about trusting its owner, whose next CREATE OR REPLACE would run as R. And
// names are resolved through the query's stored search_path at every plan, so whoever can create
// objects in one of its schemas could shadow what the query meant.
//
// So a statement is trusted for R when:
// - every schema on the active search_path (pg_catalog is first and pg_temp last: built-ins and
//   temporary objects cannot be shadowed) lets only roles that can act as R create in it (the
//   owner, and any role granted CREATE; PUBLIC never);
// - every user-defined function it calls (directly, as an operator, a cast, an aggregate and its
//   support functions) is SECURITY DEFINER (it runs as its owner, not as R) or owned by a role that
//   can act as R; and every domain it coerces to is owned by such a role (domain checks run as R).
// Built-ins are owned by the bootstrap superuser and are always trusted.
//
// PostgreSQL-style code: palloc'd plain data, may ereport.
#pragma once

#include "pg_headers.hpp"
extern "C" {
#include "nodes/parsenodes.h"
}

// What the judgement looked at, so that a cache of it can tell which catalog changes make it stale:
// the schemas of the search_path, the user-defined functions and the domains. Growable palloc'd
// arrays, deduplicated.
struct TrustDepends {
    int nschemas, nfunctions, ndomains;
    Oid *schemas, *functions, *domains;
};

// nullptr when the analyzed statement (before rewrite) and the active search_path are trusted for
// role; otherwise a palloc'd reason naming the schema or function and the role that is not trusted.
// Fills depends (zeroed by the caller) with what it looked at, up to the first untrusted object.
char *untrusted_code(Query *query, Oid role, TrustDepends *depends);
