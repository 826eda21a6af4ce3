// The open GET /events streams of a worker, and what each may see (issue 18): plain C++ over the
// shared ring of run events (common/run_events.hpp).
//
// A worker reads the events that are new since its last round once, and hands them to every
// stream: streams are grouped by what they may see (the queries of their policy, one shared set per
// policy), so each event is matched once per group, not once per stream, and its text is made once.
// Each stream keeps the id of the last event it was given, and its text waiting to be sent; the
// server (http_server.hpp) takes that text as the connection can send it, and parks the connection
// when there is none. A stream that lets more than max_waiting bytes pile up (a client that does
// not read) is closed: it can come back with Last-Event-ID and hear a gap for what it missed.
#pragma once

#include "common/call.hpp"
#include "common/run_events.hpp"
#include "http/http_types.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace event_stream {

using Clock = std::chrono::steady_clock;
using QuerySet = std::unordered_set<std::string>;

// What a stream may see and who holds it, as the catalog said when it was last checked.
struct Audience {
    std::string subject; // what the per-key cap counts: "key:<id>", or "policy:<name>" for tokens
    std::string key;     // the key's name ("jwt" for a token), for the access log
    std::string policy;
    std::shared_ptr<const QuerySet> queries; // the policy's granted queries
    std::int64_t expires_at_us = 0;          // the key's or token's end (Unix µs); 0: none
    run_events::Who who;                     // the watcher, matched with each call's
    bool whole_policy = false; // its policy's calls in its tenant (grant_events scope 'policy')
};

// Text waiting past this many bytes: the client does not read, and the stream is closed.
constexpr std::size_t max_waiting = 256 * 1024;

class Stream : public StreamBody {
  public:
    // `credentials` (key, token, address) are what the stream is checked again with; `last_id`
    // the last event its client has (it is given what follows).
    Stream(CallRequest credentials, Audience audience, std::uint64_t last_id,
           Clock::time_point now);

    long read(char *buf, std::size_t max) override;
    bool ready() const override;
    void closed() override;

    // Appends an event it may see, or a gap, unless it had them already.
    void add(const run_events::Event &event, const std::string &text);
    void add_gap(std::uint64_t from, std::uint64_t to);
    // Events up to `id` have been looked at for it: a later gap starts after them.
    void seen(std::uint64_t id);
    // `: keep-alive` when nothing was sent for `interval`.
    void keep_alive(Clock::time_point now, Clock::duration interval);
    // Says why in an `end` event ({"code": ...}), then the body ends.
    void end(const char *code);
    // The body ends with what is waiting (a server stopping).
    void finish() { ending_ = true; }

    bool gone() const { return gone_; }
    bool ending() const { return ending_; }
    std::uint64_t last_id() const { return last_id_; }
    const CallRequest &credentials() const { return credentials_; }
    const Audience &audience() const { return audience_; }
    void set_audience(Audience audience) { audience_ = std::move(audience); }
    // When a keep-alive is due: an interval after the last bytes sent. None while text waits to
    // be sent (a client that reads slowly), nor once it ends: an interval from `now` then, so that
    // a stream that cannot take a keep-alive never makes one due at once, again and again.
    Clock::time_point keep_alive_due(Clock::time_point now, Clock::duration interval) const
    {
        return ending_ || aborted_ || waiting_.size() > sent_ ? now + interval
                                                              : last_sent_ + interval;
    }

  private:
    void wrote();

    CallRequest credentials_;
    Audience audience_;
    std::uint64_t last_id_;
    std::string waiting_;
    std::size_t sent_ = 0; // of waiting_
    Clock::time_point last_sent_;
    bool ending_ = false;
    bool aborted_ = false;
    bool gone_ = false;
    std::size_t *gone_count_ = nullptr; // its registry's count of streams gone since a sweep
    friend class Streams;
    friend void catch_up(const run_events::Ring &ring, Stream &stream);
};

// A worker's streams.
class Streams {
  public:
    // Room for one more, so that add() cannot fail.
    void reserve_one() { streams_.reserve(streams_.size() + 1); }
    void add(std::shared_ptr<Stream> stream)
    {
        stream->gone_count_ = &gone_;
        streams_.push_back(std::move(stream));
    }
    std::size_t size() const { return streams_.size(); }
    bool empty() const { return streams_.empty(); }
    // The streams, for checking them again against the catalog.
    const std::vector<std::shared_ptr<Stream>> &all() const { return streams_; }

    // Forgets the streams whose connections are gone, calling `release` with each one's subject.
    // Looks at them only when one has gone since the last sweep.
    template <typename Release> void sweep(Release release)
    {
        if (gone_ == 0)
            return;
        gone_ = 0;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < streams_.size(); i++) {
            if (streams_[i]->gone())
                release(streams_[i]->audience().subject);
            else
                streams_[kept++] = std::move(streams_[i]);
        }
        streams_.resize(kept);
    }

    // Gives the events of `batch` (read after `from`, the id before its first) to each stream that
    // may see them, and its gap to every stream.
    void deliver(const run_events::Batch &batch);
    // Keep-alives due; returns when the next one is due (time_point::max() without streams).
    Clock::time_point keep_alive(Clock::time_point now, Clock::duration interval);
    // A server stopping: every stream ends with what is waiting.
    void finish_all();

  private:
    std::vector<std::shared_ptr<Stream>> streams_;
    std::vector<std::string> texts_; // reused: each event's text, made once a round
    std::size_t gone_ = 0;           // streams whose connections went since the last sweep
};

// What a new stream missed after its last_id (a client that comes back with Last-Event-ID) and
// is still held, a gap first for what is not, read from `ring` up to its newest event. The
// stream's last_id must not be past the ring's newest (an id from before a restart is not).
void catch_up(const run_events::Ring &ring, Stream &stream);

} // namespace event_stream
