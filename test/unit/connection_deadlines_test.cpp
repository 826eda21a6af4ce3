// Unit tests of the request deadlines (src/http/connection_deadlines.hpp): due in the order set,
// an answered connection has the idle and the request timeout for its next request and its
// request line starts the request timeout, the earliest of both lists comes first, a request
// that has arrived is due no more, nothing is due with no timeout, the wait until the first, and
// closing every waiting connection when a worker stops.
#include "http/connection_deadlines.hpp"

#include "tap.hpp"

#include <string>

namespace {

using Clock = ConnectionDeadlines::Clock;
using std::chrono::milliseconds;

// The descriptors expired at t, in order: "1,2".
std::string expire_at(ConnectionDeadlines &d, Clock::time_point t)
{
    std::string fds;
    d.expire(t, [&fds](int fd) { fds += (fds.empty() ? "" : ",") + std::to_string(fd); });
    return fds;
}

// The descriptors of every connection still listed, closed as a stopping worker does.
std::string expire_everything(ConnectionDeadlines &d)
{
    std::string fds;
    d.expire_all([&fds](int fd) { fds += (fds.empty() ? "" : ",") + std::to_string(fd); });
    return fds;
}

// Connections with the descriptors first, first + 1, ...
struct Connections {
    ConnectionDeadlines::Entry a, b, c;
    explicit Connections(int first = 1)
    {
        a.fd = first;
        b.fd = first + 1;
        c.fd = first + 2;
    }
};

void test_order()
{
    ConnectionDeadlines d;
    d.set_timeouts(milliseconds(1000), milliseconds(5000));
    const Clock::time_point t0{};
    Connections n;
    auto &a = n.a, &b = n.b, &c = n.c;
    d.opened(a, t0);
    d.opened(b, t0 + milliseconds(10));
    d.opened(c, t0 + milliseconds(20));
    tap::is(d.ms_until_next(t0), 1000L, "the first deadline is the request timeout away");
    tap::ok(expire_at(d, t0 + milliseconds(999)).empty(), "nothing is due before it");
    tap::is(expire_at(d, t0 + milliseconds(1010)), std::string("1,2"),
            "then the first two, in order");
    tap::ok(!a.listed() && !b.listed() && c.listed(), "taken off the list");
    tap::is(d.ms_until_next(t0 + milliseconds(1010)), 10L, "the third is 10 ms away");
    d.done(c);
    tap::ok(d.empty(), "a request that has arrived is due no more");
    tap::is(d.ms_until_next(t0), -1L, "no deadline: no wait");
}

// After an answer the next request has the idle timeout to begin and the request timeout
// more; its request line starts the request timeout.
void test_keep_alive()
{
    ConnectionDeadlines d;
    d.set_timeouts(milliseconds(100), milliseconds(1000));
    const Clock::time_point t0{};
    Connections n;
    auto &a = n.a, &b = n.b;
    d.opened(a, t0);
    d.done(a); // its request arrived
    d.answered(a, t0 + milliseconds(10));
    d.opened(b, t0 + milliseconds(20));
    tap::is(expire_at(d, t0 + milliseconds(500)), std::string("2"),
            "an answered connection outlives the request timeout");
    tap::is(d.ms_until_next(t0 + milliseconds(500)), 610L,
            "it is due the idle and the request timeout after its answer");
    tap::is(expire_at(d, t0 + milliseconds(1110)), std::string("1"), "and then closed");

    d.answered(a, t0);
    d.request_line(a, t0 + milliseconds(300));
    tap::is(d.ms_until_next(t0 + milliseconds(300)), 100L,
            "a request line arriving starts the request timeout");
    tap::is(expire_at(d, t0 + milliseconds(400)), std::string("1"),
            "which a trickle cannot extend");

    d.answered(a, t0);
    d.request_line(a, t0 + milliseconds(1050)); // its line trickled in past the idle timeout
    tap::is(d.ms_until_next(t0 + milliseconds(1050)), 50L,
            "a request line later than the idle timeout keeps the bound from the answer");
    d.done(a);

    d.opened(b, t0);
    d.request_line(b, t0 + milliseconds(50));
    tap::is(d.ms_until_next(t0 + milliseconds(50)), 50L,
            "a first request is due from the opening, not from its request line");
    d.opened(b, t0);
    d.opened(b, t0 + milliseconds(10)); // set twice: listed once
    tap::is(expire_at(d, t0 + milliseconds(5000)), std::string("2"),
            "a deadline set again is listed once");
}

// The two lists together: the earliest of both is due first.
void test_both_lists()
{
    ConnectionDeadlines d;
    d.set_timeouts(milliseconds(100), milliseconds(50));
    const Clock::time_point t0{};
    Connections n;
    auto &a = n.a, &b = n.b, &c = n.c;
    d.answered(a, t0);                    // due at 150
    d.opened(b, t0 + milliseconds(20));   // due at 120
    d.answered(c, t0 + milliseconds(40)); // due at 190
    tap::is(expire_at(d, t0 + milliseconds(1000)), std::string("2,1,3"),
            "deadlines of both kinds are taken in the order they are due");
}

void test_no_timeout()
{
    ConnectionDeadlines d;
    d.set_timeouts(milliseconds(0), milliseconds(1000));
    const Clock::time_point t0{};
    Connections n(7);
    auto &a = n.a, &b = n.b;
    d.opened(a, t0);
    d.answered(b, t0);
    d.request_line(b, t0);
    tap::is(d.ms_until_next(t0), -1L, "with no request timeout nothing is due");
    tap::ok(expire_at(d, t0 + std::chrono::hours(24 * 365)).empty(), "ever");
    tap::is(expire_everything(d), std::string("7,8"), "but a worker that stops closes them all");
    d.done(a);
    tap::ok(d.empty(), "and clearing what is no longer listed is harmless");
}

void test_close_all()
{
    ConnectionDeadlines d;
    d.set_timeouts(milliseconds(100), milliseconds(1000));
    const Clock::time_point t0{};
    Connections n;
    auto &a = n.a, &b = n.b, &c = n.c;
    d.answered(a, t0);
    d.opened(b, t0);
    d.opened(c, t0);
    d.done(c); // its request arrived: it is being answered
    tap::is(expire_everything(d), std::string("2,1"),
            "closing all takes every waiting connection, not one being answered");
    tap::ok(d.empty(), "and leaves none listed");
}

} // namespace

int main()
{
    test_order();
    test_keep_alive();
    test_both_lists();
    test_no_timeout();
    test_close_all();
    return tap::done();
}
