// Tests of src/rules/policy_checks.cpp: every refusal the decision makes, with its code and its
// exact message (what the HTTP suites and pgTAP assert), every way a statement is allowed, the
// order of the checks, and the masking actions of outputs and parameters, over statements built by
// hand.
#include "rules/policy_checks.hpp"
#include "tap.hpp"

#include <string>
#include <vector>

namespace {

using masking::Action;
using query_facts::Column;
using query_facts::HeldValue;
using query_facts::Output;
using query_facts::Statement;
using tap::is;
using tap::ok;

// Two tables: public.staff (relid 100: id, name, ssn, salary) and public.audit (relid 200: note,
// ssn), and a view public.staff_v (relid 300: ssn) over staff.
constexpr RelationId staff = 100, audit = 200, staff_v = 300;

Column col(RelationId relid, int attnum, const char *table, const char *column,
           const char *computed = nullptr)
{
    Column c;
    c.relid = relid;
    c.attnum = attnum;
    c.schema = "public";
    c.table = table;
    c.column = column;
    if (computed != nullptr)
        c.computed = computed;
    return c;
}

Column staff_id()
{
    return col(staff, 1, "staff", "id");
}
Column staff_name()
{
    return col(staff, 2, "staff", "name");
}
Column staff_ssn(const char *computed = nullptr)
{
    return col(staff, 3, "staff", "ssn", computed);
}
Column staff_salary()
{
    return col(staff, 4, "staff", "salary");
}
Column audit_note()
{
    return col(audit, 1, "audit", "note");
}
Column audit_ssn()
{
    return col(audit, 2, "audit", "ssn");
}

query_facts::Relation relation(RelationId relid, const char *name)
{
    return {relid, "public", name};
}

// An output passing its sources through unchanged, each one value held.
Output output(const char *name, std::vector<Column> sources)
{
    Output out;
    out.name = name;
    out.sources = sources;
    for (const Column &c : sources)
        out.held.push_back(HeldValue{{c}});
    return out;
}

// SELECT name, ssn FROM staff WHERE id = $1
Statement select_staff()
{
    Statement s;
    s.relations = {relation(staff, "staff")};
    s.outputs = {output("name", {staff_name()}), output("ssn", {staff_ssn()})};
    s.predicates = {staff_id()};
    query_facts::Param id;
    id.sources = {staff_id()};
    s.params = {id};
    return s;
}

masking::Rule rule(const char *pattern, Action action)
{
    masking::Rule r;
    std::string error;
    if (!masking::parse_pattern(pattern, r.pattern, error))
        tap::diag(std::string("test setup: ") + pattern + ": " + error);
    r.action = action;
    return r;
}

PolicyRules masking_rules(std::vector<masking::Rule> masks)
{
    PolicyRules rules;
    rules.masks = std::move(masks);
    return rules;
}

// The usual mask: staff's ssn hashed.
PolicyRules hash_ssn()
{
    return masking_rules({rule("public.staff.ssn", Action::hash)});
}

void allowed(const PolicyDecision &d, const std::string &name)
{
    ok(!d.refused() && d.refusal.status == 0 && d.refusal_message.empty(), name + ": allowed",
       "refused with " + std::string(d.refusal.code) + ": " + d.refusal_message);
}

void refused(const PolicyDecision &d, ErrorCode code, const std::string &message,
             const std::string &name)
{
    ok(d.refused() && d.refusal.status == 403 && std::string(d.refusal.code) == code.code,
       name + ": refused with " + code.code,
       d.refused() ? std::string("refused with ") + d.refusal.code : "allowed");
    is(d.refusal_message, message, name + ": the message");
}

void untrusted_code()
{
    Statement s = select_staff();
    s.untrusted = true;
    const std::string message =
        "the query runs code that its policy's role does not trust (querygate.explain says why)";
    refused(decide(s, PolicyRules()), error_code::untrusted_code, message, "untrusted code");
    // Before anything else: the allow-list, the writes and the masks.
    PolicyRules rules = hash_ssn();
    rules.has_allowed_tables = true;
    s.write_ops = WRITE_DELETE;
    s.predicates = {staff_ssn()};
    refused(decide(s, rules), error_code::untrusted_code, message, "untrusted code comes first");
}

void allow_list()
{
    Statement s = select_staff();
    s.relations.push_back(relation(audit, "audit"));
    PolicyRules rules;
    allowed(decide(s, rules), "no allow-list: any table");
    rules.has_allowed_tables = true;
    rules.allowed_tables = {staff};
    refused(decide(s, rules), error_code::table_not_allowed,
            "the policy does not allow the table public.audit", "a table not on the allow-list");
    rules.allowed_tables = {audit, staff};
    allowed(decide(s, rules), "every table on the allow-list");
    rules.allowed_tables.clear();
    refused(decide(s, rules), error_code::table_not_allowed,
            "the policy does not allow the table public.staff",
            "an empty allow-list: the first table named");

    // A view counts as itself: its base tables need not be allowed.
    Statement view;
    view.relations = {relation(staff_v, "staff_v")};
    view.outputs = {output("ssn", {col(staff_v, 1, "staff_v", "ssn"), staff_ssn()})};
    rules.allowed_tables = {staff_v};
    allowed(decide(view, rules), "a view on the allow-list");

    s.relations = {relation(staff, "staff")};
    s.reads_database = "query_to_xml()";
    rules.allowed_tables = {staff};
    refused(decide(s, rules), error_code::table_not_allowed,
            "the query calls query_to_xml(), which can read any table, and the policy has a "
            "table allow-list",
            "a function that reads any table, under an allow-list");
    allowed(decide(s, PolicyRules()), "a function that reads any table, without an allow-list");
}

void writes()
{
    Statement s;
    s.relations = {relation(staff, "staff")};
    s.write_ops = WRITE_UPDATE | WRITE_DELETE;
    PolicyRules rules;
    refused(decide(s, rules), error_code::write_op_not_allowed, "the policy does not allow update",
            "a write the policy was not granted");
    rules.write_ops = WRITE_UPDATE;
    refused(decide(s, rules), error_code::write_op_not_allowed, "the policy does not allow delete",
            "one of two writes granted");
    rules.write_ops = WRITE_UPDATE | WRITE_DELETE;
    allowed(decide(s, rules), "every write granted");
    s.write_ops = WRITE_INSERT | WRITE_MERGE;
    rules.write_ops = WRITE_INSERT;
    refused(decide(s, rules), error_code::write_op_not_allowed, "the policy does not allow merge",
            "merge");

    // After the allow-list.
    rules.has_allowed_tables = true;
    refused(decide(s, rules), error_code::table_not_allowed,
            "the policy does not allow the table public.staff", "the allow-list before the writes");
}

void read_only()
{
    Statement s = select_staff();
    s.writes_outside = "pg_notify()";
    refused(decide(s, PolicyRules()), error_code::read_only,
            "this call may not write, and the query calls pg_notify(), which writes",
            "a read that writes outside the tables");
    PolicyRules rules;
    rules.write_ops = WRITE_INSERT;
    refused(decide(s, rules), error_code::read_only,
            "this call may not write, and the query calls pg_notify(), which writes",
            "a read that writes, though the policy may insert");
    s.write_ops = WRITE_INSERT;
    allowed(decide(s, rules), "a granted write may write outside the tables too");
}

void no_masks()
{
    // Without a mask rule nothing about columns is refused.
    Statement s = select_staff();
    s.outputs[1].unresolvable = "a function in FROM";
    s.outputs[1].sources = {staff_ssn("lower()")};
    s.outputs[1].made = "lower()";
    s.value_copies = "pg_catalog.pg_statistic";
    s.predicates.push_back(staff_ssn());
    s.predicate_unresolvable = "a function in FROM";
    query_facts::RowCheck trigger;
    trigger.by = "trigger t on public.staff";
    trigger.any_column = true;
    s.row_checks = {trigger};
    PolicyDecision d = decide(s, PolicyRules());
    allowed(d, "no mask rule");
    ok(d.column_actions == std::vector<Action>{Action::none, Action::none},
       "no mask rule: every column unmasked");
    ok(d.param_actions == std::vector<Action>{Action::none}, "no mask rule: every parameter kept");
}

void unresolvable()
{
    Statement s = select_staff();
    s.outputs[0].unresolvable = "a function in FROM";
    // Any mask rule, even one no column of the statement matches.
    PolicyRules rules = masking_rules({rule("other.column", Action::mask)});
    const std::string message = "the sources of column \"name\" cannot be known (a function in "
                                "FROM), and the policy masks columns";
    refused(decide(s, rules), error_code::mask_unresolvable, message,
            "an output whose sources cannot be known");
    rules.mask_predicates_allowed = true;
    refused(decide(s, rules), error_code::mask_unresolvable, message,
            "an output whose sources cannot be known, mask_predicates allowed");

    s = select_staff();
    s.value_copies = "pg_catalog.pg_statistic";
    refused(decide(s, rules), error_code::mask_unresolvable,
            "the query reads pg_catalog.pg_statistic, which holds copies of column values, and "
            "the policy masks columns",
            "statistics");
}

void computations()
{
    const std::string ssn_lower = "the query computes with the masked column public.staff.ssn "
                                  "(lower()); a masked value may only be returned unchanged";
    Statement s = select_staff();
    s.outputs[1].sources = {staff_ssn("lower()")};
    refused(decide(s, hash_ssn()), error_code::mask_expression, ssn_lower,
            "an output computed from a masked column");
    PolicyRules trusting = hash_ssn();
    trusting.mask_predicates_allowed = true;
    allowed(decide(s, trusting),
            "an output computed from a masked column, mask_predicates allowed");

    s = select_staff();
    s.outputs[0].sources = {staff_name(), col(staff, 4, "staff", "salary", "operator +")};
    allowed(decide(s, hash_ssn()), "an output computed from a column no rule masks");

    s = select_staff();
    s.unselected = {staff_ssn("lower()")};
    refused(decide(s, hash_ssn()), error_code::mask_expression, ssn_lower,
            "a masked column computed with where no output shows it");

    // INSERT INTO audit (note) SELECT lower(ssn) FROM staff
    Statement insert;
    insert.relations = {relation(audit, "audit"), relation(staff, "staff")};
    insert.write_ops = WRITE_INSERT;
    query_facts::Write w;
    w.target = audit_note();
    w.sources = {staff_ssn("lower()")};
    insert.writes = {w};
    PolicyRules rules = hash_ssn();
    rules.write_ops = WRITE_INSERT;
    refused(decide(insert, rules), error_code::mask_expression, ssn_lower,
            "a written value computed from a masked column");

    // INSERT INTO audit (ssn) SELECT ssn FROM staff
    insert.writes[0].target = audit_ssn();
    insert.writes[0].sources = {staff_ssn()};
    refused(decide(insert, rules), error_code::mask_expression,
            "the query copies the masked column public.staff.ssn into public.audit.ssn, which the "
            "policy masks less",
            "a masked column copied where the policy masks less");
    rules.masks.push_back(rule("public.audit.ssn", Action::hash));
    allowed(decide(insert, rules), "a masked column copied where the policy masks as much");
    rules.masks.back().action = Action::drop;
    allowed(decide(insert, rules), "a masked column copied where the policy masks more");

    insert.writes[0].unresolvable = "a function in FROM";
    refused(decide(insert, rules), error_code::mask_unresolvable,
            "the sources of a value written to public.audit.ssn cannot be known (a function in "
            "FROM), and the policy masks columns",
            "a written value whose sources cannot be known");
    rules.mask_predicates_allowed = true;
    allowed(decide(insert, rules),
            "a written value whose sources cannot be known, mask_predicates allowed");
}

void predicates()
{
    Statement s = select_staff();
    allowed(decide(s, hash_ssn()), "a predicate on a column no rule masks");
    s.predicates.push_back(staff_ssn());
    refused(decide(s, hash_ssn()), error_code::mask_predicate,
            "the query filters, joins, groups, sorts or compares rows on the masked column "
            "public.staff.ssn",
            "a predicate on a masked column");
    PolicyRules trusting = hash_ssn();
    trusting.mask_predicates_allowed = true;
    allowed(decide(s, trusting), "a predicate on a masked column, mask_predicates allowed");

    s = select_staff();
    s.predicate_unresolvable = "a function in FROM";
    refused(decide(s, hash_ssn()), error_code::mask_predicate,
            "the query filters, joins, groups, sorts or compares rows on a column whose sources "
            "cannot be known (a function in FROM), and the policy masks columns",
            "a predicate whose sources cannot be known");
}

void row_checks()
{
    // UPDATE audit SET ssn = $1 / INSERT INTO audit (ssn) SELECT ssn FROM staff
    Statement s;
    s.relations = {relation(audit, "audit")};
    s.write_ops = WRITE_INSERT;
    PolicyRules rules = hash_ssn();
    rules.write_ops = WRITE_INSERT;
    rules.masks.push_back(rule("public.audit.ssn", Action::hash));

    query_facts::RowCheck trigger;
    trigger.by = "trigger audit_log on public.audit";
    trigger.any_column = true;
    s.row_checks = {trigger};
    refused(decide(s, rules), error_code::mask_predicate,
            "the write runs trigger audit_log on public.audit, which can read any column, and "
            "the policy masks columns",
            "a trigger under a masking policy");

    query_facts::RowCheck stored;
    stored.by = "constraint ssn_check on public.audit";
    stored.existing = true;
    stored.column = audit_ssn();
    s.row_checks = {stored};
    refused(decide(s, rules), error_code::mask_predicate,
            "the write is checked by constraint ssn_check on public.audit, which compares the "
            "masked column public.audit.ssn",
            "a check reading a masked column as stored");
    s.row_checks[0].column = audit_note();
    allowed(decide(s, rules), "a check reading a column no rule masks, as stored");

    query_facts::RowCheck assigned;
    assigned.by = "unique index audit_ssn_key on public.audit";
    assigned.column = audit_ssn();
    s.row_checks = {assigned};
    allowed(decide(s, rules), "a check of a value the write does not assign");
    query_facts::Write w;
    w.target = audit_ssn();
    w.sources = {staff_ssn()};
    s.writes = {w};
    refused(decide(s, rules), error_code::mask_predicate,
            "the write is checked by unique index audit_ssn_key on public.audit, which compares "
            "the masked column public.staff.ssn",
            "a check of a value the write assigns from a masked column");
    s.writes[0].sources = {staff_name()};
    allowed(decide(s, rules), "a check of a value the write assigns from an unmasked column");
    rules.mask_predicates_allowed = true;
    s.row_checks = {trigger, stored};
    allowed(decide(s, rules), "row checks, mask_predicates allowed");
}

void hash_inputs()
{
    // SELECT coalesce(ssn, $1) AS ssn FROM staff: the hash of the caller's value.
    Statement s = select_staff();
    s.outputs[1].made = "a parameter";
    refused(decide(s, hash_ssn()), error_code::mask_hash_input,
            "column \"ssn\" is hashed and can carry a value no column holds (a parameter): the "
            "hash of a value the caller chooses or knows confirms a guess",
            "a hashed output that can carry a parameter");
    allowed(decide(s, masking_rules({rule("public.staff.ssn", Action::mask)})),
            "a parameter in an output masked otherwise than by a hash");
    PolicyRules trusting = hash_ssn();
    trusting.mask_predicates_allowed = true;
    allowed(decide(s, trusting), "a hashed output that can carry a parameter, trusted");

    // SELECT ssn FROM staff UNION ALL SELECT name FROM staff
    s = select_staff();
    s.outputs[1].sources = {staff_ssn(), staff_name()};
    s.outputs[1].held = {HeldValue{{staff_ssn()}}, HeldValue{{staff_name()}}};
    refused(decide(s, hash_ssn()), error_code::mask_hash_input,
            "column \"ssn\" is hashed and can carry values of public.staff.name, which the policy "
            "does not hash: the hash of a value the caller chooses or knows confirms a guess",
            "a hashed output that can carry another column's values");
    PolicyRules both = hash_ssn();
    both.masks.push_back(rule("public.staff.name", Action::hash));
    allowed(decide(s, both), "a hashed output carrying two hashed columns");

    // A value read through a view: a rule on the view's column hashes it as well.
    s = select_staff();
    const Column view_ssn = col(staff_v, 1, "staff_v", "ssn");
    s.outputs[1].sources = {staff_ssn(), view_ssn, staff_name()};
    s.outputs[1].held = {HeldValue{{staff_ssn()}}, HeldValue{{staff_name(), view_ssn}}};
    PolicyRules view_rule = hash_ssn();
    view_rule.masks.push_back(rule("public.staff_v.ssn", Action::hash));
    allowed(decide(s, view_rule), "a value hashed by one of its names (a view's column)");
}

void whole_rows()
{
    // SELECT (ssn, 'x')::text AS r FROM staff: a whole row, judged field by field.
    Statement s = select_staff();
    Output row;
    row.name = "r";
    row.sources = {staff_ssn()};
    query_facts::Field ssn_field, constant_field;
    ssn_field.held = {HeldValue{{staff_ssn()}}};
    constant_field.made = "a constant";
    row.fields = {ssn_field, constant_field};
    s.outputs = {row};
    PolicyDecision d = decide(s, hash_ssn());
    allowed(d, "a constant beside a hashed field of a whole row");
    ok(d.column_actions == std::vector<Action>{Action::hash},
       "a whole row with a hashed field: hash");

    // SELECT (coalesce(ssn, 'x'))::text: the hashed field itself can carry a constant.
    s.outputs[0].fields[0].made = "a constant";
    refused(decide(s, hash_ssn()), error_code::mask_hash_input,
            "column \"r\" is hashed and can carry a value no column holds (a constant): the hash "
            "of a value the caller chooses or knows confirms a guess",
            "a hashed field of a whole row that can carry a constant");
    s.outputs[0].fields[0].made.reset();
    s.outputs[0].fields[0].held.push_back(HeldValue{{staff_name()}});
    refused(decide(s, hash_ssn()), error_code::mask_hash_input,
            "column \"r\" is hashed and can carry values of public.staff.name, which the policy "
            "does not hash: the hash of a value the caller chooses or knows confirms a guess",
            "a hashed field of a whole row that can carry another column's values");
}

void order_of_masks()
{
    // A computation (5.) before a predicate (6.) before a hash's input (7.).
    Statement s = select_staff();
    s.outputs[1].made = "a parameter";
    s.predicates.push_back(staff_ssn());
    s.unselected = {staff_ssn("upper()")};
    refused(decide(s, hash_ssn()), error_code::mask_expression,
            "the query computes with the masked column public.staff.ssn (upper()); a masked "
            "value may only be returned unchanged",
            "computations first");
    s.unselected.clear();
    refused(decide(s, hash_ssn()), error_code::mask_predicate,
            "the query filters, joins, groups, sorts or compares rows on the masked column "
            "public.staff.ssn",
            "then predicates");
    // Writes (2.) before anything masks say.
    s.write_ops = WRITE_DELETE;
    refused(decide(s, hash_ssn()), error_code::write_op_not_allowed,
            "the policy does not allow delete", "writes before masks");
}

void actions()
{
    Statement s = select_staff();
    s.outputs.push_back(output("both", {staff_ssn(), staff_salary()}));
    PolicyRules rules =
        masking_rules({rule("public.staff.ssn", Action::hash), rule("staff.salary", Action::null),
                       rule("*.staff.s*", Action::mask)});
    PolicyDecision d = decide(s, rules);
    allowed(d, "masked outputs passed through");
    ok(d.column_actions == std::vector<Action>{Action::none, Action::mask, Action::null},
       "each output's action: the strictest rule over its sources");

    query_facts::Param met, unknown, nothing;
    met.sources = {staff_ssn()};
    unknown.unresolvable = "a function in FROM";
    s.params = {met, unknown, nothing};
    d = decide(s, hash_ssn());
    ok(d.param_actions == std::vector<Action>{Action::hash, Action::drop, Action::none},
       "each parameter's action: its columns', drop when one cannot be known");
    d = decide(s, PolicyRules());
    ok(d.param_actions == std::vector<Action>{Action::none, Action::none, Action::none},
       "no mask rule: every parameter kept, even one meeting what cannot be known");

    // Filled when refused, for explain.
    s.untrusted = true;
    d = decide(s, rules);
    ok(d.refused() &&
           d.column_actions == std::vector<Action>{Action::none, Action::mask, Action::null},
       "the actions are filled when the statement is refused");
    s = Statement();
    d = decide(s, rules);
    allowed(d, "a statement with nothing in it");
    ok(d.column_actions.empty() && d.param_actions.empty(), "no output, no parameter: no action");
}

} // namespace

int main()
{
    untrusted_code();
    allow_list();
    writes();
    read_only();
    no_masks();
    unresolvable();
    computations();
    predicates();
    row_checks();
    hash_inputs();
    whole_rows();
    order_of_masks();
    actions();
    return tap::done();
}
