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
    if (!long_wait)
        above_since_ = time_point::max();
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
