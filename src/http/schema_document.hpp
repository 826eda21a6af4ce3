// GET /schema's answer, and MCP's list_tables and describe_table answers: what a caller may use in
// SQL of its own (common/schema_description.hpp) as JSON, and the JSON Schema (2020-12) that
// describes that JSON, which /openapi.json and MCP's tools/list give. Plain C++ (jansson).
//
//   {"search_path": "...",
//    "tables": [{"schema", "name", "kind", "columns": [{"name", "type", "nullable", "mask",
//                "filterable"}], "ddl"}],
//    "write_ops": ["update"], "functions": "..."}
//
// "mask" is the action's name (masking::action_name) or null; "ddl" is there only when asked for.
#pragma once

#include "common/schema_description.hpp"
#include "http/json_schema.hpp"

#include <string>

namespace schema_document {

// The answer, compact; with_ddl: each table with its "ddl".
std::string json(const schema_description::Schema &schema, bool with_ddl);

// The JSON Schema of json()'s answer (with or without "ddl").
json_schema::Owned json_schema_of(bool with_ddl);

} // namespace schema_document
