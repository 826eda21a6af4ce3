// The body of every error answer, {"error", "code", "request_id"[, "errors"]}: an HTTP error's
// (request_handler.hpp's write_error) and an MCP tool's that was refused or failed (mcp.hpp).
// Plain C++.
#pragma once

#include "common/api_error.hpp"

#include <string>

namespace error_body {

// Replaces `out` with the error's body: its message, stable code and the request's id, and each
// parameter's problem under "errors".
void write(const ApiError &error, const std::string &request_id, std::string &out);

} // namespace error_body
