// One request being answered, as every endpoint sees it: the request, the response being made,
// the request's id, and its trace (what the access log, the run history and the run events will
// say of it besides the answer). Plain C++.
#pragma once

#include "common/run_events.hpp"
#include "http/cors.hpp"
#include "http/http_types.hpp"

#include <chrono>
#include <string>

struct Trace {
    using Clock = std::chrono::steady_clock;
    std::string method;
    std::string path;
    std::string query;  // the name called; empty when the request was not a call
    bool adhoc = false; // a call of SQL the caller wrote (POST /sql)
    std::string sql;    // its statement as the history keeps it (querygate.history_sql)
    std::string key;
    std::string policy;
    std::string client;
    Clock::time_point started;
    long long revision = 0;
    int version = 0;
    unsigned long long rows = 0;
    std::string masked;
    std::string params;
    run_events::Who who;
    std::string refusal; // why the credentials were refused (the access log's reason)
};

struct Exchange {
    const HttpRequest &request;
    HttpResponse &response;
    const std::string &id;
    Trace &trace;
    // Whether anything keeps a record of this request (the access log, the run history or the
    // run events): the trace is filled only then.
    bool traced;
    // querygate.cors_allowed_origins, as parsed for this request.
    const cors::Origins &origins;
};
