// What a policy decides about a statement: see policy_checks.hpp. Plain C++.
#include "rules/policy_checks.hpp"

#include <algorithm>
#include <utility>

namespace {

using query_facts::Column;
using query_facts::Field;
using query_facts::HeldValue;
using query_facts::Output;
using query_facts::Statement;
using query_facts::Text;

std::string relation_text(const query_facts::Relation &r)
{
    return r.schema + "." + r.name;
}

std::string column_text(const Column &c)
{
    return c.schema + "." + c.table + "." + c.column;
}

masking::Action action_of(const std::vector<masking::Rule> &rules, const Column &c)
{
    return masking::action_for(rules, c.schema, c.table, c.column);
}

bool masked(const std::vector<masking::Rule> &rules, const Column &c)
{
    return action_of(rules, c) != masking::Action::none;
}

// Refuses (and says so, for `return refuse(...)`).
bool refuse(PolicyDecision &d, ErrorCode code, std::string message)
{
    d.refusal = code;
    d.refusal_message = std::move(message);
    return true;
}

// The strictest action over columns; none when the policy masks nothing.
masking::Action strictest(const std::vector<masking::Rule> &rules, const std::vector<Column> &cols)
{
    masking::Action action = masking::Action::none;
    for (const Column &c : cols)
        action = std::max(action, action_of(rules, c));
    return action;
}

// The masking action of every output column and parameter, the strictest over all of its sources.
void fill_actions(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    const bool masks = !rules.masks.empty();
    d.column_actions.reserve(s.outputs.size());
    for (const Output &out : s.outputs)
        d.column_actions.push_back(masks ? strictest(rules.masks, out.sources)
                                         : masking::Action::none);
    d.param_actions.reserve(s.params.size());
    for (const query_facts::Param &param : s.params) {
        masking::Action action = masking::Action::none;
        if (masks && param.unresolvable)
            action = masking::Action::drop;
        if (masks)
            action = std::max(action, strictest(rules.masks, param.sources));
        d.param_actions.push_back(action);
    }
}

// 0. Code whose author could not act as the policy's role never runs as it (policy/code_trust.hpp).
bool refuse_untrusted(PolicyDecision &d, const Statement &s)
{
    // The reason names roles and schemas, which are the administrator's business:
    // querygate.explain shows it.
    return s.untrusted && refuse(d, error_code::untrusted_code,
                                 "the query runs code that its policy's role does not trust "
                                 "(querygate.explain says why)");
}

// 1. The table allow-list: every relation the statement names, and no function that can read any
// table by itself (query_to_xml, a user-defined function).
bool refuse_outside_allow_list(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    if (!rules.has_allowed_tables)
        return false;
    for (const query_facts::Relation &r : s.relations)
        if (std::find(rules.allowed_tables.begin(), rules.allowed_tables.end(), r.relid) ==
            rules.allowed_tables.end())
            return refuse(d, error_code::table_not_allowed,
                          "the policy does not allow the table " + relation_text(r));
    return s.reads_database &&
           refuse(d, error_code::table_not_allowed,
                  "the query calls " + *s.reads_database +
                      ", which can read any table, and the policy has a table allow-list");
}

// 2. Writes: every write the statement makes, at any level; and a read writes nothing anywhere, not
// even where a read-only transaction does not look (notifications, large objects).
bool refuse_writes(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    const int extra = s.write_ops & ~rules.write_ops;
    for (const write_ops::Op &w : write_ops::all)
        if (extra & w.bit)
            return refuse(d, error_code::write_op_not_allowed,
                          std::string("the policy does not allow ") + w.name);
    return s.write_ops == 0 && s.writes_outside &&
           refuse(d, error_code::read_only,
                  "this call may not write, and the query calls " + *s.writes_outside +
                      ", which writes");
}

// 3. An output column whose sources cannot be known is never served under a masking policy; 4. nor
// statistics, which keep copies of column values that no lineage leads back to their columns.
bool refuse_unknown_sources(PolicyDecision &d, const Statement &s)
{
    for (const Output &out : s.outputs)
        if (out.unresolvable)
            return refuse(d, error_code::mask_unresolvable,
                          "the sources of column \"" + out.name + "\" cannot be known (" +
                              *out.unresolvable + "), and the policy masks columns");
    return s.value_copies &&
           refuse(d, error_code::mask_unresolvable,
                  "the query reads " + *s.value_copies +
                      ", which holds copies of column values, and the policy masks columns");
}

// Refuses a computation with a masked column.
bool refuse_computed(PolicyDecision &d, const PolicyRules &rules, const Column &c)
{
    if (!c.computed || !masked(rules.masks, c))
        return false;
    return refuse(d, error_code::mask_expression,
                  "the query computes with the masked column " + column_text(c) + " (" +
                      *c.computed + "); a masked value may only be returned unchanged");
}

// What a write assigns: computed with no masked column, copying none where the policy masks less
// (it would be read back clear), and from sources that can be known.
bool refuse_written_value(PolicyDecision &d, const PolicyRules &rules, const query_facts::Write &w)
{
    const masking::Action target = action_of(rules.masks, w.target);
    for (const Column &source : w.sources) {
        if (refuse_computed(d, rules, source))
            return true;
        if (action_of(rules.masks, source) > target)
            return refuse(d, error_code::mask_expression,
                          "the query copies the masked column " + column_text(source) + " into " +
                              column_text(w.target) + ", which the policy masks less");
    }
    return w.unresolvable &&
           refuse(d, error_code::mask_unresolvable,
                  "the sources of a value written to " + column_text(w.target) +
                      " cannot be known (" + *w.unresolvable + "), and the policy masks columns");
}

// 5. A masked value may reach the answer only unchanged: a value computed from it (an output, or
// what a write assigns) can differ, fail or take time by the hidden value, which no mask of the
// result can hide (policy/value_use.hpp).
bool refuse_computations(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    for (const Output &out : s.outputs)
        for (const Column &source : out.sources)
            if (refuse_computed(d, rules, source))
                return true;
    for (const Column &c : s.unselected)
        if (refuse_computed(d, rules, c))
            return true;
    for (const query_facts::Write &w : s.writes)
        if (refuse_written_value(d, rules, w))
            return true;
    return false;
}

// A masked source of the value a write assigns to `target`, or null.
const Column *masked_source_of(const Statement &s, const PolicyRules &rules, const Column &target)
{
    for (const query_facts::Write &w : s.writes) {
        if (w.target.relid != target.relid || w.target.attnum != target.attnum)
            continue;
        for (const Column &source : w.sources)
            if (masked(rules.masks, source))
                return &source;
    }
    return nullptr;
}

// What the database checks on a row a write changes (policy/row_checks.hpp) compares the columns it
// reads: a masked one as stored, or as the write assigns it from a masked source, is refused as a
// predicate is; a check that can read anything (a trigger) under any mask.
bool refuse_row_check(PolicyDecision &d, const Statement &s, const PolicyRules &rules,
                      const query_facts::RowCheck &check)
{
    if (check.any_column)
        return refuse(d, error_code::mask_predicate,
                      "the write runs " + check.by +
                          ", which can read any column, and the policy masks columns");
    const Column *compared = check.existing
                                 ? (masked(rules.masks, check.column) ? &check.column : nullptr)
                                 : masked_source_of(s, rules, check.column);
    return compared != nullptr &&
           refuse(d, error_code::mask_predicate,
                  "the write is checked by " + check.by + ", which compares the masked column " +
                      column_text(*compared));
}

// 6. A masked column compared (a filter, join, grouping, sort, DISTINCT, set operation, conflict
// target, a check on a row written) lets the caller learn it.
bool refuse_predicates(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    for (const Column &c : s.predicates)
        if (masked(rules.masks, c))
            return refuse(d, error_code::mask_predicate,
                          "the query filters, joins, groups, sorts or compares rows on the masked "
                          "column " +
                              column_text(c));
    for (const query_facts::RowCheck &check : s.row_checks)
        if (refuse_row_check(d, s, rules, check))
            return true;
    return s.predicate_unresolvable &&
           refuse(d, error_code::mask_predicate,
                  "the query filters, joins, groups, sorts or compares rows on a column whose "
                  "sources cannot be known (" +
                      *s.predicate_unresolvable + "), and the policy masks columns");
}

// What a policy does with a value of an output: the strictest action over its names.
masking::Action value_action(const std::vector<masking::Rule> &rules, const HeldValue &value)
{
    return strictest(rules, value.names);
}

// Why a hashed value (an output, or a field of a whole row in it) can carry a value that no
// hashed column holds: made (a parameter, a constant, a computation) reaches it, or a value none
// of whose names (its column, a parent's, a view's it is read through) the policy hashes; empty
// when neither.
std::string foreign_value(const std::vector<masking::Rule> &rules, const Text &made,
                          const std::vector<HeldValue> &held)
{
    if (made)
        return "a value no column holds (" + *made + ")";
    for (const HeldValue &value : held)
        if (!value.names.empty() &&
            masking::kind_of(value_action(rules, value)) != masking::Action::hash)
            return "values of " + column_text(value.names[0]) + ", which the policy does not hash";
    return "";
}

// A hashed output may carry only values of the columns it hashes, unchanged: a hash is the same
// for equal values, so the hash of any other value a call puts there (a parameter, a constant, a
// computed value, another column's value merged in by a set operation, VALUES, a join's merged
// column or RETURNING) can be compared with the hashed values to confirm a guess. A whole row is
// hashed as one value, judged field by field: a hashed field only carries hashed values, and the
// others (a constant beside a hashed column) cannot make the row equal to another.
bool refuse_hash_input(PolicyDecision &d, const PolicyRules &rules, const Output &out,
                       masking::Action action)
{
    if (masking::kind_of(action) != masking::Action::hash)
        return false;
    std::string what = foreign_value(rules.masks, out.made, out.held);
    for (size_t f = 0; f < out.fields.size() && what.empty(); f++) {
        const Field &field = out.fields[f];
        masking::Action field_action = masking::Action::none;
        for (const HeldValue &value : field.held)
            field_action = std::max(field_action, value_action(rules.masks, value));
        if (masking::kind_of(field_action) == masking::Action::hash)
            what = foreign_value(rules.masks, field.made, field.held);
    }
    return !what.empty() &&
           refuse(d, error_code::mask_hash_input,
                  "column \"" + out.name + "\" is hashed and can carry " + what +
                      ": the hash of a value the caller chooses or knows confirms a guess");
}

// 7. A hashed output carries nothing but the values of the columns it hashes.
bool refuse_hash_inputs(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    for (size_t i = 0; i < s.outputs.size(); i++)
        if (refuse_hash_input(d, rules, s.outputs[i], d.column_actions[i]))
            return true;
    return false;
}

// 3. to 7., for a policy with mask rules; 5. to 7. only when it does not trust its queries
// (mask_predicates => 'allow').
bool refuse_under_masks(PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    if (refuse_unknown_sources(d, s))
        return true;
    return !rules.mask_predicates_allowed &&
           (refuse_computations(d, s, rules) || refuse_predicates(d, s, rules) ||
            refuse_hash_inputs(d, s, rules));
}

} // namespace

PolicyDecision decide(const Statement &statement, const PolicyRules &rules)
{
    PolicyDecision d;
    fill_actions(d, statement, rules);
    if (refuse_untrusted(d, statement) || refuse_outside_allow_list(d, statement, rules) ||
        refuse_writes(d, statement, rules))
        return d;
    if (!rules.masks.empty())
        refuse_under_masks(d, statement, rules);
    return d;
}
