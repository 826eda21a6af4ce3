// How long the run history keeps its records (querygate.history_retention). querygate.history is
// partitioned by the time of the calls, and old records go a partition at a time: a DROP TABLE,
// with no row deleted, no index to keep and nothing left for VACUUM, so that what a record costs
// the writer is its insert alone. A partition spans a day; an hour when the retention is under a
// day, a minute when it is under an hour; on UTC boundaries. A record is kept at least the
// retention and at most one span longer. The writer (worker/history_writer.cpp) makes a partition
// when a record finds none, and the next one ahead while the current one is in use. Plain C++:
// times are microseconds since 2000-01-01 00:00 UTC, as PostgreSQL's timestamptz counts them.
#pragma once

#include <cstdint>
#include <limits>

namespace history_retention {

// A free gap's bound where there is no partition below or above it.
constexpr std::int64_t unbounded_below = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t unbounded_above = std::numeric_limits<std::int64_t>::max();

// A partition's time range: [lower, upper).
struct Span {
    std::int64_t lower;
    std::int64_t upper;
};

// How long a new partition spans under the retention, in microseconds (0: kept forever, a day).
std::int64_t span_us(std::int64_t retention_s);

// The partition to make for a record at `at` that no partition holds: its span's range on the
// boundaries of that span, cut to the free gap [gap_lower, gap_upper) the record is in (the
// bounds of the partitions either side of it).
Span span_for(std::int64_t at, std::int64_t retention_s, std::int64_t gap_lower,
              std::int64_t gap_upper);

// The partition's name, from its lower bound: history_YYYYMMDD, then _HH, _HHMM or _HHMMSS when
// it starts within a day, an hour or a minute. Plain data (the writer forms it inside a
// transaction, where nothing may allocate with new or throw).
struct Name {
    char text[64]; // a relation name: 63 bytes at most
};
Name name_for(std::int64_t lower);

// Whether a partition that holds records from before `upper` only has outlived the retention at
// `now` (never when the retention is 0).
bool expired(std::int64_t upper, std::int64_t now, std::int64_t retention_s);

} // namespace history_retention
