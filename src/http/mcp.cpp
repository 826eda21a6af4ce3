// MCP's messages: see mcp.hpp.
#include "http/mcp.hpp"

#include "common/version.hpp"
#include "http/json_schema.hpp"
#include "http/sql_tools.hpp"
#include "common/json_text.hpp"

#include <cctype>
#include <new>

namespace mcp {

namespace {

using api_description::Query;
using json_body::Value;
using namespace json_schema;

const Value *member(const Value &object, const char *name)
{
    for (const auto &[key, value] : object.members)
        if (key == name)
            return &value;
    return nullptr;
}

// The host of an origin ("scheme://host[:port]"), lower-cased, brackets kept for IPv6.
std::string origin_host(const std::string &origin)
{
    const std::size_t scheme = origin.find("://");
    if (scheme == std::string::npos)
        return std::string();
    std::string rest = origin.substr(scheme + 3);
    std::size_t end = rest.size();
    if (!rest.empty() && rest[0] == '[')
        end = rest.find(']') == std::string::npos ? rest.size() : rest.find(']') + 1;
    else if (rest.find_first_of(":/") != std::string::npos)
        end = rest.find_first_of(":/");
    std::string host = rest.substr(0, end);
    for (char &c : host)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return host;
}

// Whether a tool answers rows (a page of them), rather than a write's own object.
bool answers_rows(const Query &q)
{
    return !(q.writes && !q.returns_rows);
}

// A tool's arguments: its query's parameters, and for one that answers rows page and page_size,
// as /q/{name} takes them (no parameter may have either name).
Owned input_schema(const Query &q)
{
    Owned s = params_schema(q);
    if (!answers_rows(q))
        return s;
    json_t *props = json_object_get(s.v, "properties");
    if (props == nullptr) // never: params_schema makes it
        return s;
    Owned properties(json_incref(props));
    add_paging(properties);
    return s;
}

// The schema with every list of types ("type": ["integer", "null"]) said as "anyOf" of one type
// each, in place: both mean the same in JSON Schema, but validators in strict mode (Ajv's
// strictTypes, which MCP clients use) warn on a list of types, and some clients reject it.
void portable_types(json_t *schema)
{
    if (json_is_array(schema)) {
        std::size_t i;
        json_t *item;
        json_array_foreach(schema, i, item)
        {
            portable_types(item);
        }
        return;
    }
    if (!json_is_object(schema))
        return;
    const char *key;
    json_t *value;
    json_object_foreach(schema, key, value)
    {
        portable_types(value);
    }
    json_t *types = json_object_get(schema, "type");
    if (!json_is_array(types))
        return;
    Owned any = array();
    std::size_t i;
    json_t *type;
    json_array_foreach(types, i, type)
    {
        Owned one = object();
        set(one, "type", Owned(json_incref(type)));
        append(any, std::move(one));
    }
    if (json_object_set_new(schema, "anyOf", any.take()) != 0)
        throw std::bad_alloc();
    json_object_del(schema, "type");
}

// A tool's answer schema: the rows and whether more follow, or a write's own object.
Owned output_schema(const Query &q)
{
    if (!answers_rows(q))
        return row_schema(q);
    Owned s = object();
    set(s, "type", str("object"));
    Owned props = object();
    Owned rows = object();
    set(rows, "type", str("array"));
    set(rows, "items", row_schema(q));
    set(rows, "description", str("the rows of the page asked for (the first when none was)"));
    set(props, "rows", std::move(rows));
    Owned more = object();
    set(more, "type", str("boolean"));
    set(more, "description",
        str("whether rows beyond this page were left out: call again with the next page"));
    set(props, "has_more", std::move(more));
    set(s, "properties", std::move(props));
    Owned req = array();
    append(req, str("rows"));
    append(req, str("has_more"));
    set(s, "required", std::move(req));
    return s;
}

Owned tool(const Query &q)
{
    Owned t = object();
    set(t, "name", str(q.name));
    set(t, "description",
        str(q.description.empty() ? "Runs the saved query " + q.name + "." : q.description));
    Owned in = input_schema(q);
    portable_types(in.v);
    set(t, "inputSchema", std::move(in));
    Owned out = output_schema(q);
    portable_types(out.v);
    set(t, "outputSchema", std::move(out));
    Owned hints = object();
    set(hints, "readOnlyHint", boolean(!q.writes));
    set(hints, "destructiveHint", boolean(q.writes));
    set(hints, "idempotentHint", boolean(!q.writes));
    set(hints, "openWorldHint", boolean(false));
    set(t, "annotations", std::move(hints));
    return t;
}

} // namespace

bool supported_version(const std::string &version)
{
    for (const char *v : versions)
        if (version == v)
            return true;
    return false;
}

bool origin_allowed(const std::string &origin, bool listed)
{
    if (listed)
        return true;
    const std::string host = origin_host(origin);
    return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

bool parse(const std::string &body, Message &out, int &code, std::string &reason)
{
    Value root;
    if (!json_body::parse(body, root, reason)) {
        code = parse_error;
        reason = "the body is not JSON: " + reason;
        return false;
    }
    code = invalid_request;
    if (root.kind != Value::Kind::object) {
        reason = root.kind == Value::Kind::array
                     ? "a batch is not accepted: send one JSON-RPC message a request"
                     : "a JSON-RPC message is an object";
        return false;
    }
    const Value *version = member(root, "jsonrpc");
    if (version == nullptr || version->kind != Value::Kind::string || version->text != "2.0") {
        reason = "\"jsonrpc\" must be \"2.0\"";
        return false;
    }
    const Value *id = member(root, "id");
    const Value *method = member(root, "method");
    if (method == nullptr) {
        // A response to a request of ours (we send none): taken and set aside.
        if (id != nullptr && (member(root, "result") != nullptr || member(root, "error"))) {
            out.kind = Message::Kind::response;
            return true;
        }
        reason = "a request names its \"method\"";
        return false;
    }
    if (method->kind != Value::Kind::string) {
        reason = "\"method\" must be a string";
        return false;
    }
    out.method = method->text;
    if (const Value *params = member(root, "params")) {
        if (params->kind != Value::Kind::object && params->kind != Value::Kind::array) {
            reason = "\"params\" must be an object";
            return false;
        }
        out.params = *params;
    }
    if (id == nullptr) {
        out.kind = Message::Kind::notification;
        return true;
    }
    out.kind = Message::Kind::request;
    out.id.clear();
    if (id->kind == Value::Kind::number) {
        out.id = id->text;
    } else if (id->kind == Value::Kind::string) {
        json_text::append_string(out.id, id->text);
    } else {
        reason = "\"id\" must be a string or a number";
        return false;
    }
    return true;
}

std::string result(const std::string &id, const std::string &result_json)
{
    std::string out;
    out.reserve(result_json.size() + id.size() + 32);
    out.append("{\"jsonrpc\":\"2.0\",\"id\":").append(id).append(",\"result\":");
    out.append(result_json).push_back('}');
    return out;
}

std::string error(const std::string &id, int code, const std::string &message,
                  const std::string &stable_code)
{
    std::string out = "{\"jsonrpc\":\"2.0\",\"id\":" + id +
                      ",\"error\":{\"code\":" + std::to_string(code) + ",\"message\":";
    json_text::append_string(out, message);
    if (!stable_code.empty()) {
        out.append(",\"data\":{\"code\":");
        json_text::append_string(out, stable_code);
        out.push_back('}');
    }
    out.append("}}");
    return out;
}

std::string initialize_result(const std::string &asked_version)
{
    Owned r = object();
    set(r, "protocolVersion", str(supported_version(asked_version) ? asked_version : versions[0]));
    Owned capabilities = object();
    Owned tools = object();
    set(tools, "listChanged", boolean(false));
    set(capabilities, "tools", std::move(tools));
    set(r, "capabilities", std::move(capabilities));
    Owned info = object();
    set(info, "name", str("querygate"));
    set(info, "version", str(QUERYGATE_VERSION_TEXT));
    set(r, "serverInfo", std::move(info));
    set(r, "instructions",
        str("Each tool runs one saved SQL query of this database with the arguments as its "
            "parameters, under the caller's key or token: only the queries it may call are "
            "listed, and columns come back as its policy serves them (hashed, masked or left "
            "out). A caller whose policy takes SQL of its own also has execute_sql, list_tables "
            "and describe_table."));
    return dump(r, false);
}

std::string tools_list_result(const api_description::Api &api)
{
    Owned r = object();
    Owned tools = array();
    for (const Query &q : api.queries)
        append(tools, tool(q));
    if (api.adhoc)
        sql_tools::append(tools, api.sql_tool_names_taken, api.adhoc_write_ops);
    set(r, "tools", std::move(tools));
    return dump(r, false);
}

bool tool_call(const Value &params, std::string &name, const Value *&args, std::string &reason)
{
    args = nullptr;
    const Value *n = params.kind == Value::Kind::object ? member(params, "name") : nullptr;
    if (n == nullptr || n->kind != Value::Kind::string || n->text.empty()) {
        reason = "tools/call names its tool in \"name\"";
        return false;
    }
    name = n->text;
    args = member(params, "arguments");
    if (args != nullptr && args->kind != Value::Kind::object && args->kind != Value::Kind::null) {
        reason = "\"arguments\" must be an object";
        return false;
    }
    if (args != nullptr && args->kind == Value::Kind::null)
        args = nullptr;
    return true;
}

std::string tool_result(const std::string &id, const std::string &answer, bool has_more,
                        bool answer_is_object)
{
    // Made in one string, the envelope included: an answer may be tens of MB
    // (querygate.max_response_size), and it is here twice already (as text and as itself).
    std::string out;
    out.reserve(2 * answer.size() + id.size() + 128);
    out.append("{\"jsonrpc\":\"2.0\",\"id\":").append(id);
    out.append(",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    json_text::append_string(out, answer);
    out.append("}],\"structuredContent\":");
    if (answer_is_object) {
        out.append(answer);
    } else {
        out.append("{\"rows\":").append(answer);
        out.append(has_more ? ",\"has_more\":true}" : ",\"has_more\":false}");
    }
    out.append(",\"isError\":false}}");
    return out;
}

std::string tool_error(const std::string &id, const std::string &error_body)
{
    std::string out = "{\"content\":[{\"type\":\"text\",\"text\":";
    json_text::append_string(out, error_body);
    out.append("}],\"isError\":true}");
    return result(id, out);
}

} // namespace mcp
