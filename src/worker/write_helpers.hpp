// Write helpers: processes that run a worker's writes, so that a write waiting for its WAL flush
// (or for a lock) holds no worker. PostgreSQL side; the worker owns its helpers.
//
// Why: a worker runs one call at a time. With synchronous commit (the default), every write waits
// for its own WAL flush, during which the worker serves nobody, and the flushes of two workers
// are shared by at most two commits; pgbench's many backends wait together and share each flush.
// A helper is one more process that can wait: the worker checks a write as it checks every call
// (key, grant, parameters, the policy's role and decision, QueryRunner::run with may_hand_off),
// hands the request to an idle helper, and goes on serving its other connections; the helper runs
// the whole call again in its own transaction, commits as any backend does (waiting for its
// flush, so the write is durable before anyone can see it), and sends the result back. The
// caller's connection waits suspended (HttpServer::answer_later). Nothing changes for what other
// sessions see, unlike querygate.group_commit, under which no write is handed off.
//
// How: each helper is a dynamic background worker with a shared memory segment holding two
// message queues (shm_mq, as parallel query's workers use): requests one way, results the other
// (common/call_codec.hpp). The worker never waits on a queue: it sends and receives without
// blocking, a long message over several rounds; the helper blocks on both. Helpers are started
// when every running one is busy, up to querygate.write_helpers per worker (and no more than a
// worker's share of max_worker_processes, so that every worker gets helpers), and live as long as
// their worker (the worker's exit detaches the segment, which ends them). Without a free helper
// and without room for a new one (querygate.write_helpers reached, or no background worker slot
// left in max_worker_processes), the call waits in the worker's queue for the first helper that is
// free: the worker itself never waits for a write while it has a helper. Only a worker that has
// none at all (none could start, or querygate.write_helpers is 0) runs writes itself, as it did
// before helpers.
//
// What can go wrong: a helper asked to stop during a call (the server stopping,
// pg_terminate_backend) cancels it and answers 503 shutting_down before it exits
// (call/stop_request.hpp). One that exits otherwise during a call (a FATAL error) leaves that
// call's outcome unknown; its caller gets 500 internal_error, and the worker starts another helper
// for the next write. A helper is not waited for when it starts: its first request waits in its
// queue. One that never starts, or exits before it has read its request, is seen by the worker from
// the queue (nothing of that call ran), and the call goes first in line for another helper.
#pragma once

#include "common/call.hpp"
#include "http/request_handler.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

class WriteHelpers final : public CallHandOff {
  public:
    WriteHelpers();
    ~WriteHelpers() override;
    WriteHelpers(const WriteHelpers &) = delete;
    WriteHelpers &operator=(const WriteHelpers &) = delete;

    // CallHandOff: sends the call to an idle helper, starting one if none is idle and there is
    // room, or else queues it for the first helper that is free; false when this worker has no
    // helper at all and none can start (the worker then runs it).
    bool hand_off(std::uint64_t token, const CallRequest &call) override;

    // Calls `done` with every result that arrived (or the 500 of a helper that exited during its
    // call), and goes on sending requests too long for one round. Never blocks.
    using Done = std::function<void(std::uint64_t token, CallResult &result)>;
    void collect(const Done &done);
    // Calls handed off and not yet answered: the worker's loop then wakes at least every 100 ms.
    unsigned busy() const;

    struct Helper; // write_helpers.cpp

  private:
    // A call waiting for a helper: every one was busy when it came.
    struct Queued {
        std::uint64_t token;
        std::string request; // encoded
    };
    Helper *start_helper();
    Helper *idle_helper();
    std::size_t most() const;
    // Sends the request (taking its bytes) to an idle helper; false, with the bytes given back,
    // when the helper turns out to have exited.
    bool give(Helper &h, std::uint64_t token, std::string &request);
    std::vector<std::unique_ptr<Helper>> helpers_;
    std::vector<Queued> queue_;
    bool told_no_slot_ = false; // logged once that no background worker slot was left
    // After a helper could not start, none is tried again for a second: a busy worker would
    // otherwise make and drop a segment, and ask the postmaster, on every write.
    std::chrono::steady_clock::time_point retry_after_{};
};
