// Rate limiting of caller-caused log messages: see log_throttle.hpp.
#include "common/log_throttle.hpp"

bool LogThrottle::note(const std::string &message, Clock::time_point now)
{
    if (now >= window_end_ && left_out_ == 0) {
        window_end_ = now + window;
        return true;
    }
    left_out_++;
    last_ = message;
    return false;
}

bool LogThrottle::summary_due(Clock::time_point now, std::string &summary)
{
    if (left_out_ == 0 || now < window_end_)
        return false;
    summary = std::to_string(left_out_) + (left_out_ == 1 ? " more message" : " more messages") +
              " in the last " + std::to_string(window.count()) +
              " s (at the debug level), the last: " + last_;
    left_out_ = 0;
    last_.clear();
    // The summary opens a window of its own: under steady hostile traffic, one line a window.
    window_end_ = now + window;
    return true;
}

long LogThrottle::ms_until_summary(Clock::time_point now) const
{
    if (left_out_ == 0)
        return -1;
    if (now >= window_end_)
        return 0;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(window_end_ - now);
    return static_cast<long>((us.count() + 999) / 1000);
}
