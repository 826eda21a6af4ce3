// Admission by waiting time: see overload_gate.hpp.
#include "http/overload_gate.hpp"

#include <algorithm>

void OverloadGate::set(micros target, micros interval)
{
    target_ = target;
    interval_ = std::max(interval, micros(1000));
    if (target_.count() <= 0) {
        overloaded_ = false;
        above_since_ = time_point::max();
    }
}

bool OverloadGate::admit(Clock::time_point now, micros sojourn)
{
    if (target_.count() <= 0)
        return true;
    if (overloaded_ && now - last_refusal_ >= interval_)
        overloaded_ = false; // an interval with nothing refused: the queue is gone
    const bool long_wait = sojourn >= target_;
    const bool after_a_pause = now - last_seen_ > interval_ / 2;
    last_seen_ = now;
    if (!long_wait)
        above_since_ = time_point::max();
    else if (after_a_pause && !overloaded_)
        above_since_ = now; // what waited through one long call is a burst
    else if (above_since_ == time_point::max())
        above_since_ = now;
    else if (!overloaded_ && now - above_since_ >= interval_) {
        overloaded_ = true; // a whole interval of long waits: a standing queue
        last_refusal_ = now;
    }
    if (!overloaded_ || !long_wait)
        return true;
    last_refusal_ = now;
    return false;
}
