// An answer sent from a file (an export: call/export_file.hpp), read a block at a time as the
// connection takes it, and ended when its reader falls below a pace: querygate.export_min_rate
// over each querygate.export_rate_window. An export holds one of the server's few export places
// (shmem/export_slots.hpp) until it is sent, so a reader taking 40 kB a second would hold one for
// as long as it likes; below the pace its connection is closed and the place given back. A reader
// that takes nothing at all is closed by the idle timeout (querygate.idle_timeout), since nothing
// is sent. Plain C++.
#pragma once

#include <chrono>
#include <cstdint>

struct MHD_Response;

namespace file_answer {

// The pace a reader must keep: over each window after the first, at least `bytes_per_second`
// (0: any pace).
class Pace {
  public:
    using Clock = std::chrono::steady_clock;
    Pace(std::uint64_t bytes_per_second, Clock::duration window, Clock::time_point start);
    // The reader has taken `sent` bytes by `now`: false when, over a window that ended since the
    // last look, it took fewer than the pace asks.
    bool keeps_up(std::uint64_t sent, Clock::time_point now);

  private:
    std::uint64_t bytes_per_second_;
    Clock::duration window_;
    Clock::time_point window_start_;
    std::uint64_t window_sent_ = 0;
};

// A response of `size` bytes read from `fd`, which it owns (closed when the response is done, or
// here when none can be made: null), at the pace the settings ask.
MHD_Response *make(int fd, std::uint64_t size);

} // namespace file_answer
