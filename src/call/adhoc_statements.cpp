// The ad-hoc statements a worker keeps: see adhoc_statements.hpp.
#include "call/adhoc_statements.hpp"

#include "common/settings.hpp"
#include "pg/pg_guard.hpp"
#include "policy/saved_query_analysis.hpp"

#include <algorithm>
#include <utility>

namespace {

// The kept statement's key: its policy, and its text as sent.
std::string key_of(const std::string &sql, const CachedPolicy &policy)
{
    std::string key;
    key.reserve(policy.name.size() + 1 + sql.size());
    key.append(policy.name).push_back('\0');
    key.append(sql);
    return key;
}

// The statement's placeholders found, into `query`.
void scan(const std::string &sql, CachedQuery &query)
{
    AnalyzedQuery found{};
    const char *text = sql.c_str();
    pg::guard([&] { find_placeholders(text, &found); });
    query.sql = sql;
    query.prepared_sql = found.prepared_sql;
    query.param_names.assign(found.param_names, found.param_names + found.nparams);
    query.param_types.assign(static_cast<size_t>(found.nparams), InvalidOid);
    pg::guard([&] {
        pfree(found.prepared_sql);
        for (int i = 0; i < found.nparams; i++)
            pfree(found.param_names[i]);
        pfree(found.param_names);
    });
}

} // namespace

AdhocStatement &AdhocStatements::find(const std::string &sql, const CachedPolicy &policy,
                                      PlanCache &plans)
{
    std::string key = key_of(sql, policy);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->statement;
    }
    Entry entry;
    scan(sql, entry.statement.query);
    CachedQuery &query = entry.statement.query;
    // A name no saved query has: a control character leads it.
    query.name = "\x01sql " + std::to_string(++made_);
    query.search_path = policy.adhoc_search_path;
    query.saved_by = policy.run_as; // the caller wrote it: trusted as no one else's
    query.revision = 1;
    entry.key = key;
    entry.bytes = key.size() + query.sql.size() + query.prepared_sql.size();
    while (!order_.empty() && (order_.size() >= static_cast<size_t>(settings::adhoc_cache_size) ||
                               bytes_ + entry.bytes > kept_bytes_max))
        forget_oldest(plans);
    bytes_ += entry.bytes;
    order_.push_front(std::move(entry));
    try {
        by_key_.emplace(std::move(key), order_.begin());
    } catch (...) {
        bytes_ -= order_.front().bytes;
        order_.pop_front();
        throw;
    }
    return order_.front().statement;
}

void AdhocStatements::forget_oldest(PlanCache &plans)
{
    Entry &oldest = order_.back();
    plans.forget(oldest.statement.query.name);
    by_key_.erase(oldest.key);
    bytes_ -= oldest.bytes;
    order_.pop_back();
}

bool AdhocStatements::stale(const AdhocStatement &statement, uint64_t generation, uint64_t epoch)
{
    return !statement.checked || statement.generation != generation || statement.epoch != epoch;
}

ParsedStatement AdhocStatements::check(AdhocStatement &statement, const CachedPolicy &policy,
                                       uint64_t generation, uint64_t epoch)
{
    CachedQuery &query = statement.query;
    const std::vector<RelationId> &allowed = policy.adhoc_rules.allowed_tables;
    const char *sql = query.prepared_sql.c_str();
    const int nparams = static_cast<int>(query.param_names.size());
    AdhocChecked out{};
    statement.checked = false;
    pg::guard([&] {
        check_adhoc_statement(sql, nparams, allowed.data(), static_cast<int>(allowed.size()), &out);
        if (out.refusal != ADHOC_ALLOWED)
            return;
        for (int i = 0; i < nparams; i++)
            if (out.param_types[i] == InvalidOid || out.param_types[i] == UNKNOWNOID)
                ereport(ERROR,
                        (errcode(ERRCODE_INDETERMINATE_DATATYPE),
                         errmsg("could not determine the type of parameter :%s",
                                query.param_names[i].c_str()),
                         errhint("Add a cast, for example :%s::integer or :%s::text.",
                                 query.param_names[i].c_str(), query.param_names[i].c_str())));
    });
    statement.refusal = out.refusal;
    // A position in the text as run ($n for each :name) is one in the caller's only without
    // placeholders.
    statement.position = nparams == 0 ? out.position : 0;
    statement.function = out.function != nullptr ? out.function : "";
    if (out.refusal == ADHOC_ALLOWED &&
        !std::equal(query.param_types.begin(), query.param_types.end(), out.param_types)) {
        // Types its plan was not prepared with (a column's type changed): a new plan.
        query.param_types.assign(out.param_types, out.param_types + nparams);
        query.revision++;
    }
    pg::guard([&] {
        if (out.function != nullptr)
            pfree(out.function);
        pfree(out.param_types);
    });
    statement.generation = generation;
    statement.epoch = epoch;
    statement.checked = true;
    return out.parsed;
}
