// A call's arguments as a request gives them, read before any transaction starts: the query
// string's (parameters, page, page_size, format, timeout, stream), a POST body's (the same in a
// JSON object, the parameters under "params"), and the Prefer field's timeout. Plain C++.
#pragma once

#include "common/api_error.hpp"
#include "common/call.hpp"
#include "http/http_types.hpp"
#include "http/json_body.hpp"

#include <string>

namespace call_arguments {

// The timeout of "Prefer: timeout=N" (RFC 7240), in milliseconds; 0 when none is asked for or its
// value is not one. A preference is a wish: one the server cannot read is ignored, not refused.
long prefer_timeout(const HttpRequest &request);

// Reads the query string into the call: page, page_size, stream, format, timeout, and every other
// argument a parameter. format_given: set when it names the format; paged, when it gives page or
// page_size.
ApiError from_query_string(const HttpRequest &request, CallRequest &call, bool &format_given,
                           bool &paged);

// Reads a POST body into the call. An empty body is a call without parameters (curl -X POST).
// format_given and paged as above. With takes_sql, the body may hold the statement ("sql": POST
// /sql), else it holds none.
ApiError from_json_body(const std::string &body, CallRequest &call, bool &format_given, bool &paged,
                        bool takes_sql = false);

// A call's arguments, whichever way the request gives them: the query string's, then a POST
// body's (takes_sql as above), which win; the format from ?format= or the body, else Accept (406
// when none is ours); the timeout from ?timeout= or the body, else Prefer.
ApiError from_request(const HttpRequest &request, CallRequest &call, bool takes_sql = false);

// A parameter as a JSON body or an MCP tool's arguments give it: every kind reaches the
// parameter's input function as text (numbers as written, strings decoded, objects and arrays as
// their JSON text); null is SQL NULL.
CallParam param_of(const std::string &name, const json_body::Value &value);

// 400 invalid_stream, for `why`.
ApiError invalid_stream(const char *why);

// Neither ?format= (or the body's "format") nor Accept names a format of ours: 406.
ApiError not_acceptable();

} // namespace call_arguments
