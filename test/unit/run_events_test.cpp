// Run events (src/common/run_events.hpp): the ring's order, its gaps, a reader racing a writer,
// and the stream's text.
#include "common/run_events.hpp"
#include "http/json_body.hpp"
#include "tap.hpp"

#include <cstring>
#include <string>
#include <thread>
#include <vector>

using tap::is;
using tap::ok;

namespace {

run_events::Event event(const char *query, int status)
{
    run_events::Event e;
    std::strncpy(e.query, query, sizeof(e.query) - 1);
    e.status = status;
    e.rows = 1;
    return e;
}

} // namespace

int main()
{
    std::vector<unsigned char> memory(run_events::size_of(8));
    run_events::Ring &ring = *run_events::init(memory.data(), 8);
    is(ring.capacity, 8u, "a ring of 8");
    run_events::Batch batch;
    run_events::read_after(ring, 0, 100, batch);
    ok(batch.events.empty() && batch.missed_from == 0, "empty: nothing, nothing missed");

    for (int i = 1; i <= 5; i++)
        is(run_events::put(ring, event("q", 200)), static_cast<std::uint64_t>(i), "ids from 1");
    run_events::read_after(ring, 2, 100, batch);
    ok(batch.events.size() == 3 && batch.events[0].id == 3 && batch.events[2].id == 5,
       "after 2: 3, 4 and 5");
    run_events::read_after(ring, 0, 2, batch);
    ok(batch.events.size() == 2 && batch.events[1].id == 2, "at most max");
    run_events::read_after(ring, 99, 100, batch);
    ok(batch.events.empty() && batch.missed_from == 0, "an id from the future: from now on");

    for (int i = 6; i <= 20; i++)
        run_events::put(ring, event("q", 200));
    run_events::read_after(ring, 3, 100, batch);
    is(batch.missed_from, std::uint64_t{4}, "overwritten: the gap starts after the last seen");
    is(batch.missed_to, std::uint64_t{12}, "and ends where the ring begins");
    ok(batch.events.size() == 8 && batch.events.front().id == 13 && batch.events.back().id == 20,
       "then the 8 it holds");

    // A reader racing a writer gets ids in order, each event whole, and says what it missed.
    std::vector<unsigned char> big(run_events::size_of(64));
    run_events::Ring &shared = *run_events::init(big.data(), 64);
    const std::uint64_t total = 200000;
    std::thread writer([&] {
        for (std::uint64_t i = 1; i <= total; i++) {
            run_events::Event e = event("racing", 200);
            e.rows = i; // the id it will get
            run_events::put(shared, e);
        }
    });
    std::uint64_t seen = 0, delivered = 0, missed = 0;
    bool in_order = true, whole = true;
    while (seen < total) {
        run_events::read_after(shared, seen, 16, batch);
        if (batch.missed_from != 0) {
            in_order =
                in_order && batch.missed_from == seen + 1 && batch.missed_to >= batch.missed_from;
            missed += batch.missed_to - batch.missed_from + 1;
            seen = batch.missed_to;
        }
        for (const auto &e : batch.events) {
            in_order = in_order && e.id == seen + 1;
            whole = whole && e.rows == e.id && std::strcmp(e.query, "racing") == 0;
            seen = e.id;
            delivered++;
        }
    }
    writer.join();
    ok(in_order, "racing: every id once, in order, as an event or in a gap");
    ok(whole, "racing: no event torn");
    is(delivered + missed, total, "racing: delivered and missed add up");

    std::string text;
    run_events::append_retry(text, 3000);
    run_events::Event e = event("account", 403);
    e.id = 42;
    std::strncpy(e.code, "table_not_allowed", sizeof(e.code) - 1);
    std::strncpy(e.request_id, "a\"b\nc\xc3", sizeof(e.request_id) - 1);
    run_events::append_event(text, e);
    run_events::append_gap(text, 7, 41);
    run_events::append_keepalive(text);
    ok(text.compare(0, 13, "retry: 3000\n\n") == 0, "retry first");
    const std::size_t data = text.find("data: ");
    const std::string line = text.substr(data + 6, text.find('\n', data) - data - 6);
    json_body::Value v;
    std::string error;
    ok(json_body::parse(line, v, error), "an event's data is one line of JSON, whatever its id",
       error);
    ok(text.find("id: 42\nevent: run\n") != std::string::npos, "with its id and type");
    ok(text.find("id: 41\nevent: gap\ndata: {\"from\":7,\"to\":41}\n\n") != std::string::npos,
       "a gap says what was lost");
    ok(text.size() >= 14 && text.compare(text.size() - 14, 14, ": keep-alive\n\n") == 0,
       "a keep-alive comment");

    std::uint64_t id = 0;
    ok(run_events::parse_last_event_id("123", id) && id == 123, "Last-Event-ID");
    ok(!run_events::parse_last_event_id("12a", id) && !run_events::parse_last_event_id("", id) &&
           !run_events::parse_last_event_id("99999999999999999999", id),
       "not a whole number of 19 digits at most: none");
    return tap::done();
}
