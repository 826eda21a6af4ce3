// POST /mcp, the request handler's side (request_handler.hpp): the transport's checks, and
// tools/list and tools/call through the same description and call path as /openapi.json and
// /q/{name}; the messages themselves are mcp.hpp's. Plain C++.
#include "http/request_handler.hpp"

#include "common/settings.hpp"
#include "http/error_body.hpp"
#include "http/mcp.hpp"
#include "http/paging_args.hpp"

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

} // namespace

// POST /mcp: one JSON-RPC message a request, answered as application/json; no session, so any
// worker answers any request. The transport's refusals (a method, an origin, a protocol version,
// a message that cannot be read) and the caller's (a key that is not one: 403, or 401 without
// any; a limit, an overload) are HTTP statuses with the usual error body; a refusal of the call
// itself is the tool's error.
void RequestHandler::handle_mcp(const HttpRequest &request, HttpResponse &response,
                                const std::string &id, Logged &logged)
{
    if (request.method != "POST") {
        // No stream of the server's own to GET, and no session to DELETE.
        ApiError e = api_errors::make(error_code::method_not_allowed, "use POST on /mcp");
        e.allow = "POST";
        write_error(response, e, id);
        return;
    }
    if (const std::string *origin = request.header("origin");
        origin != nullptr &&
        !mcp::origin_allowed(*origin, cors::allowed(cors_origins(), *origin))) {
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
        const CallRequest call = start_call(request, std::string(), id, logged);
        LimitReport limits;
        api_description::Api api;
        // Without a key or token nothing may be called: the list is empty (the address's limit
        // still counts it).
        ApiError error = call.secret.empty() && call.bearer_token.empty()
                             ? runner_.limit_anonymous(call.client_ip, limits)
                             : runner_.describe(call, api, limits);
        if (error.set()) {
            write_error(response, refused_presented(error), id);
            add_limit_headers(response, limits);
            return;
        }
        add_limit_headers(response, limits);
        response.body = mcp::result(message.id, mcp::tools_list_result(api));
    } else if (method == "tools/call") {
        std::string name;
        const json_body::Value *args = nullptr;
        if (!mcp::tool_call(message.params, name, args, reason)) {
            response.body = mcp::error(message.id, mcp::invalid_params, reason);
            return;
        }
        if (call_tool(request, name, args, message.id, response, id, logged) ==
            ToolOutcome::unknown)
            unknown_tool(response, message.id, name);
    } else {
        response.body = mcp::error(message.id, mcp::method_not_found,
                                   "this server answers initialize, ping, tools/list and "
                                   "tools/call");
    }
}

RequestHandler::ToolOutcome
RequestHandler::call_tool(const HttpRequest &request, const std::string &name,
                          const json_body::Value *args, const std::string &rpc_id,
                          HttpResponse &response, const std::string &id, Logged &logged)
{
    CallRequest call = start_call(request, name, id, logged);
    if (refused_without_credentials(call, response, id, logged))
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
            CallParam p;
            p.name = param;
            p.is_null = v.kind == json_body::Value::Kind::null;
            p.value = v.text;
            call.params.push_back(std::move(p));
        }
    // A write, or a slow read, goes to a helper as a call of /q/{name} does; its answer is made
    // when the result is back (finish).
    CallResult result;
    if (paging.set())
        result.error = std::move(paging);
    else
        result = runner_.run(call, hand_off_ != nullptr);
    logged.key = std::move(result.key_name);
    logged.policy = std::move(result.policy);
    if (result.for_helper) {
        Later waiting = later_for(request, call, id, logged, result);
        waiting.rpc_id = rpc_id;
        waiting.tool = name;
        if (elsewhere(std::move(waiting), call, result, response))
            return ToolOutcome::answered; // later
    }
    note_result(logged, result);
    return tool_answer(result, rpc_id, response, id);
}

void RequestHandler::unknown_tool(HttpResponse &response, const std::string &rpc_id,
                                  const std::string &name)
{
    // Not granted reads as not there, as /q/{name}'s 404 does.
    response.body = mcp::error(rpc_id, mcp::invalid_params, "unknown tool: " + name,
                               error_code::query_not_found.code);
}

RequestHandler::ToolOutcome RequestHandler::tool_answer(CallResult &result,
                                                        const std::string &rpc_id,
                                                        HttpResponse &response,
                                                        const std::string &id)
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
        add_limit_headers(response, result.limits);
        if (error.status == 503)
            response.add_header("Retry-After", "1");
        return ToolOutcome::refused;
    }
    add_limit_headers(response, result.limits);
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
