// A worker's part in GET /events: after each round of its loop, the run events that are new in
// the shared ring (shmem/event_ring.hpp) go to its open streams (http/event_stream.hpp), each
// stream checked first against the catalog as it is now, and the connections that have something
// to send are woken.
//
// Rounds that carry events are at least min_gap apart: under load every call makes an event, and a
// round costs a short transaction (the catalog's changes are taken before anything is sent, so a
// revoked key or grant sees nothing more). A round also comes when a keep-alive is due, or a
// stream's key or token expires. A worker that sleeps with streams open asks the ring to wake it
// at the next event; between rounds its streams hold no part of it: calls are served as ever.
#pragma once

#include "call/query_runner.hpp"
#include "http/event_stream.hpp"
#include "http/http_server.hpp"

#include <chrono>
#include <cstdint>

class EventPump {
  public:
    using Clock = event_stream::Clock;
    static constexpr std::chrono::milliseconds min_gap{20};

    EventPump(QueryRunner &runner, HttpServer &server, event_stream::Streams &streams)
        : runner_(runner), server_(server), streams_(streams)
    {
    }

    // After a round of the loop. Returns how long the worker may wait before it is due again, in
    // ms (-1: no limit).
    long pump(Clock::time_point now, bool stopping);
    // Just before the worker sleeps: asks for a wake-up at the next event; false when an event
    // came that a round must take now (do not sleep).
    bool may_sleep();

  private:
    // Checks every stream again when the catalog changed or a key or token may have expired.
    // False when the catalog cannot be read now: nothing is sent this round.
    bool check(std::int64_t now_us);
    void take_events();

    QueryRunner &runner_;
    HttpServer &server_;
    event_stream::Streams &streams_;
    std::uint64_t cursor_ = 0;     // the last event given to the streams
    std::uint64_t generation_ = 0; // of the catalog the streams were checked against
    std::size_t checked_ = 0;      // streams when they were checked: new ones were checked at open
    std::int64_t next_expiry_us_ = 0; // the earliest key or token end among the streams; 0: none
    Clock::time_point last_round_{};
    Clock::time_point next_keep_alive_{}; // the earliest a stream's keep-alive is due
    Clock::time_point next_hang_up_check_{};
    bool deferred_ = false; // events wait for min_gap to pass
};
