// The credentials a request presents: see credentials.hpp.
#include "http/credentials.hpp"

#include "common/chars.hpp"

#include <algorithm>

namespace credentials {

namespace {

// A JWT in compact form: three base64url parts. querygate keys never contain a dot.
bool looks_like_jwt(const std::string &token)
{
    return std::count(token.begin(), token.end(), '.') == 2;
}

} // namespace

bool bearer_token(const HttpRequest &request, std::string &token)
{
    const std::string *auth = request.header("authorization");
    if (auth == nullptr || !chars::istarts_with(*auth, "bearer "))
        return false;
    const size_t start = auth->find_first_not_of(' ', 7);
    token = start == std::string::npos ? std::string() : auth->substr(start);
    return true;
}

void presented(const HttpRequest &request, CallRequest &call)
{
    if (const std::string *key = request.header("x-api-key")) {
        call.secret = *key;
        return;
    }
    std::string token;
    if (bearer_token(request, token))
        presented_token(token, call);
}

void presented_token(const std::string &token, CallRequest &call)
{
    (looks_like_jwt(token) ? call.bearer_token : call.secret) = token;
}

} // namespace credentials
