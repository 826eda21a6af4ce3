// POST /mcp: the Model Context Protocol's streamable HTTP transport, one JSON-RPC message a
// request, answered as application/json; no session, so any worker answers any request. The
// transport's checks are here, and tools/list and tools/call go through the same description and
// call path as /openapi.json and /q/{name} (execute_sql as POST /sql, list_tables and
// describe_table as GET /schema: http/sql_tools.hpp); the messages themselves are http/mcp.hpp's.
// Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/services.hpp"
#include "http/json_body.hpp"

#include <string>

class McpEndpoint {
  public:
    McpEndpoint(CallPath &path, services::Calls &calls, services::Describer &describer,
                services::Schemas &schemas)
        : path_(path), calls_(calls), describer_(describer), schemas_(schemas)
    {
    }
    void handle(Exchange &ex);
    // A tool call handed to a helper: its answer, once the result is back.
    void answer_later(const CallPath::Later &later, CallResult &result, HttpResponse &response);

  private:
    void list_tools(Exchange &ex, const std::string &rpc_id);
    // tools/call: the call a /q/{name} POST would make, answered as MCP says to the request
    // `rpc_id`: the tool's result or error (answered), a refusal HTTP says (refused), both made in
    // ex.response; or a query the caller may not call (unknown: the caller answers the JSON-RPC
    // error).
    enum class ToolOutcome { answered, refused, unknown };
    ToolOutcome call_tool(Exchange &ex, const std::string &name, const json_body::Value *args,
                          const std::string &rpc_id);
    // A call of an SQL tool (http/sql_tools.hpp) by `call`'s caller, whose policy takes SQL of its
    // own: execute_sql down the call path as POST /sql, list_tables and describe_table from the
    // schema description as GET /schema; answered as call_tool's are.
    ToolOutcome call_sql_tool(Exchange &ex, CallRequest &call, const std::string &name,
                              const json_body::Value *args, const std::string &rpc_id);
    // A tool call's result as the tool's answer (an HTTP error for the caller's key, limits or the
    // server's state), and the answer for a tool the caller may not call.
    static ToolOutcome tool_answer(CallResult &result, const std::string &rpc_id,
                                   HttpResponse &response, const std::string &id);
    static void unknown_tool(HttpResponse &response, const std::string &rpc_id,
                             const std::string &name);

    CallPath &path_;
    services::Calls &calls_;
    services::Describer &describer_;
    services::Schemas &schemas_;
};
