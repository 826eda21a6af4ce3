// Every error answer: its body, {"error", "code", "request_id"[, "errors"]}, an HTTP error's
// (write_error) and an MCP tool's that was refused or failed (mcp.hpp); and an HTTP error's status
// and fields.
// Plain C++.
#pragma once

#include "common/api_error.hpp"
#include "http/http_types.hpp"

#include <string>

namespace error_body {

// Replaces `out` with the error's body: its message, stable code and the request's id, and each
// parameter's problem under "errors".
void write(const ApiError &error, const std::string &request_id, std::string &out);

} // namespace error_body

// The error body with its status and fields: Allow with a 405, WWW-Authenticate with a 401.
void write_error(HttpResponse &response, const ApiError &error, const std::string &request_id);

// RFC 6750 (3): a refused bearer token's challenge, the description in the characters its grammar
// allows (%x20-21 / %x23-5B / %x5D-7E: no quote, backslash or control), others as "?".
std::string bearer_challenge(const std::string &description);
