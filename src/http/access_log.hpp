// The access log (querygate.log_requests): one line per request answered, in the server log: the
// method and path, what it called (the kind of call, and the saved query's name; never the text of
// SQL a caller wrote, which may hold values it typed), the status and error code, the time the
// answer took, the key's name (never its secret) and the policy, the request id, the caller's
// address. Plain C++: the record, which requests the setting asks for, and the line; the worker
// writes it (worker/access_log_sink.hpp).
//
// The line is "key=value" words after "querygate request:", each value bare when it holds only
// name characters and a JSON string otherwise, so nothing a caller sends (a path, a method) can end
// the line or forge a field; or, with querygate.log_requests_format = json, one JSON object.
#pragma once

#include "common/settings.hpp"

#include <string>
#include <string_view>

namespace access_log {

struct Record {
    std::string_view method;
    std::string_view path;
    // What the request called: "query" (a saved query, named by query) or "sql" (SQL the caller
    // wrote, which has no name), as metrics::kind_name spells them; both empty when the request
    // was not a call.
    std::string_view kind;
    std::string_view query;
    int status = 0;
    std::string_view code;   // the error's code; empty on success
    std::string_view key;    // the key's name ("jwt" for a token); empty when none was accepted
    std::string_view policy; // empty when no key was accepted
    std::string_view request_id;
    std::string_view client; // the caller's address, after trusted proxies
    // Why the credentials were refused (a 401): for the operator, who may need to know what a
    // caller is not told.
    std::string_view reason;
    long long duration_us = 0;
};

// Whether the level (settings::LogRequests) asks for a request answered with this status (errors:
// 400 and above).
inline bool wanted(int level, int status)
{
    return level == settings::log_all || (level == settings::log_errors && status >= 400);
}

// The line for the record, in the format (settings::LogFormat).
void format(const Record &record, int format, std::string &out);

// Where the lines go. write() must not throw: a line that cannot be written is lost, never the
// answer.
class Sink {
  public:
    virtual ~Sink() = default;
    virtual void write(const std::string &line) noexcept = 0;
};

} // namespace access_log
