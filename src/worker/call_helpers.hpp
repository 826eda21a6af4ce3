// Helpers: processes that run a worker's writes and slow reads, so that a call waiting for its WAL
// flush, a lock or its own length holds no worker. PostgreSQL side; the worker owns its helpers.
//
// Why: a worker runs one call at a time from the event loop that serves all its connections.
// With synchronous commit (the default), every write waits for its own WAL flush, during which
// the worker serves nobody, and the flushes of two workers are shared by at most two commits;
// pgbench's many backends wait together and share each flush. And a read of 2 s holds the worker
// 2 s: a few slow calls of one caller would stop every other caller, where a pooled gateway makes
// others wait only when its pool is used up. A helper is one more process that can wait: the
// worker checks the call as it checks every call (key, grant, parameters, the policy's role and
// decision, QueryRunner::run with may_hand_off), hands the request to a helper, and goes on
// serving its other connections; the helper runs the whole call again in its own transaction
// (a write commits as any backend does, waiting for its flush, so it is durable before anyone can
// see it), and sends the result back. The caller's connection waits suspended
// (HttpServer::answer_later). Nothing changes for what other sessions see, unlike
// querygate.group_commit, under which no write is handed off. Which reads are slow:
// call/slow_queries.hpp and call/worker_budget.hpp.
//
// Shares: one caller (a key, or a token's subject in its policy), and one policy's callers
// together, hold at most querygate.caller_share of the worker's helpers (at least one, and one
// fewer than all when there are two or more), so another caller always finds a helper. A call over
// its share waits; as helpers come free, the waiting call of the caller holding the fewest goes
// first (in the order they came among equals). A caller's slow calls so queue behind each other,
// not in front of everyone else's.
//
// How: each helper is a dynamic background worker with a shared memory segment holding two
// message queues (shm_mq, as parallel query's workers use): requests one way, results the other
// (common/call_codec.hpp), and a word by which the worker cancels the running call. The worker
// never waits on a queue: it sends and receives without blocking, a long message over several
// rounds; the helper blocks on both. Helpers are started when every running one is busy, up to
// querygate.helpers per worker (and no more than a worker's share of max_worker_processes, so
// that every worker gets helpers), and live as long as their worker (the worker's exit detaches
// the segment, which ends them). Without a free helper and without room for a new one, the call
// waits in the worker's queue. Only a worker that has none at all (none could start, or
// querygate.helpers is 0) runs the call itself, as it did before helpers.
//
// What can go wrong: a caller that hangs up while its call waits here or runs in a helper is seen
// by the worker (its socket, looked at every quarter second while calls are out): a waiting call
// is answered 499 without running, a running one is cancelled through the word (the helper
// watches it as the worker watches a socket: call/client_watch.hpp) and rolls back, 499. A helper
// asked to stop during a call (the server stopping, pg_terminate_backend) cancels it and answers
// 503 shutting_down before it exits (call/stop_request.hpp). One that exits otherwise during a
// call (a FATAL error) leaves that call's outcome unknown; its caller gets 500 internal_error, and
// the worker starts another helper for the next call. A helper is not waited for when it starts:
// its first request waits in its queue. One that never starts, or exits before it has read its
// request, is seen by the worker from the queue (nothing of that call ran), and the call waits for
// another helper.
#pragma once

#include "common/call.hpp"
#include "api/request_handler.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

class CallHelpers final : public services::HandOff {
  public:
    CallHelpers();
    ~CallHelpers() override;
    CallHelpers(const CallHelpers &) = delete;
    CallHelpers &operator=(const CallHelpers &) = delete;

    // services::HandOff: sends the call to an idle helper (starting one if none is idle and there
    // is room) when its caller and policy are within their shares, or else queues it for the first
    // helper that is free to it; false when this worker has no helper at all and none can start
    // (the worker then runs it).
    bool hand_off(std::uint64_t token, const CallRequest &call, const PoolShare &share) override;

    // Calls `done` with every result that arrived (or the 500 of a helper that exited during its
    // call, or the 499 of a waiting call whose caller hung up), gives waiting calls to helpers
    // free for them, and goes on sending requests too long for one round. Never blocks.
    using Done = std::function<void(std::uint64_t token, CallResult &result)>;
    void collect(const Done &done);
    // Calls handed off and not yet answered: the worker's loop then wakes at least every 100 ms.
    unsigned busy() const;

    struct Helper; // call_helpers.cpp

  private:
    // A call waiting for a helper: none was free to it when it came.
    struct Queued {
        std::uint64_t token;
        std::string request; // encoded
        PoolShare share;
        int client_fd; // the worker's socket of its caller, looked at while it waits
    };
    Helper *start_helper();
    Helper *idle_helper();
    // An idle helper, or a new one while there is room.
    Helper *free_helper();
    std::size_t most() const;
    // How many helpers one caller, or one policy, may hold (querygate.caller_share).
    std::size_t share_cap() const;
    std::size_t held_by_caller(const std::string &caller) const;
    bool within_share(const PoolShare &share) const;
    // Sends the call (taking its request's bytes) to an idle helper; false, with the bytes given
    // back, when the helper turns out to have exited.
    bool give(Helper &h, Queued &call);
    // Gives waiting calls to the helpers free for them, fewest held first.
    void dispatch();
    // Callers that hung up: waiting calls are answered 499, running ones cancelled.
    void watch_callers(const Done &done);
    std::vector<std::unique_ptr<Helper>> helpers_;
    std::vector<Queued> queue_;
    bool told_no_slot_ = false; // logged once that no background worker slot was left
    // After a helper could not start, none is tried again for a second: a busy worker would
    // otherwise make and drop a segment, and ask the postmaster, on every call.
    std::chrono::steady_clock::time_point retry_after_{};
    std::chrono::steady_clock::time_point next_watch_{};
};
