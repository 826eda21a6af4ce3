// The worker's kept plans: one per (saved query, run_as role), prepared as that role with the
// query's search_path, with the analysis the policies' decisions are made from, and per policy the
// decision itself. Beside the catalog cache (catalog_cache.hpp), which holds the catalog's rows.
//
// What makes an entry stale: a new revision of the query (re-plan and re-analyze); a change to a
// relation, function, type, schema, operator or role its analysis depends on (re-analyze: the
// syscache and relcache callbacks registered by start() bump an epoch); a catalog reload (new
// decisions). PostgreSQL itself re-plans a kept plan when a table it uses changes.
//
// An entry is replaced only whole: a new plan and analysis are made into locals, published when
// both are done, and the old ones freed after that. A failure (a dropped table, a revoked USAGE)
// leaves the entry as it was, so no later call can free or run what was already freed.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "executor/spi.h"
}

#include "call/catalog_cache.hpp"
#include "policy/policy_decision.hpp"
#include "policy/query_analysis.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

struct PlanEntry {
    int64_t revision = 0;
    SPIPlanPtr plan = nullptr;            // kept (SPI_keepplan)
    MemoryContext plan_context = nullptr; // holds input and ioparam
    FmgrInfo *input = nullptr;            // per parameter
    Oid *ioparam = nullptr;
    MemoryContext analysis_context = nullptr; // holds analysis
    QueryAnalysis *analysis = nullptr;
    uint64_t analysis_epoch = 0;
    // Per policy: the decision and the catalog generation it was made under.
    std::unordered_map<std::string, std::pair<uint64_t, PolicyDecision>> decisions;
};

class PlanCache {
  public:
    // Registers the invalidation callbacks; once per worker, after connecting to the database.
    void start();
    // The fresh entry for a query as a role, made or remade as needed. Inside the call's
    // transaction and SPI connection, as the role. `parsed`, when given, is the query's text
    // parsed and analysed in this transaction, as this role, with the query's parameter types (an
    // ad-hoc statement's checks made it): a plan and an analysis made now start from it instead of
    // the text, and consume it. Throws pg::PgError (the entry is then unchanged).
    PlanEntry &plan_for(const CachedQuery &query, Oid role,
                        const ParsedStatement *parsed = nullptr);
    // Whether the query as the role is a write by an entry that is still fresh: a worker then
    // hands a call to a helper without planning it (QueryRunner::run). Any transaction.
    bool known_write(const CachedQuery &query, Oid role) const;
    // The policy's decision about the entry's analysis under `rules` (its saved queries', or its
    // ad-hoc statements'), made once per catalog generation.
    const PolicyDecision &decision_for(PlanEntry &entry, const std::string &policy,
                                       const PolicyRules &rules, uint64_t generation);
    // Frees the plans of a query that is gone (an ad-hoc statement forgotten), as every role.
    void forget(const std::string &query);
    // Changes whenever a relation, function, type, schema, operator or role a kept analysis
    // depends on changes: what was judged before may be stale.
    static uint64_t epoch();

  private:
    std::map<std::pair<std::string, Oid>, PlanEntry> plans_;
    bool any_write_ = false; // some entry was ever planned as a write
};
