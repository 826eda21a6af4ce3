// Unit tests of admission by waiting time (src/http/overload_gate.hpp): long waits are served
// until they have lasted an interval, then a wait at or over the target is refused and a
// shorter one served; a short wait does not end the overload, an interval with nothing refused
// does; a drain that ends within the interval is no overload, nor the queue behind one long call; a
// target of zero serves everything; and when a wait need not be measured.
#include "http/overload_gate.hpp"

#include "tap.hpp"

namespace {

using Clock = OverloadGate::Clock;
using std::chrono::milliseconds;

OverloadGate gate()
{
    OverloadGate g;
    g.set(milliseconds(10), milliseconds(100));
    return g;
}

void test_drain()
{
    OverloadGate g = gate();
    const Clock::time_point t0{};
    // The requests behind a 200 ms query: waits from 200 ms down, drained in 60 ms.
    bool all = true;
    for (int i = 0; i < 60; i++)
        all = g.admit(t0 + milliseconds(i), milliseconds(200 - 3 * i)) && all;
    tap::ok(all, "a queue that drains within the interval is served whole, however long the waits");
    tap::ok(g.admit(t0 + milliseconds(61), milliseconds(1)), "a short wait after it");
    tap::ok(g.admit(t0 + milliseconds(150), milliseconds(50)), "and a long one later");
    tap::ok(!g.overloaded(), "no overload");
}

void test_long_call()
{
    OverloadGate g = gate();
    const Clock::time_point t0{};
    tap::ok(g.admit(t0, milliseconds(30)), "a long wait is served");
    // The worker runs one 150 ms call; what queued behind it drains in 20 ms.
    bool all = true;
    for (int i = 0; i < 20; i++)
        all = g.admit(t0 + milliseconds(150 + i), milliseconds(150 - i)) && all;
    tap::ok(all, "the queue behind one long call is a burst: nothing is refused");
    tap::ok(!g.overloaded(), "no overload");
}

void test_standing_queue()
{
    OverloadGate g = gate();
    const Clock::time_point t0{};
    bool all = true;
    for (int i = 0; i < 10; i++)
        all = g.admit(t0 + milliseconds(i * 10), milliseconds(20 + i)) && all;
    tap::ok(all, "long waits are served while they have lasted less than an interval");
    tap::ok(!g.admit(t0 + milliseconds(100), milliseconds(20)),
            "after a whole interval of them, a 20 ms wait is refused");
    tap::ok(g.overloaded(), "overloaded");
    tap::ok(g.admit(t0 + milliseconds(110), milliseconds(5)), "a wait under the target is served");
    tap::ok(!g.admit(t0 + milliseconds(120), milliseconds(10)), "one at the target is not");
    tap::ok(g.admit(t0 + milliseconds(150), milliseconds(2)), "a short wait is served");
    tap::ok(!g.admit(t0 + milliseconds(160), milliseconds(30)),
            "and does not end the overload: 30 ms is still refused");
    tap::ok(g.admit(t0 + milliseconds(250), milliseconds(3)), "served");
    tap::ok(g.overloaded(), "90 ms after the last refusal: still overloaded");
    tap::ok(g.admit(t0 + milliseconds(260), milliseconds(40)),
            "an interval after the last refusal, 40 ms is served again");
    tap::ok(!g.overloaded(), "the overload is over");
}

void test_off_and_measuring()
{
    OverloadGate g = gate();
    tap::ok(!g.worth_measuring(milliseconds(9)),
            "a request known to have waited under the target need not be measured");
    tap::ok(g.worth_measuring(milliseconds(10)), "one that may have waited the target is");
    OverloadGate off;
    off.set(milliseconds(0), milliseconds(100));
    tap::ok(!off.worth_measuring(milliseconds(1000)), "with the gate off nothing is measured");
    bool all = true;
    for (int i = 0; i < 1000; i++)
        all = off.admit(Clock::time_point{} + milliseconds(i), milliseconds(100000)) && all;
    tap::ok(all, "and everything is served");
}

} // namespace

int main()
{
    test_drain();
    test_long_call();
    test_standing_queue();
    test_off_and_measuring();
    return tap::done();
}
