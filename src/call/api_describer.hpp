// What a caller may call (common/api_description.hpp), made from the worker's own plans and
// decisions, so that GET /openapi.json and GET /catalog describe exactly what a call would get:
// each query the caller's policy is granted, planned as the policy's role, left out when the
// policy refuses it (or it writes while querygate.allow_writes is off, or it takes a parameter
// from a token and the caller has a key), with the columns of its
// answer as the plan returns them and masked as the decision masks them. A query that cannot be
// planned now (a table dropped since it was saved) is left out too: each is planned in a
// subtransaction of its own, so one failure costs no other. And whether the policy takes SQL of
// its own, what that SQL may write, and which of MCP's SQL tools' names a granted query keeps.
#pragma once

#include "call/authenticate.hpp"
#include "call/catalog_cache.hpp"
#include "call/plan_cache.hpp"
#include "common/api_description.hpp"

// Inside a transaction, as the worker's own user; throws pg::PgError only when the transaction
// itself fails.
void describe_api(CatalogCache &cache, PlanCache &plans, const Caller &caller,
                  api_description::Api &out);
