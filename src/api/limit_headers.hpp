// An answer's rate-limit fields: where a caller with a limit stands, as
// querygate.rate_limit_headers says (the draft's RateLimit, or the legacy three:
// http/limit_fields.hpp), RateLimit-Policy with a 429, and Retry-After on every 429. Plain C++.
#pragma once

#include "common/call.hpp"
#include "http/http_types.hpp"

namespace limit_headers {

void add(HttpResponse &response, const LimitReport &report);

} // namespace limit_headers
