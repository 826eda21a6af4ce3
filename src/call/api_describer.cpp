// What a caller may call: see api_describer.hpp.
#include "call/api_describer.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
}

#include "call/call_limits.hpp"
#include "call/role_subtransaction.hpp"
#include "common/settings.hpp"
#include "http/limit_fields.hpp"
#include "http/sql_tools.hpp"
#include "pg/pg_guard.hpp"

#include <algorithm>

namespace {

using api_description::Kind;
using api_description::ValueType;

// A type as JSON sees it (row_output.hpp). Formats are claimed only where PostgreSQL's text is
// JSON Schema's: a date is ISO 8601, a timestamp's text (a space, not a T) is not date-time.
// PostgreSQL-style.
void type_of(Oid type, Kind *kind, const char **format, char **name, bool *is_text)
{
    const Oid base = getBaseType(type);
    *format = "";
    *name = format_type_be(type);
    *is_text = TypeCategory(base) == TYPCATEGORY_STRING;
    switch (base) {
    case INT2OID:
    case INT4OID:
        *kind = Kind::integer;
        *format = "int32";
        return;
    case INT8OID:
    case OIDOID:
        *kind = Kind::integer;
        *format = "int64";
        return;
    case FLOAT4OID:
    case FLOAT8OID:
    case NUMERICOID:
        *kind = Kind::number;
        return;
    case BOOLOID:
        *kind = Kind::boolean;
        return;
    case JSONOID:
    case JSONBOID:
        *kind = Kind::json;
        return;
    case DATEOID:
        *kind = Kind::string;
        *format = "date";
        return;
    case UUIDOID:
        *kind = Kind::string;
        *format = "uuid";
        return;
    default:
        *kind = Kind::string;
    }
}

ValueType value_type(Oid type, bool *is_text)
{
    Kind kind = Kind::string;
    const char *format = "";
    char *name = nullptr;
    bool text = false;
    pg::guard([&] { type_of(type, &kind, &format, &name, &text); });
    if (is_text != nullptr)
        *is_text = text;
    ValueType t;
    t.kind = kind;
    t.format = format;
    t.postgres = name;
    return t;
}

// What planning one query as its policy's role found, as plain data.
struct Planned {
    bool ok;
    bool writes;
    bool returns_rows;
    bool permitted; // the role holds every privilege the query needs on its tables
    int ncolumns;
    char **names;
    Oid *types;
};

// The columns a plan's statement returns, their names and types copied into `into`, which
// outlives SPI's contexts. PostgreSQL-style.
void read_columns(SPIPlanPtr plan, MemoryContext into, Planned &planned)
{
    List *sources = SPI_plan_get_plan_sources(plan);
    TupleDesc desc =
        sources != NIL ? static_cast<CachedPlanSource *>(linitial(sources))->resultDesc : nullptr;
    MemoryContext old = MemoryContextSwitchTo(into);
    const int n = desc ? desc->natts : 0;
    planned.names = static_cast<char **>(palloc0(sizeof(char *) * Max(n, 1)));
    planned.types = static_cast<Oid *>(palloc0(sizeof(Oid) * Max(n, 1)));
    for (int i = 0; i < n; i++) {
        Form_pg_attribute a = TupleDescAttr(desc, i);
        if (a->attisdropped)
            continue;
        planned.names[planned.ncolumns] = pstrdup(NameStr(a->attname));
        planned.types[planned.ncolumns++] = a->atttypid;
    }
    MemoryContextSwitchTo(old);
}

// The plan and the decision of one query, as the policy's role, in a subtransaction: false (the
// subtransaction rolled back) for a query that cannot be planned now, which is left out while the
// rest go on.
bool plan_query(PlanCache &plans, const CachedQuery &query, const CachedPolicy &policy,
                uint64_t generation, Planned &planned, const PolicyDecision *&decision)
{
    const MemoryContext outer = CurrentMemoryContext;
    return in_role_subtransaction(policy.run_as, query.search_path.c_str(), [&] {
        pg::guard([&] {
            if (SPI_connect() != SPI_OK_CONNECT)
                elog(ERROR, "querygate: SPI_connect failed");
        });
        PlanEntry &entry = plans.plan_for(query, policy.run_as);
        decision = &plans.decision_for(entry, policy.name, policy.rules, generation);
        SPIPlanPtr plan = entry.plan;
        const bool writes = entry.analysis->write_ops != 0;
        const bool returns_rows = entry.analysis->returns_rows;
        const bool permitted = entry.analysis->missing_privilege == nullptr;
        // Entered from the outer context, which outlives what SPI_finish deletes (pg_guard.hpp).
        MemoryContextSwitchTo(outer);
        pg::guard([&] {
            planned.writes = writes;
            planned.returns_rows = returns_rows;
            planned.permitted = permitted;
            read_columns(plan, outer, planned);
            SPI_finish();
        });
        planned.ok = true;
    });
}

// Whether a call of the query by the caller would be refused: then it is not something the caller
// may call.
bool refused(const CachedQuery &query, const Planned &planned, const PolicyDecision &decision,
             const Caller &caller)
{
    const bool needs_token =
        std::any_of(query.rules.begin(), query.rules.end(),
                    [](const param_rules::Rule &r) { return !r.from_claim.empty(); });
    // The role lacking a privilege the query needs (privilege_check.hpp) is a refusal too.
    return decision.refused() || !planned.permitted ||
           (planned.writes && !settings::allow_writes) || (needs_token && !caller.is_jwt);
}

// The query as the caller may call it: the parameters it sends (not those its token gives) and the
// columns of the answer, masked as the decision masks them.
api_description::Query described(const CachedQuery &query, const Planned &planned,
                                 const PolicyDecision &decision)
{
    api_description::Query q;
    q.name = query.name;
    q.description = query.description;
    q.version = query.version;
    q.writes = planned.writes;
    q.returns_rows = planned.returns_rows;
    for (std::size_t i = 0; i < query.param_names.size(); i++) {
        const param_rules::Rule *rule = param_rules::find(query.rules, query.param_names[i]);
        if (rule != nullptr && !rule->from_claim.empty())
            continue; // the caller's token gives it: not the caller's to send
        api_description::Param p;
        p.name = query.param_names[i];
        p.type = value_type(query.param_types[i], nullptr);
        p.has_rule = rule != nullptr;
        if (rule != nullptr)
            p.rule = *rule;
        q.params.push_back(std::move(p));
    }
    for (int i = 0; i < planned.ncolumns; i++) {
        api_description::Column c;
        c.name = planned.names[i];
        c.type = value_type(planned.types[i], &c.is_text);
        if (static_cast<std::size_t>(i) < decision.column_actions.size())
            c.action = decision.column_actions[i];
        q.columns.push_back(std::move(c));
    }
    return q;
}

} // namespace

void describe_api(CatalogCache &cache, PlanCache &plans, const Caller &caller,
                  api_description::Api &out)
{
    out.queries.clear();
    out.limit_policies = limit_fields::policies(limits_of(caller), unix_now_us());
    const CachedPolicy &policy = *caller.policy;
    out.adhoc = policy.adhoc;
    out.adhoc_write_ops = policy.adhoc && settings::allow_writes ? policy.adhoc_rules.write_ops : 0;
    out.sql_tool_names_taken.clear();
    for (const char *tool : sql_tools::names)
        if (policy.queries.count(tool) != 0)
            out.sql_tool_names_taken.push_back(tool);
    std::vector<std::string> names(caller.policy->queries.begin(), caller.policy->queries.end());
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
        const CachedQuery *query = cache.find_query(name);
        if (query == nullptr)
            continue;
        Planned planned{};
        const PolicyDecision *decision = nullptr;
        if (!plan_query(plans, *query, *caller.policy, cache.generation(), planned, decision))
            continue;
        if (refused(*query, planned, *decision, caller))
            continue; // the caller would be refused: not something it may call
        out.queries.push_back(described(*query, planned, *decision));
    }
}
