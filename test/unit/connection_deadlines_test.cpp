// Unit tests of the request deadlines (src/http/connection_deadlines.hpp): due in the order set,
// a deadline that an answer sets again goes to the back, a request that has arrived is due no
// more, nothing is set with no timeout, and the wait until the first one.
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

void test_order()
{
    ConnectionDeadlines d;
    d.set_timeout(milliseconds(1000));
    const Clock::time_point t0{};
    ConnectionDeadlines::Entry a, b, c;
    a.fd = 1;
    b.fd = 2;
    c.fd = 3;
    d.waiting(a, t0);
    d.waiting(b, t0 + milliseconds(10));
    d.waiting(c, t0 + milliseconds(20));
    tap::is(d.ms_until_next(t0), 1000L, "the first deadline is the timeout away");
    tap::ok(expire_at(d, t0 + milliseconds(999)).empty(), "nothing is due before it");
    tap::is(expire_at(d, t0 + milliseconds(1010)), std::string("1,2"),
            "then the first two, in order");
    tap::ok(!a.listed && !b.listed && c.listed, "taken off the list");
    tap::is(d.ms_until_next(t0 + milliseconds(1010)), 10L, "the third is 10 ms away");
    d.done(c);
    tap::ok(d.empty(), "a request that has arrived is due no more");
    tap::is(d.ms_until_next(t0), -1L, "no deadline: no wait");
}

void test_again()
{
    ConnectionDeadlines d;
    d.set_timeout(milliseconds(100));
    const Clock::time_point t0{};
    ConnectionDeadlines::Entry a, b;
    a.fd = 1;
    b.fd = 2;
    d.waiting(a, t0);
    d.waiting(b, t0 + milliseconds(50));
    d.done(a);
    d.waiting(a, t0 + milliseconds(60)); // answered, and waiting for its next request
    tap::is(expire_at(d, t0 + milliseconds(150)), std::string("2"),
            "an answer moves a deadline to the back");
    tap::is(expire_at(d, t0 + milliseconds(160)), std::string("1"),
            "due a timeout after the answer");
    d.waiting(b, t0);
    d.waiting(b, t0 + milliseconds(10)); // set twice: listed once
    tap::is(expire_at(d, t0 + milliseconds(1000)), std::string("2"),
            "a deadline set again is listed once");
}

void test_no_timeout()
{
    ConnectionDeadlines d;
    ConnectionDeadlines::Entry a;
    a.fd = 7;
    d.waiting(a, Clock::time_point{});
    tap::ok(!a.listed && d.empty(), "with no timeout nothing is set");
    d.done(a);
    tap::ok(d.empty(), "and clearing what was never set is harmless");
}

} // namespace

int main()
{
    test_order();
    test_again();
    test_no_timeout();
    return tap::done();
}
