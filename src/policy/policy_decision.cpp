// What a policy decides about an analyzed query: see policy_decision.hpp. Plain C++: no
// PostgreSQL call, only the analysis' plain data and the policy's rules.
#include "policy/policy_decision.hpp"
#include "policy/policy_rows.hpp"

#include <cstdio>
#include <cstring>

#include <algorithm>

namespace {

std::string relation_text(const RelationRef &r)
{
    return std::string(r.schema) + "." + r.name;
}

std::string column_text(const SourceColumn &c)
{
    return std::string(c.schema) + "." + c.table + "." + c.column;
}

masking::Action action_of(const std::vector<masking::Rule> &rules, const SourceColumn &c)
{
    return masking::action_for(rules, c.schema, c.table, c.column);
}

void refuse(PolicyDecision &d, ErrorCode code, std::string message)
{
    d.refusal = code;
    d.refusal_message = std::move(message);
}

// A masked source of the value a write assigns to `target`, or null.
const SourceColumn *masked_source_of(const QueryAnalysis &analysis, const PolicyRules &rules,
                                     const SourceColumn &target)
{
    for (int i = 0; i < analysis.nwrites; i++) {
        const WriteLineage &w = analysis.writes[i];
        if (w.target.relid != target.relid || w.target.attnum != target.attnum)
            continue;
        for (int s = 0; s < w.nsources; s++)
            if (action_of(rules.masks, w.sources[s]) != masking::Action::none)
                return &w.sources[s];
    }
    return nullptr;
}

// What the database checks on a row a write changes (row_checks.hpp) compares the columns it
// reads: a masked one as stored, or as the write assigns it from a masked source, is refused as a
// predicate is; a check that can read anything (a trigger) under any mask.
bool refuse_row_check(PolicyDecision &d, const QueryAnalysis &analysis, const PolicyRules &rules,
                      const RowCheck &check)
{
    if (check.any_column) {
        refuse(d, error_code::mask_predicate,
               std::string("the write runs ") + check.by +
                   ", which can read any column, and the policy masks columns");
        return true;
    }
    const SourceColumn *masked =
        check.existing
            ? (action_of(rules.masks, check.column) != masking::Action::none ? &check.column
                                                                             : nullptr)
            : masked_source_of(analysis, rules, check.column);
    if (masked == nullptr)
        return false;
    refuse(d, error_code::mask_predicate,
           std::string("the write is checked by ") + check.by +
               ", which compares the masked column " + column_text(*masked));
    return true;
}

// Refuses a computation with a masked column (true when it did).
bool refuse_computed(PolicyDecision &d, const PolicyRules &rules, const SourceColumn &c)
{
    if (c.computed == nullptr || action_of(rules.masks, c) == masking::Action::none)
        return false;
    refuse(d, error_code::mask_expression,
           "the query computes with the masked column " + column_text(c) + " (" + c.computed +
               "); a masked value may only be returned unchanged");
    return true;
}

// What a policy does with a value of an output: the strictest action over its names.
masking::Action value_action(const std::vector<masking::Rule> &rules, const OutputLineage &out,
                             const HeldValue &value)
{
    masking::Action action = masking::Action::none;
    for (int k = 0; k < value.n; k++)
        action = std::max(action, action_of(rules, out.sources[value.sources[k]]));
    return action;
}

// Why a hashed value (an output, or a field of a whole row in it) can carry a value that no
// hashed column holds: made (a parameter, a constant, a computation) reaches it, or a value none
// of whose names (its column, a parent's, a view's it is read through) the policy hashes; empty
// when neither.
std::string foreign_value(const std::vector<masking::Rule> &rules, const OutputLineage &out,
                          const char *made, const HeldValue *held, int nheld)
{
    if (made != nullptr)
        return std::string("a value no column holds (") + made + ")";
    for (int h = 0; h < nheld; h++)
        if (held[h].n > 0 &&
            masking::kind_of(value_action(rules, out, held[h])) != masking::Action::hash)
            return "values of " + column_text(out.sources[held[h].sources[0]]) +
                   ", which the policy does not hash";
    return "";
}

// A hashed output may carry only values of the columns it hashes, unchanged: a hash is the same
// for equal values, so the hash of any other value a call puts there (a parameter, a constant, a
// computed value, another column's value merged in by a set operation, VALUES, a join's merged
// column or RETURNING) can be compared with the hashed values to confirm a guess. A whole row is
// hashed as one value, judged field by field: a hashed field only carries hashed values, and the
// others (a constant beside a hashed column) cannot make the row equal to another.
bool refuse_hash_input(PolicyDecision &d, const PolicyRules &rules, const OutputLineage &out,
                       masking::Action action)
{
    if (masking::kind_of(action) != masking::Action::hash)
        return false;
    std::string what = foreign_value(rules.masks, out, out.made, out.held, out.nheld);
    for (int f = 0; f < out.nfields && what.empty(); f++) {
        const OutputField &field = out.fields[f];
        masking::Action field_action = masking::Action::none;
        for (int h = 0; h < field.nheld; h++)
            field_action = std::max(field_action, value_action(rules.masks, out, field.held[h]));
        if (masking::kind_of(field_action) == masking::Action::hash)
            what = foreign_value(rules.masks, out, field.made, field.held, field.nheld);
    }
    if (what.empty())
        return false;
    refuse(d, error_code::mask_hash_input,
           std::string("column \"") + out.name + "\" is hashed and can carry " + what +
               ": the hash of a value the caller chooses or knows confirms a guess");
    return true;
}

} // namespace

PolicyDecision decide(const QueryAnalysis &analysis, const PolicyRules &rules)
{
    PolicyDecision d;

    // The masking action of every output column, the strictest over all of its sources. Filled
    // even when the query is refused, so that explain can show it.
    d.column_actions.reserve(analysis.noutputs);
    for (int i = 0; i < analysis.noutputs; i++) {
        const OutputLineage &out = analysis.outputs[i];
        masking::Action action = masking::Action::none;
        for (int s = 0; s < out.nsources && !rules.masks.empty(); s++)
            action = std::max(action, action_of(rules.masks, out.sources[s]));
        d.column_actions.push_back(action);
    }
    d.param_actions.reserve(analysis.nparams);
    for (int i = 0; i < analysis.nparams; i++) {
        const ParamLineage &param = analysis.params[i];
        masking::Action action = masking::Action::none;
        if (!rules.masks.empty() && param.unresolvable != nullptr)
            action = masking::Action::drop;
        for (int s = 0; s < param.nsources && !rules.masks.empty(); s++)
            action = std::max(action, action_of(rules.masks, param.sources[s]));
        d.param_actions.push_back(action);
    }

    // 0. Code whose author could not act as the policy's role never runs as it (code_trust.hpp).
    if (analysis.untrusted != nullptr) {
        // The reason names roles and schemas, which are the administrator's business:
        // querygate.explain shows it.
        refuse(d, error_code::untrusted_code,
               "the query runs code that its policy's role does not trust (querygate.explain "
               "says why)");
        return d;
    }

    // 1. The table allow-list: every relation the statement names, and no function that can read
    // any table by itself (query_to_xml, a user-defined function).
    if (rules.has_allowed_tables) {
        for (int i = 0; i < analysis.nrelations; i++) {
            const RelationRef &r = analysis.relations[i];
            if (std::find(rules.allowed_tables.begin(), rules.allowed_tables.end(), r.relid) ==
                rules.allowed_tables.end()) {
                refuse(d, error_code::table_not_allowed,
                       "the policy does not allow the table " + relation_text(r));
                return d;
            }
        }
        if (analysis.reads_database != nullptr) {
            refuse(d, error_code::table_not_allowed,
                   std::string("the query calls ") + analysis.reads_database +
                       ", which can read any table, and the policy has a table allow-list");
            return d;
        }
    }

    // 2. Writes: every write the statement makes, at any level; and a read writes nothing anywhere,
    // not even where a read-only transaction does not look (notifications, large objects).
    int extra = analysis.write_ops & ~rules.write_ops;
    for (const write_ops::Op &w : write_ops::all)
        if (extra & w.bit) {
            refuse(d, error_code::write_op_not_allowed,
                   std::string("the policy does not allow ") + w.name);
            return d;
        }
    if (analysis.write_ops == 0 && analysis.writes_outside != nullptr) {
        refuse(d, error_code::read_only,
               std::string("this call may not write, and the query calls ") +
                   analysis.writes_outside + ", which writes");
        return d;
    }

    if (rules.masks.empty())
        return d;

    // 3. An output column whose sources cannot be known is never served under a masking policy.
    for (int i = 0; i < analysis.noutputs; i++) {
        const OutputLineage &out = analysis.outputs[i];
        if (out.unresolvable != nullptr) {
            refuse(d, error_code::mask_unresolvable,
                   std::string("the sources of column \"") + out.name + "\" cannot be known (" +
                       out.unresolvable + "), and the policy masks columns");
            return d;
        }
    }

    // 4. Statistics keep copies of column values that no lineage leads back to their columns.
    if (analysis.value_copies != nullptr) {
        refuse(d, error_code::mask_unresolvable,
               std::string("the query reads ") + analysis.value_copies +
                   ", which holds copies of column values, and the policy masks columns");
        return d;
    }

    // 5. A masked value may reach the answer only unchanged: a value computed from it (an
    // output, or what a write assigns) can differ, fail or take time by the hidden value, which
    // no mask of the result can hide (value_use.hpp).
    if (!rules.mask_predicates_allowed) {
        for (int i = 0; i < analysis.noutputs; i++) {
            const OutputLineage &out = analysis.outputs[i];
            for (int s = 0; s < out.nsources; s++)
                if (refuse_computed(d, rules, out.sources[s]))
                    return d;
        }
        for (int i = 0; i < analysis.nunselected; i++)
            if (refuse_computed(d, rules, analysis.unselected[i]))
                return d;
        for (int i = 0; i < analysis.nwrites; i++) {
            const WriteLineage &w = analysis.writes[i];
            const masking::Action target = action_of(rules.masks, w.target);
            for (int s = 0; s < w.nsources; s++) {
                if (refuse_computed(d, rules, w.sources[s]))
                    return d;
                // A masked value written where the policy masks less would be read back clear.
                if (action_of(rules.masks, w.sources[s]) > target) {
                    refuse(d, error_code::mask_expression,
                           "the query copies the masked column " + column_text(w.sources[s]) +
                               " into " + column_text(w.target) + ", which the policy masks less");
                    return d;
                }
            }
            if (w.unresolvable != nullptr) {
                refuse(d, error_code::mask_unresolvable,
                       std::string("the sources of a value written to ") + column_text(w.target) +
                           " cannot be known (" + w.unresolvable +
                           "), and the policy masks columns");
                return d;
            }
        }
    }

    // 6. A masked column compared (a filter, join, grouping, sort, DISTINCT, set operation,
    // conflict target) lets the caller learn it.
    if (!rules.mask_predicates_allowed) {
        for (int i = 0; i < analysis.npredicates; i++) {
            const SourceColumn &c = analysis.predicates[i];
            if (action_of(rules.masks, c) != masking::Action::none) {
                refuse(d, error_code::mask_predicate,
                       "the query filters, joins, groups, sorts or compares rows on the masked "
                       "column " +
                           column_text(c));
                return d;
            }
        }
        for (int i = 0; i < analysis.nrow_checks; i++)
            if (refuse_row_check(d, analysis, rules, analysis.row_checks[i]))
                return d;
        if (analysis.predicate_unresolvable != nullptr) {
            refuse(d, error_code::mask_predicate,
                   std::string("the query filters, joins, groups, sorts or compares rows on a "
                               "column whose sources cannot be known (") +
                       analysis.predicate_unresolvable + "), and the policy masks columns");
            return d;
        }
    }

    // 7. A hashed output carries nothing but the values of the columns it hashes.
    if (!rules.mask_predicates_allowed) {
        for (int i = 0; i < analysis.noutputs; i++)
            if (refuse_hash_input(d, rules, analysis.outputs[i], d.column_actions[i]))
                return d;
    }
    return d;
}

namespace {

void copy_text(char *to, size_t size, const std::string &from)
{
    std::snprintf(to, size, "%s", from.c_str());
}

} // namespace

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
        const PolicyRules &rules = policy.rules;
        PolicyDecision decision = decide(*analysis, rules);
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
