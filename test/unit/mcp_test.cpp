// MCP's messages (src/http/mcp.hpp): what is a JSON-RPC message and what is not, which origins may
// call, and that every answer made is one valid JSON-RPC response, whatever the answer holds.
#include "http/json_body.hpp"
#include "http/mcp.hpp"
#include "tap.hpp"

#include <jansson.h>

#include <cstddef>
#include <string>

using tap::is;
using tap::ok;

namespace {

using Kind = json_body::Value::Kind;

const json_body::Value *member(const json_body::Value &v, const char *name)
{
    for (const auto &m : v.members)
        if (m.first == name)
            return &m.second;
    return nullptr;
}

// The answer parses as one JSON-RPC 2.0 response object with the given id's text.
bool response_with_id(const std::string &text, const std::string &id)
{
    json_body::Value v;
    std::string error;
    if (!json_body::parse(text, v, error) || v.kind != Kind::object)
        return false;
    const json_body::Value *version = member(v, "jsonrpc");
    const json_body::Value *got = member(v, "id");
    return version != nullptr && version->text == "2.0" && got != nullptr &&
           (got->kind == Kind::string ? "\"" + got->text + "\""
            : got->kind == Kind::null ? std::string("null")
                                      : got->text) == id &&
           (member(v, "result") != nullptr) != (member(v, "error") != nullptr);
}

mcp::Message read(const std::string &body, bool &parsed, int &code)
{
    mcp::Message m;
    std::string reason;
    code = 0;
    parsed = mcp::parse(body, m, code, reason);
    return m;
}

} // namespace

int main()
{
    bool parsed = false;
    int code = 0;
    mcp::Message m = read(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})", parsed, code);
    ok(parsed && m.kind == mcp::Message::Kind::request, "a request");
    is(m.id, std::string("7"), "its numeric id kept as written");
    is(m.method, std::string("tools/list"), "its method");
    m = read(R"({"jsonrpc":"2.0","id":"a\"b","method":"ping"})", parsed, code);
    is(m.id, std::string("\"a\\\"b\""), "a string id, quoted again as JSON");
    m = read(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", parsed, code);
    ok(parsed && m.kind == mcp::Message::Kind::notification, "no id: a notification");
    m = read(R"({"jsonrpc":"2.0","id":3,"result":{}})", parsed, code);
    ok(parsed && m.kind == mcp::Message::Kind::response, "a result: a response of the client's");

    read("[]", parsed, code);
    ok(!parsed && code == mcp::invalid_request, "a batch: invalid request");
    read(R"({"jsonrpc":"1.0","id":1,"method":"ping"})", parsed, code);
    ok(!parsed && code == mcp::invalid_request, "another jsonrpc version: invalid request");
    read(R"({"jsonrpc":"2.0","id":null,"method":"ping"})", parsed, code);
    ok(!parsed && code == mcp::invalid_request, "a null id: invalid request");
    read(R"({"jsonrpc":"2.0","id":{},"method":"ping"})", parsed, code);
    ok(!parsed && code == mcp::invalid_request, "an object id: invalid request");
    read(R"({"jsonrpc":"2.0","id":1,"method":5})", parsed, code);
    ok(!parsed && code == mcp::invalid_request, "a method that is not a string: invalid request");
    read(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})", parsed, code);
    ok(!parsed && code == mcp::invalid_request, "params that are a number: invalid request");
    read(R"({"jsonrpc":"2.0","id":1,)", parsed, code);
    ok(!parsed && code == mcp::parse_error, "not JSON: parse error");
    read(R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"})", parsed, code);
    ok(!parsed && code == mcp::parse_error, "a member named twice is not read either way");

    ok(mcp::origin_allowed("http://localhost:3000", false), "a loopback name may call");
    ok(mcp::origin_allowed("http://127.0.0.1", false), "127.0.0.1 may call");
    ok(mcp::origin_allowed("http://[::1]:8080", false), "[::1] may call");
    ok(mcp::origin_allowed("HTTP://LOCALHOST", false), "in any case");
    ok(!mcp::origin_allowed("http://evil.example.com", false), "another host may not");
    ok(!mcp::origin_allowed("http://localhost.evil.example.com", false),
       "nor a host that starts like a loopback name");
    ok(!mcp::origin_allowed("http://127.0.0.1.nip.io", false),
       "nor one that starts like its address");
    ok(!mcp::origin_allowed("null", false), "nor an opaque origin");
    ok(mcp::origin_allowed("https://app.example.com", true), "a listed origin may");

    ok(mcp::supported_version("2025-11-25") && mcp::supported_version("2025-06-18") &&
           mcp::supported_version("2025-03-26") && !mcp::supported_version("2024-11-05"),
       "the revisions spoken");
    ok(response_with_id(mcp::result("1", mcp::initialize_result("1999-01-01")), "1"),
       "initialize's answer is a response");
    ok(mcp::initialize_result("2025-06-18").find("\"protocolVersion\":\"2025-06-18\"") !=
           std::string::npos,
       "a spoken version is answered with itself");
    ok(mcp::initialize_result("1999-01-01").find("\"protocolVersion\":\"2025-11-25\"") !=
           std::string::npos,
       "another with the newest");

    // Answers whose text needs escaping stay one valid response.
    const std::string rows = R"([{"name":"a \"quoted\"\nline \u0000 and \\ back"}])";
    ok(response_with_id(mcp::tool_result("\"x\"", rows, true, false), "\"x\""),
       "a tool's rows: one valid response");
    ok(response_with_id(mcp::tool_result("2", R"({"rows_affected":3})", false, true), "2"),
       "a write's object: one valid response");
    ok(response_with_id(mcp::tool_error("4", R"({"error":"no \"x\"","code":"c"})"), "4"),
       "a tool's error: one valid response");
    ok(response_with_id(mcp::error("null", mcp::parse_error, "bad \"json\"\n", "invalid_message"),
                        "null"),
       "an error without an id: one valid response");

    json_body::Value params;
    std::string error, name, reason;
    const json_body::Value *args = nullptr;
    json_body::parse(R"({"name":"account","arguments":{"aid":7}})", params, error);
    ok(mcp::tool_call(params, name, args, reason) && name == "account" && args != nullptr &&
           args->members.size() == 1,
       "tools/call's name and arguments");
    json_body::parse(R"({"name":"account","arguments":[1]})", params, error);
    ok(!mcp::tool_call(params, name, args, reason), "arguments that are not an object");
    json_body::parse(R"({"arguments":{}})", params, error);
    ok(!mcp::tool_call(params, name, args, reason), "no name");
    json_body::parse(R"({"name":"account","arguments":null})", params, error);
    ok(mcp::tool_call(params, name, args, reason) && args == nullptr, "null arguments: none");

    // A tool that answers rows takes page and page_size; a write without RETURNING does not.
    api_description::Api api;
    api.queries.resize(2);
    api.queries[0].name = "people";
    api.queries[1].name = "bump";
    api.queries[1].writes = true;
    api.queries[1].returns_rows = false;
    json_t *list = json_loads(mcp::tools_list_result(api).c_str(), 0, nullptr);
    json_t *tools = json_object_get(list, "tools");
    ok(json_array_size(tools) == 2, "tools/list: a tool a query");
    auto input_property = [&](std::size_t tool, const char *property) {
        return json_object_get(
            json_object_get(json_object_get(json_array_get(tools, tool), "inputSchema"),
                            "properties"),
            property);
    };
    const char *page_type = json_string_value(json_object_get(input_property(0, "page"), "type"));
    is(std::string(page_type != nullptr ? page_type : ""), std::string("integer"),
       "a query's tool takes page, an integer");
    ok(input_property(0, "page_size") != nullptr, "and page_size");
    ok(input_property(1, "page") == nullptr && input_property(1, "page_size") == nullptr,
       "a write without RETURNING takes neither");
    json_decref(list);

    // SQL of the caller's own: its three tools, but one whose name a granted query keeps.
    api.adhoc = true;
    api.sql_tool_names_taken = {"list_tables"};
    list = json_loads(mcp::tools_list_result(api).c_str(), 0, nullptr);
    tools = json_object_get(list, "tools");
    std::string names;
    for (std::size_t i = 0; i < json_array_size(tools); i++)
        names +=
            std::string(json_string_value(json_object_get(json_array_get(tools, i), "name"))) + " ";
    is(names, std::string("people bump execute_sql describe_table "),
       "the SQL tools after the queries', list_tables left to the query that has the name");
    json_t *execute = json_array_get(tools, 2);
    ok(json_is_true(json_object_get(json_object_get(execute, "annotations"), "readOnlyHint")),
       "execute_sql is read-only when its SQL may not write");
    const char *sql_type = json_string_value(json_object_get(
        json_object_get(json_object_get(json_object_get(execute, "inputSchema"), "properties"),
                        "sql"),
        "type"));
    is(std::string(sql_type != nullptr ? sql_type : ""), std::string("string"),
       "its statement a string");
    is(std::string(json_string_value(json_array_get(
           json_object_get(json_object_get(execute, "inputSchema"), "required"), 0))),
       std::string("sql"), "and required");
    ok(json_object_get(json_object_get(json_array_get(tools, 3), "outputSchema"), "properties") !=
           nullptr,
       "describe_table has an output schema");
    json_decref(list);
    api.adhoc_write_ops = 2;
    list = json_loads(mcp::tools_list_result(api).c_str(), 0, nullptr);
    ok(json_is_false(json_object_get(
           json_object_get(json_array_get(json_object_get(list, "tools"), 2), "annotations"),
           "readOnlyHint")),
       "and not read-only when it may");
    json_decref(list);
    return tap::done();
}
