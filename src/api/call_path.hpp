// The path every call takes on the HTTP side, whichever endpoint asked for it (/q/{name}, MCP's
// tools/call; /events and the descriptions take its first steps): who is calling and from where,
// a caller without credentials refused before anything else, the call run by the database side or
// handed to a helper, and a handed-off call's answer made when its result is back. Plain C++.
#pragma once

#include "api/exchange.hpp"
#include "api/services.hpp"
#include "common/answer_format.hpp"
#include "common/call.hpp"
#include "common/client_address.hpp"
#include "common/file_body.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

class CallPath {
  public:
    CallPath(services::Calls &calls, services::HandOff *hand_off);

    // The caller's address, behind querygate.trusted_proxies.
    std::string client_ip(const HttpRequest &request);
    // A call of query `name` by the request's caller, with the default page; named in its trace.
    CallRequest start_call(Exchange &ex, const std::string &name);
    // Without a key or token nothing else is looked at: the caller learns no more than 401 (or
    // 429, over querygate.anonymous_rate_limit), answered in ex.response. False when the call has
    // credentials.
    bool refused_without_credentials(Exchange &ex, const CallRequest &call);

    // The paging a call's answer reports, its format, and how it may be sent
    // (http/answer_encoding.hpp).
    struct Shape {
        long page;
        long page_size;
        AnswerFormat format;
        bool gzip = false;         // Accept-Encoding allows it
        bool conditional = false;  // a GET with If-None-Match
        std::string if_none_match; // its value
        std::string name; // the query's (empty for SQL a caller wrote): an export's file name
    };
    // What the request says of its answer's shape.
    static Shape shape_of(const HttpRequest &request, const CallRequest &call);

    // Runs the call, or hands it to a helper: then ex.response is marked `later`, and take() gives
    // what its answer needs once the result is back. A call that MCP's tools/call made names its
    // JSON-RPC id and tool, whose answer is JSON-RPC's. (The result is returned, not assigned: a
    // call's result is large, and made once.)
    CallResult run(Exchange &ex, CallRequest &call, const std::string &rpc_id = {},
                   const std::string &tool = {});

    // What a call handed off still needs for its answer.
    struct Later {
        std::uint64_t token;
        Shape shape;
        std::string request_id;
        std::string origin; // the request's Origin, for its CORS headers
        Trace trace;
        LimitReport limits;
        LimitHold limit_hold; // its place in its caller's in-flight count
        std::string rpc_id;   // an MCP tools/call's JSON-RPC id and tool; empty for /q/{name}
        std::string tool;
        // An export's: the file the helper writes its rows into, and its place among the exports,
        // both this worker's until the answer is sent (or the call fails).
        FileBody file;
        int export_slot = -1;
    };
    // The call handed off under `token`, its result back: its place in the in-flight count given
    // back, an export's file and charge taken, and the result noted in its trace. None when no
    // call waits under `token`.
    std::optional<Later> take(std::uint64_t token, CallResult &result);

    // What the call's result says for its trace.
    static void note_result(Trace &trace, CallResult &result);

  private:
    Later later_for(Exchange &ex, const CallRequest &call, CallResult &result);
    // A call the database side left for a helper (result.for_helper): handed to one (true), or
    // run here when no helper can take it (false, result its answer).
    bool elsewhere(Later waiting, CallRequest &call, CallResult &result, HttpResponse &response);

    services::Calls &calls_;
    services::HandOff *hand_off_;
    std::vector<Later> later_;
    std::uint64_t last_token_ = 0;
    std::vector<client_address::Cidr> trusted_;
    unsigned long trusted_generation_ = 0;
};
