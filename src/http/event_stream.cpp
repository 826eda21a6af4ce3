// A worker's event streams: see event_stream.hpp.
#include "http/event_stream.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace event_stream {

namespace {
// How long an EventSource waits before it reconnects after the body ends or the connection drops.
constexpr unsigned retry_ms = 3000;
} // namespace

Stream::Stream(CallRequest credentials, Audience audience, std::uint64_t last_id,
               Clock::time_point now)
    : credentials_(std::move(credentials)), audience_(std::move(audience)), last_id_(last_id),
      last_sent_(now)
{
    run_events::append_retry(waiting_, retry_ms);
}

long Stream::read(char *buf, std::size_t max)
{
    if (aborted_)
        return aborted;
    const std::size_t left = waiting_.size() - sent_;
    if (left == 0)
        return ending_ ? ended : nothing_yet;
    const std::size_t n = std::min(left, max);
    std::memcpy(buf, waiting_.data() + sent_, n);
    sent_ += n;
    if (sent_ == waiting_.size()) {
        waiting_.clear(); // keeps its capacity: the next event's text goes in the same memory
        sent_ = 0;
    }
    last_sent_ = Clock::now();
    return static_cast<long>(n);
}

void Stream::closed()
{
    if (gone_)
        return;
    gone_ = true;
    if (gone_count_ != nullptr)
        ++*gone_count_;
}

bool Stream::ready() const
{
    return aborted_ || ending_ || waiting_.size() > sent_;
}

void Stream::wrote()
{
    if (waiting_.size() - sent_ > max_waiting) {
        aborted_ = true;
        waiting_.clear();
        waiting_.shrink_to_fit();
        sent_ = 0;
    }
}

void Stream::add(const run_events::Event &event, const std::string &text)
{
    if (ending_ || aborted_ || event.id <= last_id_)
        return;
    waiting_.append(text);
    last_id_ = event.id;
    wrote();
}

void Stream::add_gap(std::uint64_t from, std::uint64_t to)
{
    if (ending_ || aborted_ || to <= last_id_)
        return;
    run_events::append_gap(waiting_, std::max(from, last_id_ + 1), to);
    last_id_ = to;
    wrote();
}

void Stream::seen(std::uint64_t id)
{
    // Not said to the client (an id line comes only with an event): a client that comes back
    // with its last event's id is given what followed, the events it may not see left out again.
    last_id_ = std::max(last_id_, id);
}

void Stream::keep_alive(Clock::time_point now, Clock::duration interval)
{
    if (ending_ || aborted_ || waiting_.size() > sent_ || now - last_sent_ < interval)
        return;
    run_events::append_keepalive(waiting_);
    last_sent_ = now; // due again an interval from now, even if the client takes it later
}

void Stream::end(const char *code)
{
    if (ending_ || aborted_)
        return;
    waiting_.append("event: end\ndata: {\"code\":\"").append(code).append("\"}\n\n");
    ending_ = true;
}

void Streams::deliver(const run_events::Batch &batch)
{
    if (batch.missed_from != 0)
        for (const auto &s : streams_)
            s->add_gap(batch.missed_from, batch.missed_to);
    if (batch.events.empty())
        return;
    texts_.resize(batch.events.size());
    std::vector<bool> made(batch.events.size(), false);
    // The events each set of queries may see, found once per set: streams of one policy share it.
    std::unordered_map<const QuerySet *, std::vector<std::size_t>> matches;
    for (const auto &s : streams_) {
        const QuerySet *queries = s->audience().queries.get();
        auto found = matches.find(queries);
        if (found == matches.end()) {
            std::vector<std::size_t> seen;
            if (queries != nullptr)
                for (std::size_t i = 0; i < batch.events.size(); i++)
                    if (queries->count(batch.events[i].query) > 0)
                        seen.push_back(i);
            found = matches.emplace(queries, std::move(seen)).first;
        }
        const Audience &audience = s->audience();
        for (std::size_t i : found->second) {
            if (!run_events::sees(audience.who, audience.whole_policy, batch.events[i].who))
                continue;
            if (!made[i]) {
                texts_[i].clear();
                run_events::append_event(texts_[i], batch.events[i]);
                made[i] = true;
            }
            s->add(batch.events[i], texts_[i]);
        }
        s->seen(batch.events.back().id);
    }
}

Clock::time_point Streams::keep_alive(Clock::time_point now, Clock::duration interval)
{
    Clock::time_point next = Clock::time_point::max();
    for (const auto &s : streams_) {
        s->keep_alive(now, interval);
        next = std::min(next, s->keep_alive_due(now, interval));
    }
    return next;
}

void Streams::finish_all()
{
    for (const auto &s : streams_)
        s->finish();
}

void catch_up(const run_events::Ring &ring, Stream &stream)
{
    Streams one;
    // The stream is given to a registry of its own for the time of the catch-up: the same
    // matching and gaps as every later round. A shared_ptr that does not own it; its own
    // registry's count is given back after.
    std::size_t *registry = stream.gone_count_;
    one.add(std::shared_ptr<Stream>(std::shared_ptr<Stream>(), &stream));
    // Up to the newest event now: writers may go on adding, and the worker's rounds take the rest.
    const std::uint64_t newest = ring.last.load(std::memory_order_acquire);
    run_events::Batch batch;
    std::uint64_t seen = stream.last_id();
    while (seen < newest) {
        run_events::read_after(ring, seen, 256, batch);
        if (batch.events.empty() && batch.missed_from == 0)
            break;
        one.deliver(batch);
        seen = batch.events.empty() ? batch.missed_to : batch.events.back().id;
    }
    stream.gone_count_ = registry;
}

} // namespace event_stream
