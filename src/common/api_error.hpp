// The HTTP API's errors: a status, a stable code, a sentence for people, and per-parameter
// problems. Codes are the contract (README, "Errors"); messages may improve, codes never change
// meaning.
#pragma once

#include <string>
#include <utility>
#include <vector>

struct ApiError {
    int status = 0;
    std::string code;
    std::string message;
    std::vector<std::pair<std::string, std::string>> errors; // parameter -> problem
    std::string allow;                                       // for 405: the Allow header

    bool set() const { return status != 0; }
};

namespace api_errors {

inline ApiError make(int status, const char *code, std::string message)
{
    ApiError e;
    e.status = status;
    e.code = code;
    e.message = std::move(message);
    return e;
}

// One answer for a missing, wrong, expired or revoked key: a caller learns nothing from the
// difference.
inline ApiError unauthorized()
{
    return make(401, "unauthorized", "a valid API key is required");
}
// One answer for a query that does not exist and one the key may not call: names cannot be probed.
inline ApiError query_not_found()
{
    return make(404, "query_not_found", "no such query");
}

} // namespace api_errors
