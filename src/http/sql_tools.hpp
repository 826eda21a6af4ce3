// MCP's tools for SQL a caller writes, listed for a caller whose policy takes some (grant_adhoc):
// execute_sql runs a statement as POST /sql does, list_tables answers what GET /schema does
// without the DDL, and describe_table one table as GET /schema?table= does: their names, and
// their input and output schemas. The endpoint (api/mcp_endpoint.hpp) reads their arguments and
// runs them. Plain C++ (jansson).
//
// A saved query keeps its name: a policy that grants one named execute_sql, list_tables or
// describe_table lists and calls that query under it, and the SQL tool of that name is neither
// listed nor called for its callers (POST /sql and GET /schema still are). Granting ad-hoc SQL
// must not change what a tool name an agent already calls does, and the administrator who chose
// the name can free it.
#pragma once

#include <string>
#include <vector>

// No jansson here: the PostgreSQL side reads the names (call/api_describer.cpp), and jansson's
// json_object clashes with the SQL function of that name PostgreSQL's headers declare.
namespace json_schema {
struct Owned; // http/json_schema.hpp
}

namespace sql_tools {

inline constexpr char execute_sql[] = "execute_sql";
inline constexpr char list_tables[] = "list_tables";
inline constexpr char describe_table[] = "describe_table";
inline constexpr const char *names[] = {execute_sql, list_tables, describe_table};

// Whether `name` is one of the three.
bool is_sql_tool(const std::string &name);

// The statement and its placeholders' values, as POST /sql's body and execute_sql's arguments
// give them: "sql" and "params", added to an object's properties.
void add_statement(json_schema::Owned &properties);

// The tools, appended to tools/list's array, but those whose names are `taken` (by a saved query
// the policy grants). `write_ops`: what the SQL may write (WriteOp bits); none, and execute_sql is
// annotated read-only.
void append(json_schema::Owned &tools, const std::vector<std::string> &taken, int write_ops);

} // namespace sql_tools
