// What a policy decides about a statement: refused (and why, with the API's code), or allowed with
// one masking action per output column and per parameter. Plain C++ over plain data: the facts of
// the statement's analysis the decision reads (policy/query_analysis.hpp holds them as palloc'd
// data; policy/policy_decision.hpp copies them into a query_facts::Statement) and the policy's
// rules. So the worker, explain, grant_query and mask all decide alike, and the decision is
// unit-tested (test/unit/policy_decision_test.cpp) and fuzzed (test/fuzz/policy_decision_fuzz.cpp)
// without a server.
#pragma once

#include "common/api_error.hpp"
#include "rules/mask_rules.hpp"
#include "rules/write_ops.hpp"

#include <optional>
#include <string>
#include <vector>

// A relation's identity: PostgreSQL's Oid, which is an unsigned int.
using RelationId = unsigned int;

struct PolicyRules {
    bool has_allowed_tables = false;
    std::vector<RelationId> allowed_tables;
    int write_ops = 0; // WriteOp bits the policy may use
    std::vector<masking::Rule> masks;
    bool mask_predicates_allowed = false;
};

struct PolicyDecision {
    // Unset (status 0) when allowed; else error_code::untrusted_code, table_not_allowed,
    // write_op_not_allowed, read_only, mask_unresolvable, mask_expression, mask_hash_input or
    // mask_predicate (all HTTP 403), with a message for the caller naming the table, column or
    // function.
    ErrorCode refusal{0, ""};
    std::string refusal_message;
    // One per output, in order.
    std::vector<masking::Action> column_actions;
    // One per parameter, in order: how its value is masked in the run history, the strictest
    // action over the columns it meets (drop when one of them cannot be known and the policy
    // masks anything).
    std::vector<masking::Action> param_actions;

    bool refused() const { return refusal.status != 0; }
};

// The facts of a statement's analysis, as the decision reads them (each mirrors the struct of
// policy/query_analysis.hpp named beside it; a text that is absent there is NULL there).
namespace query_facts {

using Text = std::optional<std::string>;

// A base column (SourceColumn): a relation's attribute, with names for rules and messages.
struct Column {
    RelationId relid = 0;
    int attnum = 0;
    std::string schema;
    std::string table;
    std::string column;
    // In a lineage: absent when the value passes unchanged; else what computed with it on the way
    // ("lower()", "operator +", ...).
    Text computed;
};

// A relation the statement names (RelationRef), views as themselves.
struct Relation {
    RelationId relid = 0;
    std::string schema;
    std::string name;
};

// A value read from a table that can reach an output (HeldValue): the names it goes by (its
// column, its table's ancestors' same-named columns, the views it is read through), each among
// the output's sources. A rule on any of them applies to it.
struct HeldValue {
    std::vector<Column> names;
};

// A field of a whole row in an output (OutputField): what reaches it.
struct Field {
    Text made;
    std::vector<HeldValue> held;
};

// An output column (OutputLineage).
struct Output {
    std::string name;
    std::vector<Column> sources;
    Text unresolvable; // why its sources cannot be known
    // The first value reaching it that no column holds ("a parameter", "a constant", "lower()").
    Text made;
    std::vector<HeldValue> held;
    std::vector<Field> fields;
};

// What a parameter meets (ParamLineage).
struct Param {
    std::vector<Column> sources;
    Text unresolvable;
};

// A column a write assigns and where its value comes from (WriteLineage).
struct Write {
    Column target;
    std::vector<Column> sources;
    Text unresolvable;
};

// What the database checks on a row a write changes (RowCheck).
struct RowCheck {
    std::string by;
    bool any_column = false;
    bool existing = false;
    Column column;
};

// The statement (QueryAnalysis).
struct Statement {
    std::vector<Relation> relations;
    int write_ops = 0;
    std::vector<Output> outputs;
    std::vector<Column> predicates;
    Text predicate_unresolvable;
    std::vector<Column> unselected;
    std::vector<Write> writes;
    std::vector<RowCheck> row_checks;
    std::vector<Param> params;
    bool untrusted = false; // it runs code the policy's role does not trust (why: explain's)
    Text reads_database;    // a function that can read any table, as "name()"
    Text writes_outside;    // a function that writes where a read-only transaction does not look
    Text value_copies;      // a catalog relation holding copies of column values
};

} // namespace query_facts

// Checks, in this order: code the policy's role does not trust, the table allow-list (relations and
// functions that read the database), the write operations (and, for a read, functions that write
// anyway), then, only when the policy has any mask rule, unresolvable output columns, statistics,
// masked columns computed with on their way to an output or an assignment (unless allowed),
// masked columns in predicates (unless allowed) and hashed outputs that can carry another value
// (unless allowed); and the strictest matching mask action for each output column, over all of
// its sources. The first refusal found is the decision's; the actions are filled even then, so
// that explain can show them. Throws only std::bad_alloc.
PolicyDecision decide(const query_facts::Statement &statement, const PolicyRules &rules);
