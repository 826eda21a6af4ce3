// A worker's event streams (src/http/event_stream.hpp): what a stream is given (only the queries
// its policy may see, each event once, gaps), how its text is read out and when it says nothing
// yet, keep-alives, its end, a client that does not read, a catch-up after Last-Event-ID, and the
// release of a closed stream's place.
#include "http/event_stream.hpp"
#include "tap.hpp"

#include <cstring>
#include <string>
#include <vector>

using tap::is;
using tap::like;
using tap::ok;

namespace {

using event_stream::Clock;

// A caller as run events compare it: a digest of its identity and of its policy and tenant.
run_events::Who who(unsigned char caller, unsigned char scope)
{
    run_events::Who w;
    w.caller[0] = caller;
    w.caller[15] = caller;
    w.scope[0] = scope;
    return w;
}

// An event made by a caller in scope 1 unless said.
run_events::Event event(const char *query, int status, run_events::Who made_by = who(1, 1))
{
    run_events::Event e;
    std::strncpy(e.query, query, sizeof(e.query) - 1);
    e.status = status;
    e.who = made_by;
    return e;
}

// A watcher of every call in scope 1 unless said.
event_stream::Audience audience(const char *subject, std::vector<std::string> queries,
                                run_events::Who watcher = who(9, 1), bool whole_policy = true)
{
    event_stream::Audience a;
    a.subject = subject;
    a.policy = "p";
    a.queries = std::make_shared<const event_stream::QuerySet>(queries.begin(), queries.end());
    a.who = watcher;
    a.whole_policy = whole_policy;
    return a;
}

// Everything a stream has to say now, as its connection would read it in pieces of `piece`.
std::string drain(event_stream::Stream &s, std::size_t piece = 7)
{
    std::string out;
    std::vector<char> buf(piece);
    for (;;) {
        const long n = s.read(buf.data(), buf.size());
        if (n <= 0)
            return out;
        out.append(buf.data(), static_cast<std::size_t>(n));
    }
}

std::size_t count(const std::string &text, const std::string &part)
{
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        n++;
    return n;
}

// Whose calls a stream is given: its own, or its policy's in its tenant; never a call whose
// caller was not accepted.
void whose_calls(Clock::time_point t0)
{
    std::vector<unsigned char> memory(run_events::size_of(8));
    run_events::Ring &ring = *run_events::init(memory.data(), 8);
    auto own = std::make_shared<event_stream::Stream>(
        CallRequest(), audience("key:7", {"q"}, who(1, 1), false), 0, t0);
    auto policy = std::make_shared<event_stream::Stream>(
        CallRequest(), audience("key:8", {"q"}, who(3, 1), true), 0, t0);
    drain(*own);
    drain(*policy);
    event_stream::Streams streams;
    streams.add(own);
    streams.add(policy);
    run_events::put(ring, event("q", 201, who(1, 1)));         // the own watcher's
    run_events::put(ring, event("q", 202, who(2, 1)));         // another caller, same tenant
    run_events::put(ring, event("q", 203, who(4, 2)));         // another tenant
    run_events::put(ring, event("q", 204, run_events::Who())); // no caller accepted
    run_events::Batch batch;
    run_events::read_after(ring, 0, 100, batch);
    streams.deliver(batch);
    const std::string to_own = drain(*own), to_policy = drain(*policy);
    is(count(to_own, "event: run"), std::size_t(1), "own: one event, its own call's");
    like(to_own, "\"status\":201", "own: the watcher's call");
    is(count(to_policy, "event: run"), std::size_t(2), "policy: two events");
    like(to_policy, "\"status\":201", "policy: a call of its tenant");
    like(to_policy, "\"status\":202", "policy: another caller's call of its tenant");
    ok(to_policy.find("\"status\":203") == std::string::npos, "policy: no call of another tenant");
    ok(to_own.find("\"status\":204") == std::string::npos &&
           to_policy.find("\"status\":204") == std::string::npos,
       "a call whose caller was not accepted is no watcher's");
    ok(!run_events::sees(run_events::Who(), true, run_events::Who()),
       "sees: two unknown callers are not one");
    ok(to_own.find("caller") == std::string::npos && to_policy.find("scope") == std::string::npos,
       "the digests are not in the text");
}

} // namespace

int main()
{
    const auto t0 = Clock::now();
    std::vector<unsigned char> memory(run_events::size_of(8));
    run_events::Ring &ring = *run_events::init(memory.data(), 8);

    // A stream starts with its retry, and then has nothing to say.
    auto a =
        std::make_shared<event_stream::Stream>(CallRequest(), audience("key:1", {"orders"}), 0, t0);
    is(drain(*a), std::string("retry: 3000\n\n"), "a stream's first bytes: its retry");
    char one[1];
    is(a->read(one, 1), event_stream::Stream::nothing_yet, "then nothing yet");
    ok(!a->ready(), "and it is not ready: its connection may be parked");

    // Two streams of one policy, one of another: each is given the events of its own queries.
    auto b = std::make_shared<event_stream::Stream>(CallRequest(), a->audience(), 0, t0);
    auto c =
        std::make_shared<event_stream::Stream>(CallRequest(), audience("key:2", {"people"}), 0, t0);
    drain(*b);
    drain(*c);
    event_stream::Streams streams;
    streams.add(a);
    streams.add(b);
    streams.add(c);
    run_events::put(ring, event("orders", 200));
    run_events::put(ring, event("people", 403));
    run_events::put(ring, event("orders", 500));
    run_events::Batch batch;
    run_events::read_after(ring, 0, 100, batch);
    streams.deliver(batch);
    ok(a->ready() && b->ready() && c->ready(), "every stream that was given an event is ready");
    const std::string ta = drain(*a), tb = drain(*b), tc = drain(*c);
    is(count(ta, "event: run"), std::size_t(2), "the orders stream has the two orders events");
    like(ta, "id: 1\nevent: run\ndata: {\"id\":1,\"query\":\"orders\"", "the first in order");
    like(ta, "id: 3\nevent: run", "then the third");
    is(tb, ta, "a stream of the same policy has the same text");
    is(count(tc, "event: run"), std::size_t(1), "the people stream has its one event");
    like(tc, "\"query\":\"people\",\"kind\":\"query\",\"status\":403", "with its status");
    ok(tc.find("orders") == std::string::npos, "and nothing of the orders");
    is(a->last_id(), std::uint64_t(3), "each stream has looked at every event");
    is(c->last_id(), std::uint64_t(3), "the ones it may not see too");

    // Delivering the same events again gives nothing twice.
    streams.deliver(batch);
    ok(!a->ready() && !c->ready(), "an event is never given twice");

    // A gap: every stream hears of it, from the event after its last.
    run_events::Batch lost;
    lost.missed_from = 2;
    lost.missed_to = 9;
    streams.deliver(lost);
    const std::string gap = drain(*c);
    is(gap, std::string("id: 9\nevent: gap\ndata: {\"from\":4,\"to\":9}\n\n"),
       "a gap is said from the stream's next event to the last lost");

    // Keep-alives: due an interval after the last bytes; none for a stream with text waiting.
    const auto interval = std::chrono::seconds(15);
    auto d = std::make_shared<event_stream::Stream>(CallRequest(), audience("key:3", {"x"}), 9, t0);
    event_stream::Streams quiet;
    quiet.add(d);
    ok(d->ready(), "(its retry waits)");
    drain(*d);
    const auto due = quiet.keep_alive(t0 + std::chrono::seconds(5), interval);
    ok(due >= t0 + interval && due < t0 + interval + std::chrono::seconds(1),
       "the next keep-alive is due an interval after the stream last sent");
    const auto later = Clock::now() + interval;
    quiet.keep_alive(later, interval);
    quiet.keep_alive(later + std::chrono::seconds(1), interval);
    is(drain(*d), std::string(": keep-alive\n\n"),
       "a stream silent for an interval gets a comment, and not another a second later");

    // A stream whose text waits (its client reads slowly) makes no keep-alive due before an
    // interval from now, however long ago it last sent: the worker does not spin on it.
    auto waiting =
        std::make_shared<event_stream::Stream>(CallRequest(), audience("key:6", {"x"}), 0, t0);
    event_stream::Streams slow_reader;
    slow_reader.add(waiting);
    const auto much_later = t0 + std::chrono::hours(1);
    ok(slow_reader.keep_alive(much_later, interval) == much_later + interval,
       "a stream with text waiting: the next keep-alive is an interval from now, not overdue");

    // Its end: said, then the body ends; nothing more is added.
    d->end("unauthorized");
    ok(d->ready(), "an ending stream is ready");
    is(drain(*d), std::string("event: end\ndata: {\"code\":\"unauthorized\"}\n\n"), "it says why");
    is(d->read(one, 1), event_stream::Stream::ended, "then its body ends");
    d->add_gap(10, 12);
    is(d->read(one, 1), event_stream::Stream::ended, "and nothing is added after its end");

    // A client that does not read: past max_waiting bytes the stream is aborted.
    auto slow =
        std::make_shared<event_stream::Stream>(CallRequest(), audience("key:4", {"orders"}), 0, t0);
    std::string text;
    run_events::append_event(text, event("orders", 200));
    std::uint64_t id = 0;
    run_events::Event e = event("orders", 200);
    while (id * text.size() <= 2 * event_stream::max_waiting) {
        e.id = ++id;
        slow->add(e, text);
    }
    is(slow->read(one, 1), event_stream::Stream::aborted,
       "a stream whose client lets text pile up is closed");

    // Catch-up after Last-Event-ID: what is still held after the id, a gap first for the rest.
    for (int i = 0; i < 10; i++)
        run_events::put(ring, event(i % 2 ? "orders" : "people", 200)); // ids 4..13
    event_stream::Stream back(CallRequest(), audience("key:5", {"orders"}), 1, t0);
    drain(back);
    event_stream::catch_up(ring, back);
    const std::string caught = drain(back, 4096);
    like(caught, "id: 5\nevent: gap\ndata: {\"from\":2,\"to\":5}",
         "ids 2-5 are no longer held: a gap first");
    is(count(caught, "event: run"), std::size_t(4), "then the orders events still held (7-13)");
    ok(caught.find("\"id\":6,") == std::string::npos, "not the people events");
    is(back.last_id(), std::uint64_t(13), "caught up with the newest");

    // A closed stream is forgotten, and its place given back once.
    c->closed();
    std::vector<std::string> released;
    streams.sweep([&released](const std::string &subject) { released.push_back(subject); });
    is(streams.size(), std::size_t(2), "the closed stream is forgotten");
    ok(released.size() == 1 && released[0] == "key:2", "its subject's place is given back");
    streams.sweep([&released](const std::string &subject) { released.push_back(subject); });
    is(released.size(), std::size_t(1), "once");

    // A server stopping: every stream ends with what it has.
    streams.finish_all();
    like(drain(*a), "event: gap", "a stopping server's streams send what they have");
    is(a->read(one, 1), event_stream::Stream::ended, "and end");
    whose_calls(t0);
    return tap::done();
}
