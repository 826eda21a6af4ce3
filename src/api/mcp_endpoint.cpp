// POST /mcp: see mcp_endpoint.hpp.
#include "api/mcp_endpoint.hpp"

#include "api/call_arguments.hpp"
#include "api/sql_endpoint.hpp"
#include "common/settings.hpp"
#include "http/error_body.hpp"
#include "api/limit_headers.hpp"
#include "http/mcp.hpp"
#include "http/paging_args.hpp"
#include "http/schema_document.hpp"
#include "http/sql_tools.hpp"

namespace {

// A key or token presented on /mcp and refused: 403, not 401. The official SDK's client (and the
// Inspector built on it) starts OAuth discovery on any 401 (.well-known metadata, client
// registration, a browser or a prompt), which this server does not offer: a client that sent a
// key or a token should hear that it is refused, and why. RFC 9110 (15.5.4) allows 403 for
// credentials that do not suffice; only a request without any is 401 (with WWW-Authenticate).
ApiError refused_presented(const ApiError &error)
{
    ApiError out = error;
    if (out.status == 401)
        out.status = 403;
    return out;
}

ApiError invalid_arguments(const std::string &message)
{
    return api_errors::make(error_code::invalid_body, message);
}

ApiError unknown_argument(const std::string &tool, const std::string &name, const char *takes)
{
    ApiError e = invalid_arguments("unknown argument of " + tool);
    e.errors.emplace_back(name, std::string("unknown argument; ") + tool + " takes " + takes);
    return e;
}

// execute_sql's arguments, as POST /sql's body gives the same: the statement, its placeholders'
// values, and the page.
ApiError execute_sql_arguments(const json_body::Value *args, CallRequest &call)
{
    using Kind = json_body::Value::Kind;
    static const json_body::Value none;
    for (const auto &[name, v] : (args != nullptr ? *args : none).members) {
        if (name == "sql") {
            if (v.kind != Kind::string)
                return invalid_arguments("\"sql\" must be a string: the statement");
            call.sql = v.text;
        } else if (name == "params") {
            if (v.kind != Kind::object)
                return invalid_arguments("\"params\" must be an object");
            for (const auto &[param, value] : v.members)
                call.params.push_back(call_arguments::param_of(param, value));
        } else if (paging_args::is_paging(name)) {
            if (ApiError e = paging_args::from_json(name, v, call); e.set())
                return e;
        } else {
            return unknown_argument(sql_tools::execute_sql, name,
                                    "sql, params, page and page_size");
        }
    }
    if (call.sql.find_first_not_of(" \t\r\n") == std::string::npos)
        return invalid_arguments("\"sql\" holds the statement, and it is missing or empty");
    return ApiError();
}

// describe_table's table (`table` set), or list_tables' nothing (`table` null).
ApiError schema_arguments(const std::string &tool, const json_body::Value *args, std::string *table)
{
    static const json_body::Value none;
    bool named = false;
    for (const auto &[name, v] : (args != nullptr ? *args : none).members) {
        if (table == nullptr)
            return unknown_argument(tool, name, "none");
        if (name != "table")
            return unknown_argument(tool, name, "table");
        if (v.kind != json_body::Value::Kind::string)
            return invalid_arguments("\"table\" must be a string: a table's name");
        *table = v.text;
        named = true;
    }
    if (table != nullptr && !named)
        return invalid_arguments("\"table\" names the table to describe, and it is missing");
    return ApiError();
}

} // namespace

// POST /mcp: one JSON-RPC message a request, answered as application/json; no session, so any
// worker answers any request. The transport's refusals (a method, an origin, a protocol version,
// a message that cannot be read) and the caller's (a key that is not one: 403, or 401 without
// any; a limit, an overload) are HTTP statuses with the usual error body; a refusal of the call
// itself is the tool's error.
void McpEndpoint::handle(Exchange &ex)
{
    const HttpRequest &request = ex.request;
    HttpResponse &response = ex.response;
    const std::string &id = ex.id;
    if (request.method != "POST") {
        // No stream of the server's own to GET, and no session to DELETE.
        ApiError e = api_errors::make(error_code::method_not_allowed, "use POST on /mcp");
        e.allow = "POST";
        write_error(response, e, id);
        return;
    }
    if (const std::string *origin = request.header("origin");
        origin != nullptr && !mcp::origin_allowed(*origin, cors::allowed(ex.origins, *origin))) {
        write_error(response,
                    api_errors::make(error_code::origin_not_allowed,
                                     "this origin may not call /mcp: list it in "
                                     "querygate.cors_allowed_origins"),
                    id);
        return;
    }
    if (const std::string *version = request.header("mcp-protocol-version");
        version != nullptr && !mcp::supported_version(*version)) {
        write_error(response,
                    api_errors::make(error_code::unsupported_protocol_version,
                                     "MCP-Protocol-Version " + std::string(mcp::versions[0]) +
                                         ", " + mcp::versions[1] + " or " + mcp::versions[2]),
                    id);
        return;
    }
    mcp::Message message;
    int rpc_code = 0;
    std::string reason;
    if (!mcp::parse(request.body, message, rpc_code, reason)) {
        write_error(response, api_errors::make(error_code::invalid_message, reason), id);
        response.body = mcp::error("null", rpc_code, reason, error_code::invalid_message.code);
        return;
    }
    if (message.kind != mcp::Message::Kind::request) {
        response.status = 202; // a notification or a response: taken, nothing to answer
        return;
    }
    response.status = 200;
    response.content_type = "application/json";
    const std::string &method = message.method;
    if (method == "initialize") {
        std::string asked;
        for (const auto &[name, value] : message.params.members)
            if (name == "protocolVersion" && value.kind == json_body::Value::Kind::string)
                asked = value.text;
        response.body = mcp::result(message.id, mcp::initialize_result(asked));
    } else if (method == "ping") {
        response.body = mcp::result(message.id, "{}");
    } else if (method == "tools/list") {
        list_tools(ex, message.id);
    } else if (method == "tools/call") {
        std::string name;
        const json_body::Value *args = nullptr;
        if (!mcp::tool_call(message.params, name, args, reason)) {
            response.body = mcp::error(message.id, mcp::invalid_params, reason);
            return;
        }
        if (call_tool(ex, name, args, message.id) == ToolOutcome::unknown)
            unknown_tool(response, message.id, name);
    } else {
        response.body = mcp::error(message.id, mcp::method_not_found,
                                   "this server answers initialize, ping, tools/list and "
                                   "tools/call");
    }
}

// tools/list: what the caller may call, as tools; nothing without a key or token.
void McpEndpoint::list_tools(Exchange &ex, const std::string &rpc_id)
{
    HttpResponse &response = ex.response;
    const std::string &id = ex.id;
    const CallRequest call = path_.start_call(ex, std::string());
    LimitReport limits;
    api_description::Api api;
    // Without a key or token nothing may be called: the list is empty (the address's limit
    // still counts it).
    ApiError error = call.secret.empty() && call.bearer_token.empty()
                         ? calls_.limit_anonymous(call.client_ip, limits)
                         : describer_.describe(call, api, limits);
    if (error.set()) {
        write_error(response, refused_presented(error), id);
        limit_headers::add(response, limits);
        return;
    }
    limit_headers::add(response, limits);
    response.body = mcp::result(rpc_id, mcp::tools_list_result(api));
}

McpEndpoint::ToolOutcome McpEndpoint::call_tool(Exchange &ex, const std::string &name,
                                                const json_body::Value *args,
                                                const std::string &rpc_id)
{
    if (sql_tools::is_sql_tool(name)) {
        // Not a call of a query of that name (nothing is traced under it) unless the caller's
        // policy grants one: such a query keeps its name (sql_tools.hpp).
        CallRequest call = path_.start_call(ex, std::string());
        if (path_.refused_without_credentials(ex, call))
            return ToolOutcome::refused;
        if (schemas_.sql_tool(call, name))
            return call_sql_tool(ex, call, name, args, rpc_id);
    }
    CallRequest call = path_.start_call(ex, name);
    if (path_.refused_without_credentials(ex, call))
        return ToolOutcome::refused;
    // page and page_size as /q/{name} takes them (no parameter has either name); a wrong one is
    // the tool's error, before anything runs, as /q/{name}'s 400 is.
    ApiError paging;
    if (args != nullptr)
        for (const auto &[param, v] : args->members) {
            if (paging_args::is_paging(param)) {
                if (!paging.set())
                    paging = paging_args::from_json(param, v, call);
                continue;
            }
            // As a POST body's "params": every kind reaches the input function as text.
            call.params.push_back(call_arguments::param_of(param, v));
        }
    if (paging.set()) {
        CallResult refused;
        refused.error = std::move(paging);
        CallPath::note_result(ex.trace, refused);
        return tool_answer(refused, rpc_id, ex.response, ex.id);
    }
    CallResult result = path_.run(ex, call, rpc_id, name);
    if (ex.response.later != 0) {
        // A write, or a slow read, went to a helper as a call of /q/{name} does; its answer is
        // made when the result is back (answer_later).
        return ToolOutcome::answered;
    }
    return tool_answer(result, rpc_id, ex.response, ex.id);
}

McpEndpoint::ToolOutcome McpEndpoint::call_sql_tool(Exchange &ex, CallRequest &call,
                                                    const std::string &name,
                                                    const json_body::Value *args,
                                                    const std::string &rpc_id)
{
    CallResult result;
    if (name == sql_tools::execute_sql) {
        result.error = execute_sql_arguments(args, call);
        if (result.error.set()) {
            CallPath::note_result(ex.trace, result); // refused before anything ran
            return tool_answer(result, rpc_id, ex.response, ex.id);
        }
        note_sql_call(ex, call.sql);
        result = path_.run(ex, call, rpc_id, name);
        if (ex.response.later != 0)
            return ToolOutcome::answered; // a write, or a slow read: as call_tool's
        return tool_answer(result, rpc_id, ex.response, ex.id);
    }
    const bool one_table = name == sql_tools::describe_table;
    std::string table;
    result.error = schema_arguments(name, args, one_table ? &table : nullptr);
    schema_description::Schema schema;
    if (!result.error.set())
        result.error =
            schemas_.describe_schema(call, one_table ? &table : nullptr, schema, result.limits);
    if (!result.error.set())
        result.body = schema_document::json(schema, one_table);
    return tool_answer(result, rpc_id, ex.response, ex.id);
}

void McpEndpoint::answer_later(const CallPath::Later &later, CallResult &result,
                               HttpResponse &response)
{
    response.status = 200; // as POST /mcp answers a tool call
    response.content_type = "application/json";
    if (tool_answer(result, later.rpc_id, response, later.request_id) == ToolOutcome::unknown)
        unknown_tool(response, later.rpc_id, later.tool);
}

void McpEndpoint::unknown_tool(HttpResponse &response, const std::string &rpc_id,
                               const std::string &name)
{
    // Not granted reads as not there, as /q/{name}'s 404 does.
    response.body = mcp::error(rpc_id, mcp::invalid_params, "unknown tool: " + name,
                               error_code::query_not_found.code);
}

McpEndpoint::ToolOutcome McpEndpoint::tool_answer(CallResult &result, const std::string &rpc_id,
                                                  HttpResponse &response, const std::string &id)
{
    const ApiError &error = result.error;
    // A write on a hot standby is this tool's refusal here (the agent may call it elsewhere),
    // not a state that retrying changes.
    const bool replica = error.code == error_code::read_only_replica.code;
    if (error.set() && !replica &&
        (error.status == 401 || error.status == 429 || error.status == 503)) {
        // The caller's key, its limits or the server's state: HTTP's answer, as for /q/{name}
        // (a tool call that got this far presented a key or a token).
        write_error(response, refused_presented(error), id);
        limit_headers::add(response, result.limits);
        if (error.status == 503)
            response.add_header("Retry-After", "1");
        return ToolOutcome::refused;
    }
    limit_headers::add(response, result.limits);
    if (error.code == error_code::query_not_found.code) {
        response.error_code = error.code;
        return ToolOutcome::unknown;
    }
    if (error.set()) {
        response.error_code = error.code; // the access log and the history say which
        std::string body;
        error_body::write(error, id, body);
        response.body = mcp::tool_error(rpc_id, body);
        return ToolOutcome::answered;
    }
    // A write without RETURNING answers one object, {"rows_affected": n}; rows are an array.
    const bool is_object = !result.body.empty() && result.body[0] == '{';
    response.body = mcp::tool_result(rpc_id, result.body, result.has_more, is_object);
    return ToolOutcome::answered;
}
