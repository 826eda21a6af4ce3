// Reports a process's statistics to the cumulative statistics system. PostgreSQL side; used by the
// HTTP workers and the helpers, which both run calls.
//
// The calls' statistics (rows changed, WAL, I/O) reach the cumulative statistics system only when
// reported, which PostgresMain does for ordinary backends when idle; without it autovacuum would
// never learn of querygate's writes. The same rhythm: a report at most once a second while busy
// (PostgreSQL rate-limits it), and a forced one once the wait it asks for has passed while idle.
// Called outside a transaction only.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "pgstat.h"
}

#include <algorithm>
#include <chrono>

class StatsReporter {
  public:
    using Clock = std::chrono::steady_clock;

    // Reports what is due; returns the ms until the next report is due, -1 for none.
    long report(Clock::time_point now)
    {
        if (due_ != Clock::time_point{} && now >= due_) {
            due_ = {};
            (void)pgstat_report_stat(true);
            return -1;
        }
        const long wait = pgstat_report_stat(false);
        if (wait <= 0) {
            due_ = {};
            return -1;
        }
        if (due_ == Clock::time_point{})
            due_ = now + std::chrono::milliseconds(wait);
        return std::max(
            0L, static_cast<long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(due_ - now).count()));
    }

  private:
    Clock::time_point due_{};
};
