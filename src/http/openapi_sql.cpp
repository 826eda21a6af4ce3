// POST /sql and GET /schema in GET /openapi.json, for a caller whose policy takes SQL of its own:
// /sql's body (the statement, its placeholders' values and a call's options) and its answer in
// every format (rows whose columns the statement decides, or a write's count), /schema's answer
// (http/schema_document.hpp), and the errors both share with every call. Plain C++ (jansson).
#include "http/openapi_parts.hpp"

#include "http/schema_document.hpp"
#include "http/sql_tools.hpp"

#include <utility>

namespace openapi {

namespace {

using namespace json_schema;

const char body_ref[] = "#/components/schemas/querygate.sql_body";
const char row_ref[] = "#/components/schemas/querygate.sql_row";
const char count_ref[] = "#/components/schemas/querygate.sql_count";
const char schema_ref[] = "#/components/schemas/querygate.schema";

Owned body_schema()
{
    Owned props = object();
    sql_tools::add_statement(props);
    for (const char *option : {"page", "page_size", "format", "timeout", "stream"})
        set(props, option, reference(std::string("#/components/schemas/option.") + option));
    return closed_object(std::move(props), {"sql"});
}

Owned count_schema()
{
    Owned props = object();
    set(props, "rows_affected", typed("integer", "rows the write changed"));
    return complete_object(std::move(props));
}

Owned operation(const char *id, const char *summary, Owned parameters, Owned ok)
{
    Owned op = object();
    set(op, "operationId", str(id));
    set(op, "summary", str(summary));
    Owned tags = array();
    append(tags, str("sql"));
    set(op, "tags", std::move(tags));
    set(op, "parameters", std::move(parameters));
    Owned responses = object();
    set(responses, "200", std::move(ok));
    set(op, "responses", error_responses(std::move(responses)));
    return op;
}

// POST /sql: the rows (their columns are the statement's), or a write's count without RETURNING.
Owned sql_operation()
{
    Owned ok = object();
    set(ok, "description",
        str("the rows, a page of them unless stream=true; or, for a write "
            "without RETURNING, how many it changed"));
    Owned rows = object();
    set(rows, "type", str("array"));
    set(rows, "items", reference(row_ref));
    Owned either = array();
    append(either, std::move(rows));
    append(either, reference(count_ref));
    Owned json = object();
    set(json, "anyOf", std::move(either));
    set(ok, "content", answer_content(std::move(json), row_ref));
    set(ok, "headers", answer_headers());
    Owned parameters = array();
    append(parameters, reference("#/components/parameters/Accept"));
    Owned op = operation("querygate.sql",
                         "runs a statement the caller writes, governed as its policy's saved "
                         "queries are",
                         std::move(parameters), std::move(ok));
    Owned body = object();
    set(body, "required", boolean(true));
    set(body, "content", json_content(reference(body_ref)));
    set(op, "requestBody", std::move(body));
    return op;
}

// GET /schema, or one table of it (?table=).
Owned schema_operation()
{
    Owned ok = object();
    set(ok, "description", str("what SQL of the caller's own may use"));
    set(ok, "content", json_content(reference(schema_ref)));
    Owned headers = object();
    set(headers, "X-Request-Id", header("string", "the request's id, in its error body too"));
    set(headers, "RateLimit", reference("#/components/headers/RateLimit"));
    set(ok, "headers", std::move(headers));
    Owned table = object();
    set(table, "name", str("table"));
    set(table, "in", str("query"));
    set(table, "required", boolean(false));
    set(table, "schema", typed("string", "name or schema.name"));
    set(table, "description",
        str("that table alone (403 name_not_allowed when it is not on the policy's allow-list, "
            "or not there)"));
    Owned parameters = array();
    append(parameters, std::move(table));
    return operation("querygate.schema",
                     "the tables, columns, writes and functions SQL of the caller's own may use",
                     std::move(parameters), std::move(ok));
}

} // namespace

void add_sql_paths(Owned &paths, Owned &schemas, Owned &tags)
{
    Owned sql = object();
    set(sql, "post", sql_operation());
    set(paths, "/sql", std::move(sql));
    Owned schema = object();
    set(schema, "get", schema_operation());
    set(paths, "/schema", std::move(schema));
    set(schemas, "querygate.sql_body", body_schema());
    Owned row = typed("object", "a row: its columns are the statement's, each as the "
                                "caller's policy serves it");
    set(row, "additionalProperties", boolean(true));
    set(schemas, "querygate.sql_row", std::move(row));
    set(schemas, "querygate.sql_count", count_schema());
    set(schemas, "querygate.schema", schema_document::json_schema_of(true));
    Owned tag = object();
    set(tag, "name", str("sql"));
    set(tag, "description", str("SQL the caller writes"));
    append(tags, std::move(tag));
}

} // namespace openapi
