// One call of a saved query as both sides see it: what the HTTP side asks (CallRequest) and what
// it gets back (CallResult). Plain C++.
#pragma once

#include "common/run_events.hpp"
#include "common/answer_format.hpp"
#include "common/api_error.hpp"
#include "common/file_body.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CallParam {
    std::string name;
    std::string value; // text given to the type's input function
    bool is_null = false;
};

// What the rate-limit fields say of the caller's limit closest to refusing (http/limit_fields.hpp),
// and Retry-After on a refusal, in whole seconds (rules/rate_limits.hpp).
struct LimitReport {
    bool present = false;
    // Which limit: its rate (a token bucket), or its quota of a day or a month.
    enum class Policy { rate, daily, monthly } policy = Policy::rate;
    long long limit = 0;          // the bucket's size, or the quota
    long long remaining = 0;      // calls left
    long long reset_seconds = 0;  // until the bucket is full, or the period ends
    long long window_seconds = 0; // the policy's window: an empty bucket's refill, or the period
    long long retry_after_seconds = 0; // only on a refusal: at least 1
};

// A call's place in its caller's in-flight count (shmem/limit_table.hpp), given back when the call
// ends; opaque to everyone else. Plain data: taking and giving back one allocates nothing.
struct LimitHold {
    std::uintptr_t entry = 0; // 0: none held
    // The bucket the call was charged from, which an export then owes its length to
    // (limit_table::owe), wherever its rows were written: the caller is no longer at hand there.
    double rate_per_second = 0;
    long capacity = 0;
    bool held() const { return entry != 0; }
};

// Whose share of a shared pool a call takes (a worker's helpers: worker/call_helpers.hpp; the
// export slots: shmem/export_slots.hpp): its caller (a key; a token's subject within its policy)
// and its policy. Each holds at most pool_share_cap of a pool.
struct PoolShare {
    std::string caller;
    std::string policy;
};

// How much of a pool of `size` one caller, or one policy's callers together, may hold under
// querygate.caller_share (`percent`): at least one, and one fewer than all when there are two or
// more, so that another caller always finds one; 100: all of it.
inline std::size_t pool_share_cap(std::size_t size, int percent)
{
    if (percent >= 100)
        return size;
    std::size_t cap = size * static_cast<std::size_t>(percent > 0 ? percent : 1) / 100;
    cap = cap > 0 ? cap : 1;
    return size >= 2 && cap > size - 1 ? size - 1 : cap;
}

struct CallRequest {
    std::string query; // the saved query's name, from the URL
    // SQL the caller wrote (POST /sql), instead of a saved query: query is then empty.
    std::string sql;
    std::string secret;       // a presented API key, empty when none
    std::string bearer_token; // a presented JWT, empty when none (a key is judged first)
    std::string client_ip;    // the caller's address after trusted proxies; empty when unknown
    // The connection's socket, watched while the call runs (call/client_watch.hpp); -1: none. Not
    // sent to a helper (call_codec), whose process does not hold it.
    int client_fd = -1;
    std::vector<CallParam> params;
    long page = 1;
    long page_size = 100;
    AnswerFormat format = AnswerFormat::json; // of the rows; errors are JSON whatever it is
    // ?stream=true: every row, written to a file and sent from it after the call (an export,
    // call/export_file.hpp), instead of a page. Never a write.
    bool stream = false;
    // A GET: a safe method (RFC 9110, 9.2.1), which a prefetcher, crawler or retrying proxy may
    // repeat, so the call may not write (405, Allow: POST).
    bool safe_method = false;
    // How long the caller lets its query run (?timeout=, Prefer: timeout=), in milliseconds; 0:
    // as long as its policy and the server allow. It can only shorten the call.
    long timeout_ms = 0;
    std::string request_id;
    // Set where a worker already charged the call to its caller's limits (a helper runs
    // the call again, and must not charge it twice). Never set from a request.
    bool limits_charged = false;
    // An export a worker hands to a helper: the path by which the helper opens the file the
    // worker holds (FileBody::path_for_others), to write the rows into. The worker also holds the
    // export's place. Never set from a request.
    std::string export_to;
};

struct CallResult {
    ApiError error;   // set() when the call failed
    std::string body; // the rows on success, in the request's format
    FileBody file;    // an export's rows (the request's stream), instead of body
    // An export a helper wrote into its worker's file (CallRequest::export_to): the file's size.
    // The file stays with the process that holds it; only its size travels (call_codec).
    std::uint64_t written = 0;
    int export_slot = -1; // with file: its place among the exports (shmem/export_slots.hpp)
    bool has_more = false;
    unsigned long long rows = 0; // rows in body, or changed by a write that returns none
    long long revision = 0;      // saved_query.revision of the query called, once found
    int version = 0;             // and its saved_query.version
    std::string masked; // querygate.history on: a JSON array of the masked columns, or empty
    // querygate.history on and the policy's history_params: a JSON object of the parameters,
    // masked by its rules (call/history_values.hpp), or empty
    std::string params;
    // A call the runner did not run, or stopped, because a helper can run it (QueryRunner::run's
    // may_hand_off): a write, or a read known to be slow or that became slow in the worker. The
    // worker sends the request to a helper (src/worker/call_helpers.hpp), within `share`.
    bool for_helper = false;
    PoolShare share;
    // How long the query ran (its execution and answer), in microseconds: a helper's tells its
    // worker whether the query is still slow (call/slow_queries.hpp).
    long long ran_us = 0;
    // Who called, for the access log and the history: the key's name ("jwt" for a token) and the
    // policy, once the caller is known; filled only while querygate.log_requests or
    // querygate.history is on.
    std::string key_name;
    std::string policy;
    // Why the caller's credentials were refused, for the access log only (call/authenticate.hpp).
    // Not sent back by a helper: a worker judged the credentials before handing the call on.
    std::string refusal;
    // Who called, as GET /events matches watchers with calls; filled while events are on.
    run_events::Who who;
    // The caller's limits (shmem/limit_table.hpp): what the headers say, and the call's place in
    // its caller's in-flight count, which a call handed to a helper keeps until its answer
    // (QueryRunner::release; empty when none is held).
    LimitReport limits;
    LimitHold limit_hold;
};
