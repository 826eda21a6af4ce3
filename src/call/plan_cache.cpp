// The worker's kept plans and decisions: see plan_cache.hpp.
#include "call/plan_cache.hpp"

extern "C" {
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/pg_guard.hpp"
#include "pg/spi_plan.hpp"

#include <algorithm>
#include <vector>

namespace {

// Analyses go stale when a relation they depend on changes (a view is redefined, a column
// dropped): a relcache callback bumps this epoch for any relation in `analysis_depends`.
uint64_t analysis_epoch = 1;
std::vector<Oid> analysis_depends; // sorted

void on_relation_changed(Datum, Oid relid)
{
    if (relid == InvalidOid ||
        std::binary_search(analysis_depends.begin(), analysis_depends.end(), relid))
        analysis_epoch++;
}

// Whether a statement's code is trusted for a role (code_trust.hpp) depends on the owners of the
// functions and domains it calls, the schemas of its search_path, operators' commutators and
// negators, role attributes and memberships, and the database's owner. Changes to the functions
// and types that kept analyses looked at (their syscache hash values, sorted, one list per cache)
// make the analyses stale; other rows of those catalogs change often (every CREATE TABLE makes a
// pg_type row) and are ignored. This database's row alike: pg_database is shared, and autovacuum
// updates every database's row. Schemas, operators and roles change rarely: any change counts.
constexpr int trust_object_cache_count = 3;
const int trust_object_caches[trust_object_cache_count] = {PROCOID, TYPEOID, DATABASEOID};
std::vector<uint32> trust_hashes[trust_object_cache_count];
const int trust_global_caches[] = {NAMESPACEOID, OPEROID, AUTHOID, AUTHMEMMEMROLE};

void on_trust_object_changed(Datum slot, int, uint32 hashvalue)
{
    const std::vector<uint32> &hashes = trust_hashes[DatumGetInt32(slot)];
    if (hashvalue == 0 || std::binary_search(hashes.begin(), hashes.end(), hashvalue))
        analysis_epoch++;
}

void on_trust_global_changed(Datum, int, uint32)
{
    analysis_epoch++;
}

// The sorted union of a watch list and new entries.
template <typename T> void watch(std::vector<T> &list, const T *items, int n)
{
    list.insert(list.end(), items, items + n);
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
}

// What plan_for makes before it publishes anything.
struct Fresh {
    SPIPlanPtr plan = nullptr;            // null when the kept plan is still good
    MemoryContext plan_context = nullptr; // input and ioparam
    FmgrInfo *input = nullptr;
    Oid *ioparam = nullptr;
    MemoryContext analysis_context = nullptr;
    QueryAnalysis *analysis = nullptr;
    uint32 *hashes[trust_object_cache_count] = {};
    int nhashes[trust_object_cache_count] = {};
};

// A plan made from a parsed statement once the rewriter has left it (spi_plan.hpp).
struct PlanFromParsed {
    CachedPlanSource *source;
    int nparams;
    const Oid *types;
    SPIPlanPtr plan;
};

void complete_plan(List *rewritten, void *arg)
{
    PlanFromParsed *p = static_cast<PlanFromParsed *>(arg);
    p->plan = spi_plan_complete(p->source, rewritten, p->nparams, p->types);
}

// Prepares (unless keep_plan) and analyzes the query as the current role: from its text, or from
// `parsed` when given (see plan_for). Everything is made in the transaction's memory and SPI's,
// and moved to memory that outlives the call only by the last steps, which cannot fail: an error
// on the way leaves nothing behind for the abort to miss.
void make_fresh(const CachedQuery &query, bool keep_plan, const ParsedStatement *parsed, Fresh &f)
{
    const char *sql = query.prepared_sql.c_str();
    const int nparams = static_cast<int>(query.param_types.size());
    Oid *types = const_cast<Oid *>(query.param_types.data());
    const Oid saved_by = query.saved_by;
    pg::guard([&] {
        SPIPlanPtr plan = nullptr;
        PlanFromParsed from_parsed = {nullptr, nparams, types, nullptr};
        if (!keep_plan) {
            if (parsed != nullptr) {
                from_parsed.source = spi_plan_begin(parsed->raw, sql);
            } else {
                plan = SPI_prepare(sql, nparams, types);
                if (plan == nullptr)
                    elog(ERROR, "querygate: could not prepare saved query: %s",
                         SPI_result_code_string(SPI_result));
            }
            f.plan_context = AllocSetContextCreate(CurTransactionContext, "querygate plan inputs",
                                                   ALLOCSET_SMALL_SIZES);
            f.input = static_cast<FmgrInfo *>(
                MemoryContextAllocZero(f.plan_context, sizeof(FmgrInfo) * Max(nparams, 1)));
            f.ioparam = static_cast<Oid *>(
                MemoryContextAllocZero(f.plan_context, sizeof(Oid) * Max(nparams, 1)));
            for (int i = 0; i < nparams; i++) {
                Oid infunc;
                getTypeInputInfo(types[i], &infunc, &f.ioparam[i]);
                fmgr_info_cxt(infunc, &f.input[i], f.plan_context);
            }
        }
        // What the statement touches, writes and returns, as this role sees it: made once here,
        // so a call never walks the query tree.
        f.analysis_context = AllocSetContextCreate(CurTransactionContext, "querygate analysis",
                                                   ALLOCSET_SMALL_SIZES);
        MemoryContext old_cxt = MemoryContextSwitchTo(f.analysis_context);
        f.analysis = static_cast<QueryAnalysis *>(palloc0(sizeof(QueryAnalysis)));
        analyze_analysed_query(
            parsed != nullptr ? parsed->query : nullptr, sql, nparams, types, saved_by, f.analysis,
            from_parsed.source != nullptr ? complete_plan : nullptr, &from_parsed);
        if (from_parsed.source != nullptr)
            plan = from_parsed.plan;
        const TrustDepends &d = f.analysis->trust_depends;
        const int counts[trust_object_cache_count] = {d.nfunctions, d.ntypes, 1};
        const Oid *oids[trust_object_cache_count] = {d.functions, d.types, &MyDatabaseId};
        for (int c = 0; c < trust_object_cache_count; c++) {
            f.hashes[c] = static_cast<uint32 *>(palloc(sizeof(uint32) * Max(counts[c], 1)));
            f.nhashes[c] = counts[c];
            for (int i = 0; i < counts[c]; i++)
                f.hashes[c][i] =
                    GetSysCacheHashValue1(trust_object_caches[c], ObjectIdGetDatum(oids[c][i]));
        }
        MemoryContextSwitchTo(old_cxt);
        // Done: from here on, nothing allocates or fails.
        if (plan != nullptr) {
            SPI_keepplan(plan);
            MemoryContextSetParent(f.plan_context, TopMemoryContext);
            f.plan = plan;
        }
        MemoryContextSetParent(f.analysis_context, TopMemoryContext);
    });
}

} // namespace

void PlanCache::start()
{
    CacheRegisterRelcacheCallback(on_relation_changed, (Datum)0);
    for (int i = 0; i < trust_object_cache_count; i++)
        CacheRegisterSyscacheCallback(trust_object_caches[i], on_trust_object_changed,
                                      Int32GetDatum(i));
    for (int cache : trust_global_caches)
        CacheRegisterSyscacheCallback(cache, on_trust_global_changed, (Datum)0);
}

PlanEntry &PlanCache::plan_for(const CachedQuery &query, Oid role, const ParsedStatement *parsed)
{
    PlanEntry &entry = plans_[std::make_pair(query.name, role)];
    // Lock what the kept analysis depends on before asking whether it is fresh: the lock takes in
    // any pending invalidation, and once held, no change to those relations can commit until the
    // call ends. Without it, a change committed between this check and execution would re-plan
    // the statement under an analysis (and masks) made for the old one. The executor takes the
    // same locks a moment later, so this costs a local lock-table lookup each.
    if (entry.analysis != nullptr) {
        const QueryAnalysis *kept = entry.analysis;
        pg::guard([&] {
            for (int i = 0; i < kept->ndepends; i++)
                LockRelationOid(kept->depends[i], AccessShareLock);
        });
    }
    const bool plan_ok = entry.plan != nullptr && entry.revision == query.revision;
    if (plan_ok && entry.analysis != nullptr && entry.analysis_epoch == analysis_epoch)
        return entry;

    const uint64_t epoch = analysis_epoch;
    Fresh f;
    make_fresh(query, plan_ok, parsed, f); // throws with the entry untouched

    // Watch every relation, function, domain and schema any kept analysis depends on, before the
    // entry is published: an entry that is not watched could go stale unnoticed. The lists may
    // fail to grow (bad_alloc): then the fresh plan and analysis, which nothing points at yet, are
    // freed, and the entry is as it was.
    try {
        pg::fault_point("plan_watch");
        watch(analysis_depends, f.analysis->depends, f.analysis->ndepends);
        for (int c = 0; c < trust_object_cache_count; c++)
            watch(trust_hashes[c], f.hashes[c], f.nhashes[c]);
    } catch (...) {
        pg::guard([&] {
            if (f.plan != nullptr)
                SPI_freeplan(f.plan);
            if (f.plan_context != nullptr)
                MemoryContextDelete(f.plan_context);
            MemoryContextDelete(f.analysis_context);
        });
        throw;
    }

    SPIPlanPtr old_plan = nullptr;
    MemoryContext old_plan_context = nullptr;
    if (f.plan != nullptr) {
        old_plan = entry.plan;
        old_plan_context = entry.plan_context;
        entry.plan = f.plan;
        entry.plan_context = f.plan_context;
        entry.input = f.input;
        entry.ioparam = f.ioparam;
        entry.revision = query.revision;
    }
    MemoryContext old_analysis_context = entry.analysis_context;
    entry.analysis_context = f.analysis_context;
    entry.analysis = f.analysis;
    entry.analysis_epoch = epoch;
    entry.decisions.clear();
    any_write_ = any_write_ || entry.analysis->write_ops != 0;
    // The old ones last, once nothing points at them.
    pg::guard([&] {
        if (old_plan != nullptr)
            SPI_freeplan(old_plan);
        if (old_plan_context != nullptr)
            MemoryContextDelete(old_plan_context);
        if (old_analysis_context != nullptr)
            MemoryContextDelete(old_analysis_context);
    });
    return entry;
}

const PolicyDecision &PlanCache::decision_for(PlanEntry &entry, const std::string &policy,
                                              const PolicyRules &rules, uint64_t generation)
{
    auto &slot = entry.decisions[policy];
    if (slot.first != generation ||
        slot.second.column_actions.size() != static_cast<size_t>(entry.analysis->noutputs)) {
        slot.second = decide(*entry.analysis, rules);
        slot.first = generation;
    }
    return slot.second;
}

void PlanCache::forget(const std::string &query)
{
    auto it = plans_.lower_bound({query, InvalidOid});
    while (it != plans_.end() && it->first.first == query) {
        PlanEntry &entry = it->second;
        pg::guard([&] {
            if (entry.plan != nullptr)
                SPI_freeplan(entry.plan);
            if (entry.plan_context != nullptr)
                MemoryContextDelete(entry.plan_context);
            if (entry.analysis_context != nullptr)
                MemoryContextDelete(entry.analysis_context);
        });
        it = plans_.erase(it);
    }
}

uint64_t PlanCache::epoch()
{
    return analysis_epoch;
}

bool PlanCache::known_write(const CachedQuery &query, Oid role) const
{
    if (!any_write_)
        return false; // no lookup on every call of a worker that has never planned a write
    const auto it = plans_.find({query.name, role});
    if (it == plans_.end())
        return false;
    const PlanEntry &entry = it->second;
    return entry.plan != nullptr && entry.revision == query.revision && entry.analysis != nullptr &&
           entry.analysis_epoch == analysis_epoch && entry.analysis->write_ops != 0;
}
