// Whose code a saved query runs as its policy's role.
//
// A call runs as the policy's run_as role R, so any code it runs acts with R's rights. The rule is
// that of SET ROLE: code may run as R only if its author could act as R anyway (a superuser or a
// member of R; role_rules.hpp). Tables and views count as PostgreSQL counts them: R reads them
// because their owners GRANTed it, which is trusting those owners (their triggers, policies and
// view bodies) in PostgreSQL already. Functions are different: EXECUTE is granted to PUBLIC by
// default, so calling a function says nothing about trusting its owner, whose next CREATE OR
// REPLACE would run as R. And names are resolved through the query's stored search_path at every
// plan, so whoever can create objects in one of its schemas could shadow what the query meant.
//
// So a statement is trusted for R when:
// - whoever saved it may act as R (the text and its search_path are theirs);
// - every schema named on the active search_path exists and lets only roles that may act as R
//   create in it (its owner and any role granted CREATE; PUBLIC never). Names are judged whether
//   or not R may use the schema today: a grant of USAGE later must not open a way in. pg_catalog is
//   first and pg_temp last in every stored path, so neither a built-in nor a temporary object can
//   be shadowed;
// - every user-defined function it calls (directly, as an operator or that operator's commutator
//   or negator, a cast, an aggregate and its support functions, a window function) is owned by a
//   role that may act as R. SECURITY DEFINER is no exemption: such a function still receives the
//   call's data and can change the session the rest of the call runs in;
// - every domain its values are coerced to (casts, parameters, column definition lists, arrays of
//   domains, domains over domains) is owned by such a role, since domain checks run as R;
// - SQL it hands to a built-in as text (query_to_xml, ts_stat, ts_rewrite) is a constant, and is
//   itself trusted: text chosen at run time would be code chosen by the caller.
// Built-ins are owned by the bootstrap superuser and are always trusted.
//
// PostgreSQL-style code: palloc'd plain data, may ereport.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "nodes/parsenodes.h"
}

// What the judgement looked at, so that a cache of it can tell which catalog changes make it stale:
// the user-defined functions and types (domains). Growable palloc'd arrays, deduplicated. (Schemas,
// operators and roles change rarely; a cache watches all of them.)
struct TrustDepends {
    int nfunctions, ntypes;
    Oid *functions, *types;
};

// nullptr when the analyzed statement (before rewrite), saved by saved_by, with parameters of the
// given types, under the active search_path, is trusted for role; otherwise a palloc'd reason
// naming the role, schema, function or type that is not trusted. Fills depends (zeroed by the
// caller) with what it looked at, up to the first untrusted object.
char *untrusted_code(Query *query, Oid role, Oid saved_by, const Oid *param_types, int nparams,
                     TrustDepends *depends);
