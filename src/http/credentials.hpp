// The credentials a request presents: X-API-Key, or "Authorization: Bearer <key or JWT>" (a JWT
// has three base64url parts; a querygate key never has a dot). Plain C++.
#pragma once

#include "common/call.hpp"
#include "http/http_types.hpp"

#include <string>

namespace credentials {

// The token of "Authorization: Bearer <token>" (spaces after "Bearer" skipped); false when the
// request has no such header.
bool bearer_token(const HttpRequest &request, std::string &token);

// The request's key or token into the call. When both headers are present, X-API-Key alone is
// judged.
void presented(const HttpRequest &request, CallRequest &call);

// A bearer token as a call presents it: a JWT (three base64url parts), else a key.
void presented_token(const std::string &token, CallRequest &call);

} // namespace credentials
