// The ad-hoc statements (POST /sql) a worker keeps: each as a query of its own (CachedQuery, so a
// call of one takes the saved queries' steps, plan cache and decisions), with what its checks
// found (policy/adhoc_statement.hpp). Kept by policy and text, at most querygate.adhoc_cache_size
// of them and kept_bytes_max of their texts (a statement may be as long as a body, a megabyte), the
// least recently used forgotten first with its plans (PlanCache::forget). A
// statement whose literals change at every call is therefore scanned, checked, planned and
// analysed at every call; one with :name parameters once.
//
// What makes a statement's checks stale: a new catalog generation (its policy's allow-list may
// have changed) or a new analysis epoch of the plan cache (a relation, function, type or role
// changed). Its plan and analysis go stale as a saved query's do.
#pragma once

#include "call/catalog_cache.hpp"
#include "call/plan_cache.hpp"
#include "policy/adhoc_statement.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

struct AdhocStatement {
    CachedQuery query; // name: unique within the worker, never a saved query's; revision 1
    // What the checks found, when they were made; `checked` false until they are.
    bool checked = false;
    uint64_t generation = 0;
    uint64_t epoch = 0;
    AdhocRefusal refusal = ADHOC_ALLOWED;
    int position = 0;     // in the caller's text (a character, from 1); 0: not known
    std::string function; // ADHOC_REFUSED_FUNCTION: which
};

class AdhocStatements {
  public:
    // The statement `sql` as the policy's caller sends it: kept, or made by finding its
    // placeholders (the scan ereports a $n parameter or a reserved name: pg::PgError). Its
    // pointer is good until the next find. Throws pg::PgError, std::bad_alloc.
    AdhocStatement &find(const std::string &sql, const CachedPolicy &policy, PlanCache &plans);
    // Whether the statement's checks must be made (again) before it runs.
    static bool stale(const AdhocStatement &statement, uint64_t generation, uint64_t epoch);
    // Makes its checks, as the policy's role with the statement's search_path (inside the call's
    // transaction): the parameters' types and what is refused. Returns the statement parsed and
    // analysed when it is allowed (for PlanCache::plan_for, in this transaction only), else
    // nulls. Throws pg::PgError (PostgreSQL's parser and analyzer; adhoc_hides_error says which
    // errors must not be told).
    static ParsedStatement check(AdhocStatement &statement, const CachedPolicy &policy,
                                 uint64_t generation, uint64_t epoch);

    // The texts' bytes a worker keeps at most (each statement's key, text and text as run).
    static constexpr std::size_t kept_bytes_max = 64 * 1024 * 1024;

  private:
    struct Entry {
        std::string key;
        AdhocStatement statement;
        std::size_t bytes = 0;
    };
    void forget_oldest(PlanCache &plans);

    std::list<Entry> order_; // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
    uint64_t made_ = 0;     // statements made: each one's name is new
    std::size_t bytes_ = 0; // the kept entries' bytes
};
