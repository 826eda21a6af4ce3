// What a grant of a saved query to a policy requires, checked by grant_query and again by
// save_query for every policy a re-saved query is granted to (the HTTP workers check the same
// rules, through the policy decision, whenever they build a plan):
// - the policy's role is not a superuser or a BYPASSRLS role, unless the policy allows it;
// - whoever saved the query may act as the policy's role (role_rules.hpp): the query text and its
//   search_path are that role's choice, and they run with the policy's rights;
// - analyzed as the policy's role with the query's stored search_path, the statement runs only
//   code that role trusts (code_trust.hpp) and, under a table allow-list, touches only allowed
//   tables and calls no function that reads the database by itself.
// PostgreSQL-style code: ERROR 42501 naming what is wrong. Inside a catalog session; the caller has
// already been judged by catalog_require_policy_actor.
#pragma once

void check_grant(const char *policy, const char *query);

// That the policy's masks, as they now are, leave a query granted to it callable: mask() checks
// the granted queries they left callable before its rule (unless forced), so a mask never
// silently turns a granted query into one whose every call is refused. ERROR 42501 naming the
// query and why.
void check_masks_allow(const char *policy, const char *query);
// Whether the query, as the policy's masks now are, is callable: it can be analyzed and no mask_
// refusal applies. Never raises for the query's own problems (a subtransaction takes them).
bool masks_allow_now(const char *policy, const char *query);
