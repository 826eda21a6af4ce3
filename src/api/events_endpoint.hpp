// GET /events: a stream of run events (http/event_stream.hpp) for a caller whose policy is granted
// them, in the HTML Living Standard's event-stream format. The stream is opened here, after the
// checks a call has (credentials, limits) and its own (the policy's grant, the caps); the
// worker's rounds (worker/event_pump.hpp) fill it. Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/services.hpp"
#include "http/event_stream.hpp"

class EventsEndpoint {
  public:
    EventsEndpoint(CallPath &path, services::Events &events) : path_(path), events_(events) {}
    // The worker's event streams, which GET /events opens (none: GET /events is 404).
    void set_streams(event_stream::Streams *streams) { streams_ = streams; }
    bool on() const { return streams_ != nullptr; }
    void handle(Exchange &ex);

  private:
    // A GET's stream, its caller let in: caught up from the id the client says it saw, counted
    // among the key's streams, and handed to the worker's streams.
    void open(Exchange &ex, const run_events::Ring &ring, CallRequest call,
              event_stream::Audience audience, const LimitReport &limits);

    CallPath &path_;
    services::Events &events_;
    event_stream::Streams *streams_ = nullptr;
};
