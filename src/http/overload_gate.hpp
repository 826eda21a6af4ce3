// Whether to serve a request that has waited `sojourn` for its worker (from its last byte's
// arrival to the worker reading it), or refuse it 503 overloaded at once. Plain C++; the waits
// and the clock come from the caller (http_server.cpp).
//
// Why by the wait and not by a queue length: a worker serves one call at a time, and what a
// queue of 50 requests costs in time depends on the calls (50 lookups are 3 ms, 50 reports are
// minutes). What a caller feels is the wait, and a queue that is only a burst drains by itself
// while a standing one does not. So the rule is CoDel's (Nichols and Jacobson, "Controlling
// Queue Delay", 2012), for requests rather than packets: the worker is overloaded once every
// request it has read for a whole interval had waited at least the target (a burst, or the
// requests behind one long query, drain within it); while overloaded, a request that waited
// the target or longer is refused, and the requests served have waited less; the overload ends
// after an interval with nothing refused. A worker that read nothing for half an interval (it ran
// one long call) starts the count again: the queue built behind one call is a burst, however long
// its waits. (So a worker whose every call is longer than that never sheds: shedding is for
// queues of short calls.) Refusing is cheap (the request's headers are not even
// read), so under a steady overload the queue stays short, the calls served keep their latency,
// and the rest are answered in microseconds instead of timing out. Outside an overload every
// request is served, however long it waited (behind a long query, say). As in "Fail at Scale"
// (Maurer, 2015), nothing is dropped silently: each refusal is an answer.
#pragma once

#include <chrono>

class OverloadGate {
  public:
    using Clock = std::chrono::steady_clock;
    using micros = std::chrono::microseconds;

    // querygate.overload_target and querygate.overload_interval; a target of zero or less
    // turns the gate off (every request is served).
    void set(micros target, micros interval);
    micros target() const { return target_; }

    // Whether to serve a request that has waited `sojourn`, seen at `now`.
    bool admit(Clock::time_point now, micros sojourn);
    // Whether a request known to have waited at most `at_most` needs its wait measured; if
    // not, admit() is given `at_most` (it is under the target, so it counts as short whatever
    // it was).
    bool worth_measuring(micros at_most) const { return target_.count() > 0 && at_most >= target_; }
    bool overloaded() const { return overloaded_; }

  private:
    using time_point = Clock::time_point;
    micros target_{0};
    micros interval_{100000};
    time_point above_since_ = time_point::max(); // waits at or over the target since then
    time_point last_refusal_{};
    time_point last_seen_{}; // the previous request
    bool overloaded_ = false;
};
