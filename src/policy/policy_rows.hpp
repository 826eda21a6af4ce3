// A policy as the catalog holds it, read as text by one SELECT and decoded in one place into what
// the decision uses. The worker's cache (call/catalog_cache.cpp) and the administration functions
// (grant_query, save_query and explain, through catalog_read_policy_rows) read policies with these
// statements and this decoder, so they decide exactly alike.
#pragma once

#include "pg/pg_headers.hpp"
#include "policy/policy_decision.hpp"

#include <string>

// The policy's row: name, run_as (an oid), allowed_tables (oids joined by commas; NULL when the
// policy has no allow-list), write_ops (names joined by commas), mask_predicates, allow_superuser
// and history_params ("t" or "f"), statement_timeout (whole milliseconds; NULL when the policy has
// none), events ("t" or "f"), events_scope ("own" or "policy"),
// hash_scope (nullptr: the policy's own), adhoc ("t" or "f"), adhoc_write_ops (names joined by
// commas), adhoc_search_path (nullptr when ad-hoc SQL is off). Every function and operator
// schema-qualified: it runs in superuser sessions. Followed by nothing, or by a WHERE clause.
extern const char policy_rows_select[];
// The policies' mask rules: policy, pattern, action. Followed by a WHERE and ORDER BY clause.
extern const char mask_rows_select[];

enum PolicyColumn {
    POLICY_NAME,
    POLICY_RUN_AS,
    POLICY_ALLOWED_TABLES,
    POLICY_WRITE_OPS,
    POLICY_MASK_PREDICATES,
    POLICY_ALLOW_SUPERUSER,
    POLICY_HISTORY_PARAMS,
    POLICY_STATEMENT_TIMEOUT,
    POLICY_EVENTS,
    POLICY_EVENTS_SCOPE,
    POLICY_HASH_SCOPE,
    POLICY_ADHOC,
    POLICY_ADHOC_WRITE_OPS,
    POLICY_ADHOC_SEARCH_PATH,
    POLICY_COLUMNS
};

// One policy's row and its mask rules' (pattern, action) pairs, as C strings (nullptr for NULL),
// owned by the caller.
struct PolicyRow {
    const char *cells[POLICY_COLUMNS];
    int nmasks;
    const char *const *patterns;
    const char *const *actions;
};

struct DecodedPolicy {
    std::string name;
    Oid run_as = InvalidOid;
    bool allow_superuser = false;  // run_as may be privileged (role_rules.hpp)
    bool history_params = false;   // the run history keeps its callers' parameters
    long statement_timeout_ms = 0; // how long its calls may run; 0: querygate.statement_timeout
    bool events = false;           // its callers may watch GET /events (grant_events)
    // Its watchers see every caller's calls in their tenant, not only their own (events_scope).
    bool events_whole_policy = false;
    std::string hash_scope;        // a shared hash scope's name; empty: the policy's own
    PolicyRules rules;             // allow-list, writes, masks, mask_predicates
    bool adhoc = false;            // its callers may send their own SQL (grant_adhoc)
    std::string adhoc_search_path; // where an ad-hoc statement's names resolve
    PolicyRules adhoc_rules;       // rules, with write_ops = rules.write_ops & the ad-hoc ops
};

// Decodes a row. False, with the reason, when a part of it cannot be decoded (a mask rule that does
// not parse, which the functions that write it never store): such a policy must refuse every call,
// never serve it with a rule left out. Plain C++ over the texts; throws only std::bad_alloc.
bool decode_policy(const PolicyRow &row, DecodedPolicy &out, std::string &error);
