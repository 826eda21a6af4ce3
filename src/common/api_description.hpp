// What a caller may call, as GET /openapi.json and GET /catalog describe it: each saved query its
// policy is granted and does not refuse, with its parameters (their types and rules; those taken
// from the caller's token are left out) and its answer's columns (their types, and how the
// caller's policy masks them), and whether it may send SQL of its own. Made by the worker
// (QueryRunner::describe) from the same plans and decisions its calls run with; rendered by
// http/openapi.hpp and http/mcp.hpp. Plain C++.
#pragma once

#include "rules/mask_rules.hpp"
#include "rules/param_rules.hpp"

#include <string>
#include <vector>

namespace api_description {

// A PostgreSQL type as JSON sees it (call/row_output.hpp writes values so): integers and floats
// are numbers (NaN and the infinities strings), booleans booleans, json and jsonb any JSON value,
// everything else its text output.
enum class Kind { integer, number, boolean, json, string };

struct ValueType {
    Kind kind = Kind::string;
    std::string format;   // JSON Schema's: int32, int64, date, date-time, time, uuid; or empty
    std::string postgres; // the type's name, as format_type gives it
};

struct Param {
    std::string name;
    ValueType type;
    bool has_rule = false;
    param_rules::Rule rule;
};

struct Column {
    std::string name;
    ValueType type;
    masking::Action action = masking::Action::none;
    bool is_text = false; // mask, mask_email and partial keep characters of a text; others null
};

struct Query {
    std::string name;
    std::string description;
    int version = 0;
    bool writes = false;
    bool returns_rows = true; // a write without RETURNING answers rows_affected
    std::vector<Param> params;
    std::vector<Column> columns;
};

struct Api {
    std::vector<Query> queries; // by name
    // The caller's limits as the RateLimit-Policy field says them (http/limit_fields.hpp), so a
    // client can pace itself before it is refused; empty when it has none.
    std::string limit_policies;
    // The caller's policy takes SQL of its own (grant_adhoc): /openapi.json describes POST /sql
    // and GET /schema, and MCP lists its SQL tools (http/sql_tools.hpp).
    bool adhoc = false;
    // What that SQL may write (WriteOp bits): none while querygate.allow_writes is off.
    int adhoc_write_ops = 0;
    // The names of MCP's SQL tools that a saved query the policy grants has (listed here or not):
    // the query keeps the name.
    std::vector<std::string> sql_tool_names_taken;
};

} // namespace api_description
