// MCP's tools for SQL a caller writes: see sql_tools.hpp.
#include "http/sql_tools.hpp"

#include "http/json_schema.hpp"
#include "http/schema_document.hpp"

#include <algorithm>
#include <utility>

namespace sql_tools {

namespace {

using namespace json_schema;

Owned execute_sql_input()
{
    Owned p = object();
    add_statement(p);
    add_paging(p);
    return closed_object(std::move(p), {"sql"});
}

// The rows and whether more follow, as a saved query's tool answers them, or a write's own
// object when it returns no rows.
Owned execute_sql_output()
{
    Owned p = object();
    Owned rows = typed("array", "the rows of the page asked for (the first when none was), "
                                "each column as the caller's policy serves it");
    Owned row = object();
    set(row, "type", str("object"));
    set(rows, "items", std::move(row));
    set(p, "rows", std::move(rows));
    set(p, "has_more",
        typed("boolean",
              "whether rows beyond this page were left out: call again with the next page"));
    set(p, "rows_affected",
        typed("integer", "rows a write changed, when it returns none (no RETURNING)"));
    Owned s = object();
    set(s, "type", str("object"));
    set(s, "properties", std::move(p));
    return s;
}

Owned describe_table_input()
{
    Owned p = object();
    set(p, "table",
        typed("string", "the table's name, or schema.name, as a statement would name it"));
    return closed_object(std::move(p), {"table"});
}

Owned tool(const char *name, const char *description, Owned input, Owned output, bool read_only)
{
    Owned t = object();
    set(t, "name", str(name));
    set(t, "description", str(description));
    set(t, "inputSchema", std::move(input));
    set(t, "outputSchema", std::move(output));
    Owned hints = object();
    set(hints, "readOnlyHint", boolean(read_only));
    set(hints, "destructiveHint", boolean(!read_only));
    set(hints, "idempotentHint", boolean(read_only));
    set(hints, "openWorldHint", boolean(false));
    set(t, "annotations", std::move(hints));
    return t;
}

} // namespace

void add_statement(Owned &properties)
{
    set(properties, "sql",
        typed("string", "one SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE statement, with "
                        ":name placeholders for values"));
    Owned params = typed("object", "the placeholders' values, by name (null is NULL)");
    set(params, "additionalProperties", boolean(true));
    set(properties, "params", std::move(params));
}

bool is_sql_tool(const std::string &name)
{
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

void append(Owned &tools, const std::vector<std::string> &taken, int write_ops)
{
    const auto free = [&taken](const char *name) {
        return std::find(taken.begin(), taken.end(), name) == taken.end();
    };
    if (free(execute_sql))
        json_schema::append(
            tools, tool(execute_sql,
                        "Runs one SQL statement the caller writes, governed as the saved queries "
                        "are: only the tables list_tables shows, each column masked as it says; "
                        "writes only those it names. Answers rows a page at a time.",
                        execute_sql_input(), execute_sql_output(), write_ops == 0));
    if (free(list_tables))
        json_schema::append(
            tools,
            tool(list_tables,
                 "Lists the tables SQL of the caller's own may use, with their columns (type, "
                 "mask, whether a statement may filter on them), what it may write and which "
                 "functions it may call.",
                 closed_object(object(), {}), schema_document::json_schema_of(false), true));
    if (free(describe_table))
        json_schema::append(tools, tool(describe_table,
                                        "Describes one table SQL of the caller's own may use: its "
                                        "columns, and its DDL as the caller may see it.",
                                        describe_table_input(),
                                        schema_document::json_schema_of(true), true));
}

} // namespace sql_tools
