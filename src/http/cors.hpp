// Calls from web pages of other origins (CORS, as the Fetch standard defines it):
// querygate.cors_allowed_origins lists the origins ("https://app.example.com", comma-separated;
// "*" for any), and with it set:
// - a preflight (OPTIONS with Origin and Access-Control-Request-Method, on any path, with no key:
//   browsers send none) is answered 204 with what a call may use: GET and POST, the headers
//   Accept, Authorization, Content-Type, MCP-Protocol-Version, Prefer, X-API-Key and X-Request-Id,
//   for 10 minutes;
// - every other answer to a request from a listed origin says that origin may read it, and which
//   of its headers (the paging, the request id, the rate limits, Retry-After).
// An origin not listed gets its answers without any of these headers (the browser then keeps the
// page from reading them); with the setting empty, the default, nothing is sent and OPTIONS is a
// method like any other (405). The key is what authorizes a call, never the origin: these headers
// only let a browser show a page the answer it could fetch anyway. Plain C++.
#pragma once

#include "http/http_types.hpp"

#include <string>
#include <vector>

namespace cors {

struct Origins {
    bool any = false;                // "*"
    std::vector<std::string> listed; // lowercase, without a trailing slash
    bool enabled() const { return any || !listed.empty(); }
};

// The setting's value; entries that are empty are skipped.
Origins parse(const char *setting);

// Whether `origin` (the request's Origin header) may read answers.
bool allowed(const Origins &origins, const std::string &origin);

// Whether the request is a preflight: OPTIONS with Origin and Access-Control-Request-Method.
bool is_preflight(const HttpRequest &request);

// The preflight's answer: 204, with the CORS headers when the origin is allowed.
void answer_preflight(const Origins &origins, const std::string &origin, HttpResponse &response);

// The headers that let an allowed origin read an answer; nothing for another.
void add_answer_headers(const Origins &origins, const std::string &origin, HttpResponse &response);

} // namespace cors
