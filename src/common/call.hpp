// One call of a saved query as both sides see it: what the HTTP side asks (CallRequest) and what
// it gets back (CallResult). Plain C++.
#pragma once

#include "common/api_error.hpp"

#include <string>
#include <vector>

struct CallParam {
    std::string name;
    std::string value; // text given to the type's input function
    bool is_null = false;
};

struct CallRequest {
    std::string query;        // the saved query's name, from the URL
    std::string secret;       // a presented API key, empty when none
    std::string bearer_token; // a presented JWT, empty when none (a key is judged first)
    std::string client_ip;    // the caller's address after trusted proxies; empty when unknown
    std::vector<CallParam> params;
    long page = 1;
    long page_size = 100;
    std::string request_id;
};

struct CallResult {
    ApiError error;   // set() when the call failed
    std::string body; // JSON rows on success
    bool has_more = false;
    // A write the runner did not run because a write helper can (QueryRunner::run's
    // may_hand_off): the worker sends the request to one (src/worker/write_helpers.hpp).
    bool for_helper = false;
    // Who called, for the access log: the key's name ("jwt" for a token) and the policy, once
    // the caller is known; filled only while querygate.log_requests is on.
    std::string key_name;
    std::string policy;
};
