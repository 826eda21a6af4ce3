// Cross-origin calls: see cors.hpp.
#include "http/cors.hpp"

#include "common/chars.hpp"

namespace cors {

namespace {

std::string normalized(std::string origin)
{
    for (char &c : origin)
        c = chars::to_lower(c);
    while (!origin.empty() && origin.back() == '/')
        origin.pop_back();
    return origin;
}

// What an allowed origin is told: the origin itself, or "*" when any is.
void allow_origin(const Origins &origins, const std::string &origin, HttpResponse &response)
{
    if (origins.any) {
        response.add_header("Access-Control-Allow-Origin", "*");
        return;
    }
    response.add_header("Access-Control-Allow-Origin", origin);
}

} // namespace

Origins parse(const char *setting)
{
    Origins out;
    std::string value = setting ? setting : "";
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t comma = value.find(',', start);
        if (comma == std::string::npos)
            comma = value.size();
        std::string entry = value.substr(start, comma - start);
        const std::size_t first = entry.find_first_not_of(" \t");
        const std::size_t last = entry.find_last_not_of(" \t");
        entry = first == std::string::npos ? std::string() : entry.substr(first, last - first + 1);
        if (entry == "*")
            out.any = true;
        else if (!entry.empty())
            out.listed.push_back(normalized(entry));
        start = comma + 1;
    }
    return out;
}

bool allowed(const Origins &origins, const std::string &origin)
{
    if (origin.empty())
        return false;
    if (origins.any)
        return true;
    const std::string o = normalized(origin);
    for (const auto &l : origins.listed)
        if (l == o)
            return true;
    return false;
}

bool is_preflight(const HttpRequest &request)
{
    return request.method == "OPTIONS" && request.header("origin") != nullptr &&
           request.header("access-control-request-method") != nullptr;
}

void answer_preflight(const Origins &origins, const std::string &origin, HttpResponse &response)
{
    response.status = 204;
    response.body.clear();
    // What the answer depends on, for a cache between the browser and us.
    response.add_header("Vary", "Origin, Access-Control-Request-Method, "
                                "Access-Control-Request-Headers");
    if (!allowed(origins, origin))
        return;
    allow_origin(origins, origin, response);
    response.add_header("Access-Control-Allow-Methods", "GET, POST");
    response.add_header("Access-Control-Allow-Headers",
                        "Accept, Authorization, Content-Type, MCP-Protocol-Version, Prefer, "
                        "X-API-Key, X-Request-Id");
    response.add_header("Access-Control-Max-Age", "600");
}

void add_answer_headers(const Origins &origins, const std::string &origin, HttpResponse &response)
{
    if (!origins.any)
        response.add_header("Vary", "Origin"); // the answer's headers depend on it
    if (!allowed(origins, origin))
        return;
    allow_origin(origins, origin, response);
    response.add_header("Access-Control-Expose-Headers",
                        "X-Request-Id, X-Page, X-Page-Size, X-Has-More, RateLimit, "
                        "RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, "
                        "Retry-After");
}

} // namespace cors
