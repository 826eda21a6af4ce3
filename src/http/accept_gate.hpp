// When a worker takes a pending connection from the shared listening socket. Pure C++: no
// PostgreSQL header; the counts come from src/shmem/worker_load.hpp, the clock from the caller.
//
// The rule: the worker holding the fewest connections takes the next one. Every idle worker is
// woken by a pending connection; one that holds more than the fewest stops watching the socket for
// a short grace, so the least loaded can take it. If the connection is still waiting when the grace
// ends (the least loaded is busy with a long call, or not scheduled yet), whoever sees it takes it:
// balance is a preference, never a reason for a connection to wait behind a slow query.
//
// Also: when accept fails for lack of descriptors or memory, the socket stays readable and a
// worker that kept watching it would spin; it stops watching for a while instead, as libmicrohttpd
// does in that case.
#pragma once

#include <chrono>

class AcceptGate {
  public:
    using Clock = std::chrono::steady_clock;

    // How long a busier worker leaves a pending connection to the least loaded one.
    static constexpr std::chrono::microseconds grace{1000};
    // How long accepting stops after running out of descriptors or memory.
    static constexpr std::chrono::milliseconds shortage_pause{100};

    // Whether to take the pending connection now, given this worker's open connections and the
    // fewest any running worker holds (this one included).
    bool should_accept(unsigned mine, unsigned fewest, Clock::time_point now);
    // accept failed for lack of descriptors or memory.
    void out_of_resources(Clock::time_point now);

    // Whether to watch the listening socket now.
    bool watching(Clock::time_point now) const { return now >= resume_at_; }
    // Milliseconds (rounded up) until watching resumes; 0 when watching.
    long ms_until_watching(Clock::time_point now) const;

  private:
    void settled() { deferring_ = false; } // the pending connection is this worker's to take

    Clock::time_point resume_at_{};   // the socket is ignored until then
    Clock::time_point deferred_at_{}; // when this worker first left the pending connection
    bool deferring_ = false;
};
