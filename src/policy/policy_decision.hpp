// What a policy decides about an analyzed query: refused (and why, with the API's code), or allowed
// with one masking action per output column. Plain C++ over a QueryAnalysis: no PostgreSQL call,
// so the worker computes it once per (policy, query, plan) and explain shows the same decision.
#pragma once

#include "common/api_error.hpp"
#include "rules/mask_rules.hpp"
#include "policy/query_analysis.hpp"

#include <string>
#include <vector>

struct PolicyRules {
    bool has_allowed_tables = false;
    std::vector<Oid> allowed_tables;
    int write_ops = 0; // WriteOp bits the policy may use
    std::vector<masking::Rule> masks;
    bool mask_predicates_allowed = false;
};

struct PolicyDecision {
    // Unset (status 0) when allowed; else error_code::untrusted_code, table_not_allowed,
    // write_op_not_allowed, read_only, mask_unresolvable, mask_expression, mask_hash_input or
    // mask_predicate (all HTTP 403), with a message for the caller naming the table, column or
    // function.
    ErrorCode refusal{0, ""};
    std::string refusal_message;
    // One per QueryAnalysis output, in order.
    std::vector<masking::Action> column_actions;
    // One per parameter, in order: how its value is masked in the run history, the strictest
    // action over the columns it meets (drop when one of them cannot be known and the policy
    // masks anything).
    std::vector<masking::Action> param_actions;

    bool refused() const { return refusal.status != 0; }
};

// Checks, in this order: code the policy's role does not trust, the table allow-list (relations and
// functions that read the database), the write operations (and, for a read, functions that write
// anyway), then, only when the policy has any mask rule, unresolvable output columns, statistics,
// masked columns computed with on their way to an output or an assignment (unless allowed),
// masked columns in predicates (unless allowed) and hashed outputs that can carry another value
// (unless allowed); and
// the strictest matching mask action for each output column, over all of its sources.
PolicyDecision decide(const QueryAnalysis &analysis, const PolicyRules &rules);

// The decision made from a policy's catalog row (policy_rows.hpp) as plain data, so that
// grant_query, save_query and explain decide exactly as a worker does.
struct PolicyRow;
struct PlainDecision {
    bool failed; // the decision itself failed (message in message)
    char code[64];
    char message[1024];
    masking::Action *actions;       // one per output, allocated by the caller (or nullptr)
    masking::Action *param_actions; // one per parameter, likewise
};

// decide() over a policy's row, decoded by decode_policy. No PostgreSQL call in it, and no
// exception out of it.
void decide_plain(const QueryAnalysis *analysis, const PolicyRow *row, PlainDecision *out) noexcept;
