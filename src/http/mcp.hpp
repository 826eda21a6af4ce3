// The Model Context Protocol's messages (revision 2025-11-25, over streamable HTTP at POST /mcp):
// JSON-RPC 2.0 in, JSON-RPC 2.0 out, one message a request, no session (every worker answers any
// request alike). What a caller may call becomes its tools: one per saved query, with the
// parameters as inputSchema and the answer as outputSchema (http/json_schema.hpp), and for a
// caller whose policy takes SQL of its own the SQL tools (http/sql_tools.hpp). The request
// handler (request_handler.hpp) checks the transport (method, Origin, MCP-Protocol-Version), and
// runs tools/list and tools/call through the same description and call path as /openapi.json and
// /q/{name}; this file only reads and writes the messages. Plain C++.
#pragma once

#include "common/api_description.hpp"
#include "http/json_body.hpp"

#include <string>

namespace mcp {

// The revisions this server speaks, newest first; an initialize asking for another is answered
// with the newest, as the protocol's version negotiation says.
inline constexpr const char *versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
bool supported_version(const std::string &version);

// Whether a request's Origin may reach /mcp: a page of a loopback host (localhost, 127.0.0.1,
// [::1], any port), which is where a local MCP client's page runs; any other origin only when
// querygate.cors_allowed_origins lists it (`listed`, cors::allowed's answer). A DNS-rebinding page
// (its own host name resolved to 127.0.0.1) sends its own origin, which is neither.
bool origin_allowed(const std::string &origin, bool listed);

// JSON-RPC's own error codes.
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;

struct Message {
    enum class Kind { request, notification, response };
    Kind kind = Kind::request;
    std::string id; // a request's id as JSON text (a number's lexeme or a quoted string)
    std::string method;
    json_body::Value params; // null when absent
};

// Reads one JSON-RPC message. False with a JSON-RPC error code and a reason when it is not JSON
// (parse_error) or not a message (invalid_request: a batch, a missing "jsonrpc": "2.0", a null or
// non-scalar id, a method that is not a string).
bool parse(const std::string &body, Message &out, int &code, std::string &reason);

// {"jsonrpc": "2.0", "id": id, "result": result}, result being JSON text.
std::string result(const std::string &id, const std::string &result_json);
// {"jsonrpc": "2.0", "id": id, "error": {"code", "message"[, "data": {"code": stable}]}}; id is
// "null" when the request's could not be read.
std::string error(const std::string &id, int code, const std::string &message,
                  const std::string &stable_code = std::string());

// initialize's result: the version (the one asked for when spoken, else the newest), the tools
// capability, and the server's name and version.
std::string initialize_result(const std::string &asked_version);
// tools/list's result: a tool per query, as json_schema describes it, annotated read-only unless
// it writes; then the SQL tools when the caller may use them, but those a query's name keeps.
std::string tools_list_result(const api_description::Api &api);

// tools/call's arguments ({"name", "arguments"}): false with a reason when they are not a name and
// an object (invalid_params). Each argument is a parameter, as a POST body's "params" member is.
bool tool_call(const json_body::Value &params, std::string &name, const json_body::Value *&args,
               std::string &reason);
// The whole response to a successful call: the answer (JSON text) as structuredContent and as a
// text block; {"rows": [...], "has_more": bool} for rows, the write's own object for a write
// without RETURNING.
std::string tool_result(const std::string &id, const std::string &answer, bool has_more,
                        bool answer_is_object);
// The whole response to a call refused or failed: isError, with the error body (error_body.hpp:
// message, stable code, request id) as its text block. No structuredContent: a client checks that
// against the tool's outputSchema, which describes its answers, not its errors.
std::string tool_error(const std::string &id, const std::string &error_body);

} // namespace mcp
