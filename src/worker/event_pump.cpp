// A worker's event streams, fed after each round: see event_pump.hpp.
#include "worker/event_pump.hpp"

#include "call/authenticate.hpp"
#include "shmem/event_ring.hpp"
#include "common/settings.hpp"
#include "shmem/worker_load.hpp"

#include <algorithm>

namespace {

// Events a round takes at most: about 230 kB of text, under what a stream may have waiting
// (event_stream::max_waiting), so that a reader that keeps up is never closed for a round's worth.
// At a round every 20 ms that is 51,000 events a second; a worker further behind catches up over
// the next rounds, and the ring says a gap for what they cannot.
constexpr std::size_t batch_events = 512;
constexpr int batches_a_round = 2;
// How often the sockets of parked streams are looked at for clients that have gone.
constexpr std::chrono::seconds hang_up_check{1};

long ms_until(event_stream::Clock::time_point now, event_stream::Clock::time_point then)
{
    if (then <= now)
        return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(then - now).count();
    return static_cast<long>(std::min<long long>(ms, 60 * 60 * 1000));
}

} // namespace

bool EventPump::check(std::int64_t now_us)
{
    const std::uint64_t generation = runner_.catalog_generation();
    if (generation == 0)
        return false;
    const bool expired = next_expiry_us_ != 0 && now_us >= next_expiry_us_;
    if (generation == generation_ && !expired && checked_ == streams_.size())
        return true;
    next_expiry_us_ = 0;
    for (const auto &s : streams_.all()) {
        if (s->ending())
            continue;
        // Only what changed is asked again: a stream opened since was checked as it opened.
        if (generation != generation_ || expired) {
            event_stream::Audience audience;
            LimitReport unused;
            if (ApiError refused = runner_.watch_events(s->credentials(), false, audience, unused);
                refused.set()) {
                s->end(refused.code.c_str());
                continue;
            }
            s->set_audience(std::move(audience));
        }
        const std::int64_t ends = s->audience().expires_at_us;
        if (ends != 0 && (next_expiry_us_ == 0 || ends < next_expiry_us_))
            next_expiry_us_ = ends;
    }
    generation_ = generation;
    checked_ = streams_.size();
    return true;
}

void EventPump::take_events()
{
    const run_events::Ring *ring = runner_.events();
    run_events::Batch batch;
    for (int i = 0; i < batches_a_round; i++) {
        run_events::read_after(*ring, cursor_, batch_events, batch);
        if (batch.events.empty() && batch.missed_from == 0)
            return;
        streams_.deliver(batch);
        cursor_ = batch.events.empty() ? batch.missed_to : batch.events.back().id;
    }
}

long EventPump::pump(Clock::time_point now, bool stopping)
{
    streams_.sweep([this](const std::string &subject) { runner_.give_stream(subject); });
    const run_events::Ring *ring = runner_.events();
    deferred_ = false;
    if (ring == nullptr)
        return -1;
    const std::uint64_t newest = ring->last.load(std::memory_order_acquire);
    if (streams_.empty()) {
        cursor_ = newest; // a stream that opens is caught up as it opens
        checked_ = 0;
        return -1;
    }
    if (stopping) {
        streams_.finish_all();
        if (server_.wake_streams() > 0)
            server_.run();
        return -1;
    }
    const auto keep_alive = std::chrono::seconds(settings::event_keepalive);
    const std::int64_t now_us = unix_now_us();
    const bool fresh = newest > cursor_;
    long wait = -1;
    // Only a round looks at every stream: between rounds a call pays for none of them.
    bool round = false;
    if (fresh && now - last_round_ < min_gap) {
        deferred_ = true;
        wait = ms_until(now, last_round_ + min_gap);
    } else if (fresh || now >= next_keep_alive_ || checked_ != streams_.size() ||
               (next_expiry_us_ != 0 && now_us >= next_expiry_us_)) {
        // Checked before anything is sent, keep-alives too: a stream whose key was revoked while
        // no event came hears so by its next keep-alive.
        if (check(now_us)) {
            take_events();
            last_round_ = now;
            round = true;
        } else {
            deferred_ = true; // the catalog cannot be read now: tried again shortly
            wait = 100;
        }
    }
    // A client that has gone gives its place back within a second, not at its next keep-alive.
    bool hung_up = false;
    if (now >= next_hang_up_check_) {
        hung_up = server_.close_hung_up() > 0;
        next_hang_up_check_ = now + hang_up_check;
    }
    if (round)
        next_keep_alive_ = streams_.keep_alive(now, keep_alive);
    if ((round || hung_up) && server_.wake_streams() > 0)
        server_.run();
    long due = std::min(ms_until(now, next_keep_alive_), ms_until(now, next_hang_up_check_));
    if (next_expiry_us_ != 0)
        due = std::min(due, static_cast<long>(std::min<std::int64_t>(
                                (std::max<std::int64_t>(next_expiry_us_ - now_us, 0) + 999) / 1000,
                                60 * 60 * 1000)));
    return wait < 0 ? due : std::min(wait, due);
}

bool EventPump::may_sleep()
{
    const run_events::Ring *ring = runner_.events();
    if (ring == nullptr || streams_.empty() || deferred_)
        return true;
    event_ring::wake_me(worker_load::mine());
    // Asked before it looks (event_ring::flush looks after it writes): an event that came in
    // between is seen here, or wakes it.
    return ring->last.load(std::memory_order_acquire) == cursor_;
}
