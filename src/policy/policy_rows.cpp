// The one decoder of policy rows: see policy_rows.hpp.
#include "policy/policy_rows.hpp"

#include "common/comma_list.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

const char policy_rows_select[] =
    "SELECT name, run_as::pg_catalog.oid, "
    "pg_catalog.array_to_string(allowed_tables::pg_catalog.oid[], ','), "
    "pg_catalog.array_to_string(write_ops, ','), mask_predicates, allow_superuser, "
    "history_params, "
    "pg_catalog.ceil(pg_catalog.date_part('epoch', statement_timeout) * 1000)::pg_catalog.int8, "
    "events, events_scope, hash_scope, adhoc, pg_catalog.array_to_string(adhoc_write_ops, ','), "
    "adhoc_search_path FROM querygate.policy";

const char mask_rows_select[] = "SELECT policy, pattern, action FROM querygate.mask_rule";

namespace {

Oid oid_of(const std::string &text)
{
    return static_cast<Oid>(std::strtoul(text.c_str(), nullptr, 10));
}

// The WriteOp bits of names joined by commas (nullptr: none); false for an unknown name, which
// grant_writes and grant_adhoc never store.
bool decode_write_ops(const char *names, int &bits)
{
    bits = 0;
    bool ok = true;
    for (const std::string &op : comma_list::split(names)) {
        const int bit = write_ops::from_name(op.c_str());
        ok = ok && bit != 0;
        bits |= bit;
    }
    return ok;
}

// A boolean cell: "t" or "f" (nullptr: false).
bool is_true(const char *cell)
{
    return cell && std::strcmp(cell, "t") == 0;
}

} // namespace

bool decode_policy(const PolicyRow &row, DecodedPolicy &out, std::string &error)
{
    const char *const *c = row.cells;
    out = DecodedPolicy();
    out.name = c[POLICY_NAME] ? c[POLICY_NAME] : "";
    out.run_as = c[POLICY_RUN_AS] ? oid_of(c[POLICY_RUN_AS]) : InvalidOid;
    out.allow_superuser = is_true(c[POLICY_ALLOW_SUPERUSER]);
    out.history_params = is_true(c[POLICY_HISTORY_PARAMS]);
    out.events = is_true(c[POLICY_EVENTS]);
    out.hash_scope = c[POLICY_HASH_SCOPE] ? c[POLICY_HASH_SCOPE] : "";
    out.events_whole_policy =
        c[POLICY_EVENTS_SCOPE] && std::strcmp(c[POLICY_EVENTS_SCOPE], "policy") == 0;
    // At least a millisecond (the column holds only positive intervals), at most what an int
    // timer takes: longer is no limit worth arming beyond the server's.
    out.statement_timeout_ms =
        c[POLICY_STATEMENT_TIMEOUT]
            ? std::min(std::max(std::strtol(c[POLICY_STATEMENT_TIMEOUT], nullptr, 10), 1L),
                       static_cast<long>(INT32_MAX))
            : 0;
    PolicyRules &rules = out.rules;
    rules.has_allowed_tables = c[POLICY_ALLOWED_TABLES] != nullptr;
    for (const std::string &t : comma_list::split(c[POLICY_ALLOWED_TABLES]))
        rules.allowed_tables.push_back(oid_of(t));
    int adhoc_ops = 0;
    if (!decode_write_ops(c[POLICY_WRITE_OPS], rules.write_ops) ||
        !decode_write_ops(c[POLICY_ADHOC_WRITE_OPS], adhoc_ops)) {
        error = "the policy holds an unknown write operation";
        return false;
    }
    rules.mask_predicates_allowed =
        c[POLICY_MASK_PREDICATES] && std::strcmp(c[POLICY_MASK_PREDICATES], "allow") == 0;
    for (int i = 0; i < row.nmasks; i++) {
        masking::Rule rule;
        std::string problem;
        if (row.patterns[i] == nullptr || row.actions[i] == nullptr ||
            !masking::parse_pattern(row.patterns[i], rule.pattern, problem) ||
            !masking::parse_action(row.actions[i], rule.action)) {
            error = std::string("the policy holds an invalid mask rule \"") +
                    (row.patterns[i] ? row.patterns[i] : "") + "\"";
            return false;
        }
        rules.masks.push_back(std::move(rule));
    }
    // Ad-hoc SQL is governed by the same rules, but writes only what both grants name; and never
    // without an allow-list, whatever the row says (the table's CHECK makes it so).
    out.adhoc = is_true(c[POLICY_ADHOC]) && rules.has_allowed_tables;
    out.adhoc_search_path = c[POLICY_ADHOC_SEARCH_PATH] ? c[POLICY_ADHOC_SEARCH_PATH] : "";
    out.adhoc_rules = rules;
    out.adhoc_rules.write_ops = rules.write_ops & adhoc_ops;
    return true;
}
