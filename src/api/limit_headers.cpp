// An answer's rate-limit fields: see limit_headers.hpp.
#include "api/limit_headers.hpp"

#include "common/settings.hpp"
#include "http/limit_fields.hpp"

#include <algorithm>
#include <string>

namespace limit_headers {

void add(HttpResponse &response, const LimitReport &report)
{
    const bool refused = response.status == 429;
    const int fields = settings::rate_limit_headers;
    if (report.present && fields == settings::limit_headers_legacy) {
        response.add_header("RateLimit-Limit", std::to_string(report.limit));
        response.add_header("RateLimit-Remaining", std::to_string(report.remaining));
        response.add_header("RateLimit-Reset", std::to_string(report.reset_seconds));
    } else if (report.present && (refused || fields == settings::limit_headers_draft)) {
        // querygate.rate_limit_headers = refused: only a refusal says where the caller stands.
        // The policy goes with a refusal, where the caller needs it to pace itself.
        response.add_header("RateLimit", limit_fields::ratelimit(report));
        if (refused)
            response.add_header("RateLimit-Policy", limit_fields::ratelimit_policy(report));
    }
    if (refused)
        response.add_header("Retry-After",
                            std::to_string(std::max(1LL, report.retry_after_seconds)));
}

} // namespace limit_headers
