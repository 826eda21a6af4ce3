// Unit tests of the run history's partitions by time (src/rules/history_retention.hpp): the span
// a retention gives, a new partition's range on UTC boundaries and cut to the gap it is made in,
// its name, and when a partition has outlived the retention.
#include "rules/history_retention.hpp"

#include "tap.hpp"

#include <cstdint>

using namespace history_retention;

namespace {

constexpr std::int64_t second = 1000000;
constexpr std::int64_t minute = 60 * second;
constexpr std::int64_t hour = 60 * minute;
constexpr std::int64_t day = 24 * hour;
// 2026-12-03 00:00 UTC, in days since 2000-01-01 (PostgreSQL's epoch): 26 years with 7 leap
// days, then 336 days to December 3rd of 2026 (not a leap year).
constexpr std::int64_t dec3 = (26 * 365 + 7 + 336) * day;

void test_spans()
{
    tap::is(span_us(7 * 86400), day, "a week's retention: a partition a day");
    tap::is(span_us(86400), day, "a day's retention: a day");
    tap::is(span_us(86399), hour, "under a day: an hour");
    tap::is(span_us(3600), hour, "an hour's retention: an hour");
    tap::is(span_us(3599), minute, "under an hour: a minute");
    tap::is(span_us(1), minute, "a second's retention: still a minute");
    tap::is(span_us(0), day, "kept forever: a day");
}

void test_span_for()
{
    const std::int64_t at = dec3 + 13 * hour + 41 * minute + 7 * second + 123;
    Span s = span_for(at, 7 * 86400, unbounded_below, unbounded_above);
    tap::is(s.lower, dec3, "the day's partition starts at UTC midnight");
    tap::is(s.upper, dec3 + day, "and ends at the next");
    s = span_for(at, 7200, unbounded_below, unbounded_above);
    tap::is(s.lower, dec3 + 13 * hour, "under a day's retention: the hour's");
    tap::is(s.upper, dec3 + 14 * hour, "to the next hour");
    s = span_for(at, 7 * 86400, dec3 + 10 * hour, dec3 + 20 * hour);
    tap::is(s.lower, dec3 + 10 * hour, "cut to the gap it is made in, below");
    tap::is(s.upper, dec3 + 20 * hour, "and above");
    s = span_for(dec3, 7 * 86400, unbounded_below, unbounded_above);
    tap::is(s.lower, dec3, "midnight belongs to its own day");
    s = span_for(-1, 7 * 86400, unbounded_below, unbounded_above);
    tap::is(s.lower, -day, "before 2000, the day before");
    tap::is(s.upper, std::int64_t(0), "up to 2000's first midnight");
}

void test_names()
{
    tap::is(std::string(name_for(dec3).text), std::string("history_20261203"),
            "a day's partition: its date");
    tap::is(std::string(name_for(dec3 + 13 * hour).text), std::string("history_20261203_13"),
            "an hour's: and the hour");
    tap::is(std::string(name_for(dec3 + 13 * hour + 41 * minute).text),
            std::string("history_20261203_1341"), "a minute's: and the minute");
    tap::is(std::string(name_for(dec3 + 13 * hour + 41 * minute + 7 * second + 5).text),
            std::string("history_20261203_134107"), "cut to a gap within a minute: the second");
    tap::is(std::string(name_for(0).text), std::string("history_20000101"), "PostgreSQL's epoch");
    tap::is(std::string(name_for(-day).text), std::string("history_19991231"), "the day before it");
    tap::is(std::string(name_for((59 * 365 + 15) * day).text), std::string("history_20590101"),
            "2059");
    tap::is(std::string(name_for((24 * 365 + 6 + 59) * day).text), std::string("history_20240229"),
            "a leap day");
}

void test_expired()
{
    const std::int64_t now = dec3 + 12 * hour;
    tap::ok(expired(dec3 - 7 * day + 12 * hour, now, 7 * 86400),
            "a partition that ends a retention ago has outlived it");
    tap::ok(!expired(dec3 - 7 * day + 12 * hour + 1, now, 7 * 86400),
            "one that ends a microsecond later has not");
    tap::ok(!expired(dec3 - 100 * day, now, 0), "a retention of 0 keeps everything");
    tap::ok(expired(dec3, now, 3600), "an hour's retention: this morning's has");
    tap::ok(!expired(unbounded_above, now, 60), "a partition with no upper bound never has");
    tap::ok(!expired(dec3, now, 2147483647), "the longest retention keeps a recent one");
}

} // namespace

int main()
{
    test_spans();
    test_span_for();
    test_names();
    test_expired();
    return tap::done();
}
