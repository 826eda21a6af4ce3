// The policy decision (rules/policy_checks.hpp) made about an analysis: its facts copied out of
// the palloc'd QueryAnalysis into plain data (query_facts::Statement), and the plain decision made
// over them. No PostgreSQL call in any of it, so the worker computes it once per (policy, query,
// plan) and explain, grant_query and mask show the same decision.
#pragma once

#include "rules/policy_checks.hpp"
#include "policy/query_analysis.hpp"

// The facts the decision reads, copied out of an analysis. No PostgreSQL call: reads the palloc'd
// data only, and throws only std::bad_alloc, so it is called from C++ code (or decide_plain), never
// between PostgreSQL calls where an ereport could jump over the containers it builds.
query_facts::Statement facts_of(const QueryAnalysis &analysis);

// decide() over the analysis' facts. Throws only std::bad_alloc.
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
// exception out of it: PostgreSQL-style code calls it.
void decide_plain(const QueryAnalysis *analysis, const PolicyRow *row, PlainDecision *out) noexcept;
