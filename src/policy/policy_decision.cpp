// The policy decision about an analysis: see policy_decision.hpp. Plain C++ over the analysis'
// palloc'd data: no PostgreSQL call.
#include "policy/policy_decision.hpp"
#include "policy/policy_rows.hpp"

#include <cstdio>

namespace {

using query_facts::Column;
using query_facts::HeldValue;
using query_facts::Text;

Text text_of(const char *s)
{
    return s != nullptr ? Text(s) : Text();
}

std::string string_of(const char *s)
{
    return s != nullptr ? std::string(s) : std::string();
}

Column column_of(const SourceColumn &c)
{
    Column out;
    out.relid = c.relid;
    out.attnum = c.attnum;
    out.schema = string_of(c.schema);
    out.table = string_of(c.table);
    out.column = string_of(c.column);
    out.computed = text_of(c.computed);
    return out;
}

std::vector<Column> columns_of(const SourceColumn *columns, int n)
{
    std::vector<Column> out;
    out.reserve(n > 0 ? n : 0);
    for (int i = 0; i < n; i++)
        out.push_back(column_of(columns[i]));
    return out;
}

// Values held by an output, their names (indexes into its sources) as the columns they name.
std::vector<HeldValue> held_of(const std::vector<Column> &sources, const ::HeldValue *held,
                               int nheld)
{
    std::vector<HeldValue> out(nheld > 0 ? nheld : 0);
    for (int h = 0; h < nheld; h++)
        for (int k = 0; k < held[h].n; k++)
            out[h].names.push_back(sources.at(held[h].sources[k]));
    return out;
}

query_facts::Output output_of(const OutputLineage &o)
{
    query_facts::Output out;
    out.name = string_of(o.name);
    out.sources = columns_of(o.sources, o.nsources);
    out.unresolvable = text_of(o.unresolvable);
    out.made = text_of(o.made);
    out.held = held_of(out.sources, o.held, o.nheld);
    for (int f = 0; f < o.nfields; f++) {
        query_facts::Field field;
        field.made = text_of(o.fields[f].made);
        field.held = held_of(out.sources, o.fields[f].held, o.fields[f].nheld);
        out.fields.push_back(std::move(field));
    }
    return out;
}

// What the statement does with columns besides returning them.
void uses_of(const QueryAnalysis &a, query_facts::Statement &s)
{
    s.predicates = columns_of(a.predicates, a.npredicates);
    s.predicate_unresolvable = text_of(a.predicate_unresolvable);
    s.unselected = columns_of(a.unselected, a.nunselected);
    for (int i = 0; i < a.nwrites; i++) {
        query_facts::Write w;
        w.target = column_of(a.writes[i].target);
        w.sources = columns_of(a.writes[i].sources, a.writes[i].nsources);
        w.unresolvable = text_of(a.writes[i].unresolvable);
        s.writes.push_back(std::move(w));
    }
    for (int i = 0; i < a.nrow_checks; i++) {
        query_facts::RowCheck check;
        check.by = string_of(a.row_checks[i].by);
        check.any_column = a.row_checks[i].any_column;
        check.existing = a.row_checks[i].existing;
        check.column = column_of(a.row_checks[i].column);
        s.row_checks.push_back(std::move(check));
    }
    for (int i = 0; i < a.nparams; i++) {
        query_facts::Param param;
        param.sources = columns_of(a.params[i].sources, a.params[i].nsources);
        param.unresolvable = text_of(a.params[i].unresolvable);
        s.params.push_back(std::move(param));
    }
}

void copy_text(char *to, size_t size, const std::string &from)
{
    std::snprintf(to, size, "%s", from.c_str());
}

} // namespace

query_facts::Statement facts_of(const QueryAnalysis &a)
{
    query_facts::Statement s;
    for (int i = 0; i < a.nrelations; i++)
        s.relations.push_back({a.relations[i].relid, string_of(a.relations[i].schema),
                               string_of(a.relations[i].name)});
    s.write_ops = a.write_ops;
    for (int i = 0; i < a.noutputs; i++)
        s.outputs.push_back(output_of(a.outputs[i]));
    uses_of(a, s);
    s.untrusted = a.untrusted != nullptr;
    s.reads_database = text_of(a.reads_database);
    s.writes_outside = text_of(a.writes_outside);
    s.value_copies = text_of(a.value_copies);
    return s;
}

PolicyDecision decide(const QueryAnalysis &analysis, const PolicyRules &rules)
{
    return decide(facts_of(analysis), rules);
}

void decide_plain(const QueryAnalysis *analysis, const PolicyRow *row, PlainDecision *out) noexcept
{
    try {
        DecodedPolicy policy;
        std::string error;
        if (!decode_policy(*row, policy, error)) {
            out->failed = true;
            copy_text(out->message, sizeof(out->message), error);
            return;
        }
        PolicyDecision decision = decide(*analysis, policy.rules);
        copy_text(out->code, sizeof(out->code), decision.refused() ? decision.refusal.code : "");
        copy_text(out->message, sizeof(out->message), decision.refusal_message);
        for (int i = 0; out->actions != nullptr && i < analysis->noutputs; i++)
            out->actions[i] = i < static_cast<int>(decision.column_actions.size())
                                  ? decision.column_actions[i]
                                  : masking::Action::none;
        for (int i = 0; out->param_actions != nullptr && i < analysis->nparams; i++)
            out->param_actions[i] = decision.param_actions[i];
    } catch (const std::exception &e) {
        out->failed = true;
        copy_text(out->message, sizeof(out->message), e.what());
    } catch (...) {
        out->failed = true;
        copy_text(out->message, sizeof(out->message), "the policy decision failed");
    }
}
