// Tests of src/http/accept_gate.cpp, on a clock the test sets: the least loaded worker takes a
// pending connection at once, a busier one leaves it for the grace (1 ms) and then takes it, and
// running out of descriptors stops watching the socket for 100 ms.
#include "http/accept_gate.hpp"
#include "tap.hpp"

#include <chrono>

namespace {

using namespace std::chrono_literals;
using tap::is;
using tap::ok;
using Time = AcceptGate::Clock::time_point;

// Far from the clock's epoch, as steady_clock's values are.
const Time t0 = Time() + 1000h;

void constants()
{
    ok(AcceptGate::grace == 1000us, "the grace is 1 ms");
    ok(AcceptGate::shortage_pause == 100ms, "the shortage pause is 100 ms");
}

void least_loaded()
{
    AcceptGate g;
    ok(g.watching(t0), "a new gate watches");
    is(g.ms_until_watching(t0), 0L, "a new gate: 0 ms until watching");
    ok(g.should_accept(0, 0, t0), "no connections anywhere: take it");
    ok(g.should_accept(3, 3, t0), "as few as the fewest: take it");
    ok(g.should_accept(2, 5, t0), "fewer than the fewest reported: take it");
    ok(g.watching(t0), "taking leaves the gate watching");
    ok(g.should_accept(4000000000u, 4000000000u, t0), "huge equal counts: take it");
}

void busier()
{
    AcceptGate g;
    ok(!g.should_accept(2, 1, t0), "busier: leave it at first");
    ok(!g.watching(t0), "busier: stops watching");
    is(g.ms_until_watching(t0), 1L, "busier: 1 ms until watching");
    ok(!g.watching(t0 + 999us), "busier: not watching 999 us later");
    is(g.ms_until_watching(t0 + 999us), 1L, "busier: 1 us left rounds up to 1 ms");
    ok(g.watching(t0 + 1000us), "busier: watching again when the grace ends");
    is(g.ms_until_watching(t0 + 1000us), 0L, "busier: 0 ms when the grace ends");
    ok(!g.should_accept(2, 1, t0 + 500us), "busier: still left within the grace");
    ok(!g.watching(t0 + 999us), "busier: a second look does not move the end of the grace");
    ok(g.watching(t0 + 1000us), "busier: the grace still ends 1 ms after the first look");
    ok(g.should_accept(2, 1, t0 + 1000us), "busier: taken once the grace has passed");
    ok(g.watching(t0 + 1000us), "busier: watching after taking it");
    ok(!g.should_accept(2, 1, t0 + 1100us), "busier: the next connection gets its own grace");
    is(g.ms_until_watching(t0 + 1100us), 1L, "busier: 1 ms until watching for the next one");
    ok(g.should_accept(2, 1, t0 + 2100us), "busier: the next one taken after its grace");

    AcceptGate h;
    ok(!h.should_accept(5, 0, t0), "far busier: left at first");
    ok(h.should_accept(5, 0, t0 + 1500us), "far busier: taken after the grace all the same");

    AcceptGate edge;
    ok(!edge.should_accept(2, 1, t0), "grace edge: left");
    ok(!edge.should_accept(2, 1, t0 + 999us), "grace edge: left at 999 us");
    ok(edge.should_accept(2, 1, t0 + 2000us), "grace edge: taken at exactly twice the grace");
}

void stale_deferral()
{
    // A deferral older than twice the grace belongs to a connection someone else took long ago.
    AcceptGate g;
    ok(!g.should_accept(2, 1, t0), "stale: left");
    ok(!g.should_accept(2, 1, t0 + 2001us), "stale: a wakeup after twice the grace is a new one");
    ok(!g.watching(t0 + 2500us), "stale: the new one gets its own grace");
    is(g.ms_until_watching(t0 + 2001us), 1L, "stale: 1 ms until watching");
    ok(g.should_accept(2, 1, t0 + 3001us), "stale: the new one taken after its grace");

    AcceptGate h;
    ok(!h.should_accept(2, 1, t0), "an hour later: left");
    ok(!h.should_accept(2, 1, t0 + 1h), "an hour later: a new grace, not an old one");
}

void settled()
{
    // Becoming the least loaded ends a deferral: the next busier moment starts a fresh grace.
    AcceptGate g;
    ok(!g.should_accept(3, 1, t0), "settled: left while busier");
    ok(g.should_accept(1, 1, t0 + 200us), "settled: taken once as few as the fewest");
    ok(!g.should_accept(3, 1, t0 + 1200us), "settled: busier again, a fresh grace");
    ok(g.should_accept(3, 1, t0 + 2200us), "settled: taken after the fresh grace");
}

void shortage()
{
    AcceptGate g;
    g.out_of_resources(t0);
    ok(!g.watching(t0), "shortage: stops watching");
    is(g.ms_until_watching(t0), 100L, "shortage: 100 ms until watching");
    is(g.ms_until_watching(t0 + 1ms), 99L, "shortage: 99 ms after 1 ms");
    is(g.ms_until_watching(t0 + 99999us), 1L, "shortage: 1 us left rounds up to 1 ms");
    ok(!g.watching(t0 + 99999us), "shortage: not watching 1 us before the end");
    ok(g.watching(t0 + 100ms), "shortage: watching again after 100 ms");
    is(g.ms_until_watching(t0 + 100ms), 0L, "shortage: 0 ms at the end");
    is(g.ms_until_watching(t0 + 1h), 0L, "shortage: 0 ms long after");
    ok(g.should_accept(1, 1, t0 + 100ms), "shortage: the least loaded takes after the pause");

    // A shortage ends a deferral: after it a busier worker leaves the next connection a grace.
    AcceptGate h;
    ok(!h.should_accept(2, 1, t0), "shortage after a deferral: left");
    h.out_of_resources(t0 + 500us);
    is(h.ms_until_watching(t0 + 500us), 100L,
       "shortage after a deferral: the pause, not the grace");
    ok(!h.watching(t0 + 50ms), "shortage after a deferral: not watching 50 ms later");
    ok(!h.should_accept(2, 1, t0 + 100500us), "shortage after a deferral: a new grace after it");
    ok(h.should_accept(2, 1, t0 + 101500us), "shortage after a deferral: taken after the grace");

    AcceptGate k;
    k.out_of_resources(t0);
    k.out_of_resources(t0 + 50ms);
    ok(!k.watching(t0 + 120ms), "a second shortage: the pause counts from it");
    ok(k.watching(t0 + 150ms), "a second shortage: watching 100 ms after it");
}

void rounding()
{
    AcceptGate g;
    g.out_of_resources(t0);
    is(g.ms_until_watching(t0 + 98001us), 2L, "rounding: 1999 us left is 2 ms");
    is(g.ms_until_watching(t0 + 98999us), 2L, "rounding: 1001 us left is 2 ms");
    is(g.ms_until_watching(t0 + 99000us), 1L, "rounding: 1000 us left is 1 ms");
    ok(g.watching(t0 + 100ms + 1ns), "rounding: watching 1 ns after the end");
    is(g.ms_until_watching(t0 + 100ms + 1ns), 0L, "rounding: 0 ms 1 ns after the end");
}

} // namespace

int main()
{
    constants();
    least_loaded();
    busier();
    stale_deferral();
    settled();
    shortage();
    rounding();
    return tap::done();
}
