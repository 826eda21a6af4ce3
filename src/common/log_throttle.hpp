// How often messages a caller can cause reach the server log. Pure C++: the caller logs, this
// decides at which level. libmicrohttpd says something for every malformed request, hung-up
// caller or refused connection; logged as they come, hostile traffic would fill the server's log
// (the hostile generator made one LOG line per request). So: the first message of a window goes
// to the log, the rest of the window's only at the debug level, and when the window ends one line
// says how many there were and what the last one said.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

class LogThrottle {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::seconds window{60};

    // A message arrived: true when it goes to the log, false when to the debug level only.
    bool note(const std::string &message, Clock::time_point now);

    // The window's summary, when it has ended with messages left out: fills `summary` and
    // returns true once.
    bool summary_due(Clock::time_point now, std::string &summary);
    // Milliseconds until summary_due has something (rounded up); -1 when nothing is pending.
    long ms_until_summary(Clock::time_point now) const;

  private:
    Clock::time_point window_end_{};
    std::uint64_t left_out_ = 0; // messages of the window that went to the debug level only
    std::string last_;           // the last of them
};
