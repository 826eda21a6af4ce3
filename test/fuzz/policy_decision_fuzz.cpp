// Fuzzes the policy decision (src/rules/policy_checks): decide() over a statement's facts and a
// policy's rules, both built from the input with FuzzedDataProvider. Names come from a small
// universe (two schemas, four tables, four columns), so that rules match, relations repeat and
// writes meet their row checks; a text (what computed a value, why a source cannot be known) is
// now and then the input's own bytes. Mask rules are parsed as mask() parses them. An input that
// runs out reads as the smallest values, so the rare things (untrusted code, a text, a trigger)
// are the largest: a short input is a plain statement.
// Oracles: a refusal has a stable code (one of the eight the decision makes, HTTP 403) and a
// message, an allowance neither; one action per output and per parameter, the strictest rule's
// over its sources (drop for a parameter meeting what cannot be known), whatever the refusal;
// the checks come in their order (untrusted code, the allow-list, the writes, a read that
// writes); nothing is allowed that names a relation the allow-list leaves out, writes what the
// policy was not granted, or, under masks, shows what the masks forbid (an unresolvable output,
// statistics, a masked value computed with, compared or copied where it is masked less, a hashed
// output that can carry another value); a refusal's code names something true of the statement;
// trusting the policy's queries (mask_predicates) never refuses more, and the decision is the same
// twice.
#include "rules/policy_checks.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using masking::Action;
using query_facts::Column;
using query_facts::HeldValue;
using query_facts::Output;
using query_facts::Statement;
using query_facts::Text;

const char *const schemas[] = {"public", "hr"};
const char *const tables[] = {"staff", "audit", "staff_v", "pay"};
const char *const columns[] = {"id", "name", "ssn", "salary"};
const char *const texts[] = {"lower()",
                             "a parameter",
                             "a constant",
                             "a function in FROM",
                             "query_to_xml()",
                             "pg_notify()",
                             "pg_catalog.pg_statistic"};

template <typename T, size_t N> const T &pick(FuzzedDataProvider &in, const T (&from)[N])
{
    return from[in.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

RelationId relid_of(size_t schema, size_t table)
{
    return static_cast<RelationId>(100 * (schema + 1) + table);
}

// A text from the list, or now and then the input's own bytes.
std::string some_text(FuzzedDataProvider &in)
{
    if (in.ConsumeIntegralInRange<int>(0, 7) == 7)
        return in.ConsumeRandomLengthString(24);
    return pick(in, texts);
}

Text maybe_text(FuzzedDataProvider &in, int one_in)
{
    if (in.ConsumeIntegralInRange<int>(1, one_in) != one_in)
        return Text();
    return some_text(in);
}

Column some_column(FuzzedDataProvider &in, bool may_compute)
{
    const size_t schema = in.ConsumeIntegralInRange<size_t>(0, 1);
    const size_t table = in.ConsumeIntegralInRange<size_t>(0, 3);
    const size_t column = in.ConsumeIntegralInRange<size_t>(0, 3);
    Column c;
    c.relid = relid_of(schema, table);
    c.attnum = static_cast<int>(column) + 1;
    c.schema = schemas[schema];
    c.table = tables[table];
    c.column = columns[column];
    if (may_compute)
        c.computed = maybe_text(in, 4);
    return c;
}

std::vector<Column> some_columns(FuzzedDataProvider &in, int most, bool may_compute)
{
    std::vector<Column> out(in.ConsumeIntegralInRange<int>(0, most));
    for (Column &c : out)
        c = some_column(in, may_compute);
    return out;
}

// Values held, each named by some of the output's sources.
std::vector<HeldValue> some_held(FuzzedDataProvider &in, const std::vector<Column> &sources)
{
    std::vector<HeldValue> out(sources.empty() ? 0 : in.ConsumeIntegralInRange<int>(0, 3));
    for (HeldValue &value : out) {
        const int n = in.ConsumeIntegralInRange<int>(0, 3);
        for (int k = 0; k < n; k++)
            value.names.push_back(
                sources[in.ConsumeIntegralInRange<size_t>(0, sources.size() - 1)]);
    }
    return out;
}

Output some_output(FuzzedDataProvider &in)
{
    Output out;
    out.name = pick(in, columns);
    out.sources = some_columns(in, 3, true);
    out.unresolvable = maybe_text(in, 8);
    out.made = maybe_text(in, 3);
    out.held = some_held(in, out.sources);
    out.fields.resize(in.ConsumeIntegralInRange<int>(0, 2));
    for (query_facts::Field &field : out.fields) {
        field.made = maybe_text(in, 3);
        field.held = some_held(in, out.sources);
    }
    return out;
}

void some_writes(FuzzedDataProvider &in, Statement &s)
{
    s.writes.resize(in.ConsumeIntegralInRange<int>(0, 2));
    for (query_facts::Write &w : s.writes) {
        w.target = some_column(in, false);
        w.sources = some_columns(in, 2, true);
        w.unresolvable = maybe_text(in, 8);
    }
    s.row_checks.resize(in.ConsumeIntegralInRange<int>(0, 2));
    for (query_facts::RowCheck &check : s.row_checks) {
        check.by = "constraint c on public.staff";
        check.any_column = in.ConsumeIntegralInRange<int>(0, 5) == 5;
        check.existing = in.ConsumeBool();
        check.column = some_column(in, false);
    }
}

Statement some_statement(FuzzedDataProvider &in)
{
    Statement s;
    s.relations.resize(in.ConsumeIntegralInRange<int>(0, 4));
    for (query_facts::Relation &r : s.relations) {
        const size_t schema = in.ConsumeIntegralInRange<size_t>(0, 1);
        const size_t table = in.ConsumeIntegralInRange<size_t>(0, 3);
        r = {relid_of(schema, table), schemas[schema], tables[table]};
    }
    s.write_ops = in.ConsumeIntegralInRange<int>(0, 15) & in.ConsumeIntegralInRange<int>(0, 15);
    s.outputs.resize(in.ConsumeIntegralInRange<int>(0, 4));
    for (Output &out : s.outputs)
        out = some_output(in);
    s.predicates = some_columns(in, 3, false);
    s.predicate_unresolvable = maybe_text(in, 8);
    s.unselected = some_columns(in, 2, true);
    some_writes(in, s);
    s.params.resize(in.ConsumeIntegralInRange<int>(0, 3));
    for (query_facts::Param &p : s.params) {
        p.sources = some_columns(in, 2, false);
        p.unresolvable = maybe_text(in, 6);
    }
    s.untrusted = in.ConsumeIntegralInRange<int>(0, 9) == 9;
    s.reads_database = maybe_text(in, 8);
    s.writes_outside = maybe_text(in, 8);
    s.value_copies = maybe_text(in, 10);
    return s;
}

// A pattern part: a name, "*", or a name's start and "*".
std::string some_part(FuzzedDataProvider &in, const char *name)
{
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
        return "*";
    case 1:
        return std::string(name, 1) + "*";
    default:
        return name;
    }
}

Action some_action(FuzzedDataProvider &in)
{
    static const Action named[] = {Action::hash, Action::mask, Action::mask_email, Action::null,
                                   Action::drop};
    if (in.ConsumeIntegralInRange<int>(0, 5) == 5)
        return masking::partial_action(in.ConsumeIntegralInRange<int>(0, 4),
                                       in.ConsumeIntegralInRange<int>(0, 4));
    return pick(in, named);
}

PolicyRules some_rules(FuzzedDataProvider &in)
{
    PolicyRules rules;
    rules.has_allowed_tables = in.ConsumeBool();
    const int nallowed = in.ConsumeIntegralInRange<int>(0, 5);
    for (int i = 0; i < nallowed; i++)
        rules.allowed_tables.push_back(relid_of(in.ConsumeIntegralInRange<size_t>(0, 1),
                                                in.ConsumeIntegralInRange<size_t>(0, 3)));
    rules.write_ops = in.ConsumeIntegralInRange<int>(0, 15);
    rules.mask_predicates_allowed = in.ConsumeIntegralInRange<int>(0, 3) == 3;
    const int nmasks = in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < nmasks; i++) {
        std::string text = in.ConsumeBool() ? some_part(in, pick(in, schemas)) + "." : "";
        text += some_part(in, pick(in, tables)) + ".";
        text += some_part(in, pick(in, columns));
        masking::Rule rule;
        std::string error;
        FUZZ_CHECK(masking::parse_pattern(text, rule.pattern, error));
        rule.action = some_action(in);
        rules.masks.push_back(rule);
    }
    return rules;
}

// ------------------------------------------------------------------ the oracles' own reckoning

Action action_of(const PolicyRules &rules, const Column &c)
{
    return masking::action_for(rules.masks, c.schema, c.table, c.column);
}

bool masked(const PolicyRules &rules, const Column &c)
{
    return action_of(rules, c) != Action::none;
}

Action strictest(const PolicyRules &rules, const std::vector<Column> &cols)
{
    Action a = Action::none;
    for (const Column &c : cols)
        a = std::max(a, action_of(rules, c));
    return rules.masks.empty() ? Action::none : a;
}

bool is_hash(Action a)
{
    return masking::kind_of(a) == Action::hash;
}

bool outside_allow_list(const Statement &s, const PolicyRules &rules)
{
    if (!rules.has_allowed_tables)
        return false;
    for (const query_facts::Relation &r : s.relations)
        if (std::find(rules.allowed_tables.begin(), rules.allowed_tables.end(), r.relid) ==
            rules.allowed_tables.end())
            return true;
    return s.reads_database.has_value();
}

bool ungranted_write(const Statement &s, const PolicyRules &rules)
{
    return (s.write_ops & ~rules.write_ops) != 0;
}

bool read_that_writes(const Statement &s)
{
    return s.write_ops == 0 && s.writes_outside.has_value();
}

bool unknown_output(const Statement &s)
{
    for (const Output &out : s.outputs)
        if (out.unresolvable)
            return true;
    return s.value_copies.has_value();
}

// A hashed value (an output, or a hashed field of a whole row) that can carry another value.
bool carries_foreign(const PolicyRules &rules, const Text &made, const std::vector<HeldValue> &held)
{
    if (made)
        return true;
    for (const HeldValue &value : held)
        if (!value.names.empty() && !is_hash(strictest(rules, value.names)))
            return true;
    return false;
}

bool hash_carries_foreign(const Statement &s, const PolicyRules &rules)
{
    for (const Output &out : s.outputs) {
        if (!is_hash(strictest(rules, out.sources)))
            continue;
        if (carries_foreign(rules, out.made, out.held))
            return true;
        for (const query_facts::Field &field : out.fields) {
            Action a = Action::none;
            for (const HeldValue &value : field.held)
                a = std::max(a, strictest(rules, value.names));
            if (is_hash(a) && carries_foreign(rules, field.made, field.held))
                return true;
        }
    }
    return false;
}

bool masked_computation(const Statement &s, const PolicyRules &rules)
{
    auto computed = [&](const Column &c) { return c.computed && masked(rules, c); };
    for (const Output &out : s.outputs)
        if (std::any_of(out.sources.begin(), out.sources.end(), computed))
            return true;
    if (std::any_of(s.unselected.begin(), s.unselected.end(), computed))
        return true;
    for (const query_facts::Write &w : s.writes)
        for (const Column &c : w.sources)
            if (computed(c) || action_of(rules, c) > action_of(rules, w.target))
                return true;
    return false;
}

bool unknown_write(const Statement &s)
{
    for (const query_facts::Write &w : s.writes)
        if (w.unresolvable)
            return true;
    return false;
}

bool masked_comparison(const Statement &s, const PolicyRules &rules)
{
    for (const Column &c : s.predicates)
        if (masked(rules, c))
            return true;
    for (const query_facts::RowCheck &check : s.row_checks) {
        if (check.any_column || (check.existing && masked(rules, check.column)))
            return true;
        for (const query_facts::Write &w : s.writes)
            if (!check.existing && w.target.relid == check.column.relid &&
                w.target.attnum == check.column.attnum &&
                std::any_of(w.sources.begin(), w.sources.end(),
                            [&](const Column &c) { return masked(rules, c); }))
                return true;
    }
    return s.predicate_unresolvable.has_value();
}

bool is_code(const PolicyDecision &d, ErrorCode code)
{
    return d.refused() && std::strcmp(d.refusal.code, code.code) == 0;
}

void check_shape(const PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    static const ErrorCode codes[] = {
        error_code::untrusted_code,       error_code::table_not_allowed,
        error_code::write_op_not_allowed, error_code::read_only,
        error_code::mask_unresolvable,    error_code::mask_expression,
        error_code::mask_hash_input,      error_code::mask_predicate};
    if (d.refused()) {
        FUZZ_CHECK(d.refusal.status == 403 && !d.refusal_message.empty());
        FUZZ_CHECK(std::any_of(std::begin(codes), std::end(codes),
                               [&](const ErrorCode &c) { return is_code(d, c); }));
    } else {
        FUZZ_CHECK(d.refusal.status == 0 && d.refusal_message.empty());
    }
    FUZZ_CHECK(d.column_actions.size() == s.outputs.size());
    for (size_t i = 0; i < s.outputs.size(); i++)
        FUZZ_CHECK(d.column_actions[i] == strictest(rules, s.outputs[i].sources));
    FUZZ_CHECK(d.param_actions.size() == s.params.size());
    for (size_t i = 0; i < s.params.size(); i++) {
        Action a = strictest(rules, s.params[i].sources);
        if (!rules.masks.empty() && s.params[i].unresolvable)
            a = Action::drop;
        FUZZ_CHECK(d.param_actions[i] == a);
    }
}

// The first checks, in order; and what their codes say is so.
void check_order(const PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    if (s.untrusted)
        FUZZ_CHECK(is_code(d, error_code::untrusted_code));
    else if (outside_allow_list(s, rules))
        FUZZ_CHECK(is_code(d, error_code::table_not_allowed));
    else if (ungranted_write(s, rules))
        FUZZ_CHECK(is_code(d, error_code::write_op_not_allowed));
    else if (read_that_writes(s))
        FUZZ_CHECK(is_code(d, error_code::read_only));
    else if (!rules.masks.empty() && unknown_output(s))
        FUZZ_CHECK(is_code(d, error_code::mask_unresolvable));
    if (is_code(d, error_code::untrusted_code))
        FUZZ_CHECK(s.untrusted);
    if (is_code(d, error_code::table_not_allowed))
        FUZZ_CHECK(outside_allow_list(s, rules));
    if (is_code(d, error_code::write_op_not_allowed))
        FUZZ_CHECK(ungranted_write(s, rules));
    if (is_code(d, error_code::read_only))
        FUZZ_CHECK(read_that_writes(s));
    if (d.refused() && std::strncmp(d.refusal.code, "mask_", 5) == 0)
        FUZZ_CHECK(!rules.masks.empty());
    if (is_code(d, error_code::mask_expression) || is_code(d, error_code::mask_predicate) ||
        is_code(d, error_code::mask_hash_input))
        FUZZ_CHECK(!rules.mask_predicates_allowed);
    if (is_code(d, error_code::mask_unresolvable))
        FUZZ_CHECK(unknown_output(s) || unknown_write(s));
    if (is_code(d, error_code::mask_expression))
        FUZZ_CHECK(masked_computation(s, rules));
    if (is_code(d, error_code::mask_predicate))
        FUZZ_CHECK(masked_comparison(s, rules));
    if (is_code(d, error_code::mask_hash_input))
        FUZZ_CHECK(hash_carries_foreign(s, rules));
}

// What an allowed statement cannot be.
void check_allowed(const PolicyDecision &d, const Statement &s, const PolicyRules &rules)
{
    if (d.refused())
        return;
    FUZZ_CHECK(!s.untrusted && !outside_allow_list(s, rules) && !ungranted_write(s, rules) &&
               !read_that_writes(s));
    if (rules.masks.empty())
        return;
    FUZZ_CHECK(!unknown_output(s));
    if (rules.mask_predicates_allowed)
        return;
    FUZZ_CHECK(!masked_computation(s, rules) && !unknown_write(s));
    FUZZ_CHECK(!masked_comparison(s, rules));
    FUZZ_CHECK(!hash_carries_foreign(s, rules));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzedDataProvider in(data, size);
    const PolicyRules rules = some_rules(in);
    const Statement statement = some_statement(in);

    const PolicyDecision d = decide(statement, rules);
    check_shape(d, statement, rules);
    check_order(d, statement, rules);
    check_allowed(d, statement, rules);

    const PolicyDecision again = decide(statement, rules);
    FUZZ_CHECK(again.refusal.status == d.refusal.status &&
               std::strcmp(again.refusal.code, d.refusal.code) == 0 &&
               again.refusal_message == d.refusal_message &&
               again.column_actions == d.column_actions && again.param_actions == d.param_actions);

    // Trusting the policy's queries never refuses more, nor masks otherwise.
    PolicyRules trusting = rules;
    trusting.mask_predicates_allowed = true;
    const PolicyDecision trusted = decide(statement, trusting);
    FUZZ_CHECK(!trusted.refused() || d.refused());
    FUZZ_CHECK(trusted.column_actions == d.column_actions &&
               trusted.param_actions == d.param_actions);
    return 0;
}
