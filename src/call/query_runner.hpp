// Runs one call of a saved query: authenticate, authorize, bind, execute, serialize, in one
// transaction. The interface is plain C++ (request_handler.cpp includes no PostgreSQL header); the
// implementation (query_runner.cpp) is the PostgreSQL side.
#pragma once

#include "common/api_description.hpp"
#include "common/call.hpp"
#include "common/history.hpp"
#include "common/metrics.hpp"

#include <cstdint>
#include <memory>
#include <string>

class GroupCommit; // worker/group_commit.hpp: the worker's, which it holds answers with
namespace event_stream {
struct Audience; // http/event_stream.hpp
}
namespace run_events {
struct Ring; // common/run_events.hpp
}

class QueryRunner {
  public:
    explicit QueryRunner(GroupCommit &group_commit);
    ~QueryRunner();
    QueryRunner(const QueryRunner &) = delete;
    QueryRunner &operator=(const QueryRunner &) = delete;

    // Once, after the worker has connected to its database.
    void start();
    // With may_hand_off, a granted write is not run: the result says so (for_helper), after the
    // checks every call passes here (key, grant, parameters, the policy's role; the plan and the
    // policy's decision only the first time, when it is not yet known to be a write), and a
    // helper runs the whole call again (src/worker/call_helpers.hpp). Never with
    // querygate.group_commit on, whose writes wait for no flush in the worker anyway. A read is
    // handed on the same way when its query is known to be slow, or stopped and handed on when it
    // runs past querygate.slow_call_threshold here (call/worker_budget.hpp).
    CallResult run(const CallRequest &request, bool may_hand_off = false);
    // For GET /ready: whether a call could be served now, that is, a transaction starts and the
    // catalog is loaded (the extension installed). An error (503 unavailable) when not. What the
    // server is: a primary, or a hot standby and how far its replay is behind.
    struct Role {
        bool standby = false;
        // A standby's: WAL received and not yet replayed, in bytes, and how long ago the last
        // transaction it replayed committed on the primary, in seconds (-1: none yet).
        long long replay_lag_bytes = 0;
        double replayed_ago_s = -1;
    };
    ApiError ready(Role *role = nullptr);
    // For GET /openapi.json and GET /catalog: what the request's key or token may call
    // (call/api_describer.hpp), after the same authentication and limits a call has; the
    // caller's limits in `limits` (what the headers say).
    ApiError describe(const CallRequest &request, api_description::Api &out, LimitReport &limits);
    // For GET /events (http/event_stream.hpp): whether the request's key or token may watch run
    // events (its policy is granted them: else 403 events_not_granted), and what it may see, in
    // `out`. With `charge`, the same authentication and limits as a call (a stream opening);
    // without, a stream already open is checked again against the catalog as it is now.
    ApiError watch_events(const CallRequest &request, bool charge, event_stream::Audience &out,
                          LimitReport &limits);
    // The catalog's count of changes, keys' included, after taking its committed changes (a short
    // transaction); 0 when no transaction could start. A change means open streams must be
    // checked again.
    std::uint64_t catalog_generation();
    // The run events' shared ring (shmem/event_ring.hpp), or null when events are off.
    const run_events::Ring *events() const;
    // A stream of `subject` (event_stream::Audience) opens or closes: its place among
    // querygate.max_event_streams_per_key, counted across workers; false when there is none.
    bool take_stream(const std::string &subject);
    void give_stream(const std::string &subject);
    // For GET /metrics: every worker's statistics, from shared memory (no transaction). An
    // error (503 unavailable) when they cannot be read.
    ApiError metrics(metrics::Snapshot &snapshot);
    // For GET /metrics: whether `presented` is one of the tokens of querygate.metrics_token_file
    // (read again at each reload; compared in constant time). `configured` says whether there is
    // any: with none (or a file that cannot be read, which the log says once), /metrics does not
    // exist.
    bool metrics_token_accepted(const std::string &presented, bool &configured);
    // A call answered, for querygate.history (shmem/history_ring.hpp) and the run events
    // (shmem/event_ring.hpp): never waits, never throws.
    void record(const CallRecord &call) noexcept;
    // A call of `query` handed to a helper was answered, after running `ran_us` there: whether
    // the query is still slow (call/slow_queries.hpp).
    void helper_ran(const std::string &query, long long revision, long long ran_us);
    // A call handed to a helper has ended: it leaves its caller's in-flight count.
    void release(LimitHold &hold);
    // An export's file was sent, or its connection is gone: its place among querygate.max_exports
    // goes back (CallResult::export_slot, set when the call took one).
    void release_export(int slot);
    // An export a helper wrote `rows` into, charged by its length under its call's hold
    // (call/call_limits.hpp: charge_length) before the hold is released. Never throws.
    void charge_export(const LimitHold &hold, unsigned long long rows);
    // A call with no credentials at all from `address`: a 429 error when over
    // querygate.anonymous_rate_limit (call/call_limits.hpp), else none.
    ApiError limit_anonymous(const std::string &address, LimitReport &report);

    struct State; // query_runner.cpp

  private:
    std::unique_ptr<State> state_;
};
