// The run history's partitions by time: see history_retention.hpp.
#include "rules/history_retention.hpp"

#include "common/civil_date.hpp"

#include <algorithm>
#include <cstdio>

namespace history_retention {

namespace {

constexpr std::int64_t us_per_second = 1000000;
constexpr std::int64_t us_per_minute = 60 * us_per_second;
constexpr std::int64_t us_per_hour = 60 * us_per_minute;
constexpr std::int64_t us_per_day = 24 * us_per_hour;
constexpr std::int64_t days_1970_to_2000 = 10957;

} // namespace

std::int64_t span_us(std::int64_t retention_s)
{
    if (retention_s <= 0 || retention_s >= us_per_day / us_per_second)
        return us_per_day;
    if (retention_s >= us_per_hour / us_per_second)
        return us_per_hour;
    return us_per_minute;
}

Span span_for(std::int64_t at, std::int64_t retention_s, std::int64_t gap_lower,
              std::int64_t gap_upper)
{
    const std::int64_t span = span_us(retention_s);
    const std::int64_t lower = civil_date::floor_div(at, span) * span;
    // The span's end, unless it would pass the largest time there is.
    const std::int64_t upper = lower > unbounded_above - span ? unbounded_above : lower + span;
    return Span{std::max(lower, gap_lower), std::min(upper, gap_upper)};
}

Name name_for(std::int64_t lower)
{
    const std::int64_t day = civil_date::floor_div(lower, us_per_day);
    const std::int64_t within = lower - day * us_per_day;
    const civil_date::Date date = civil_date::civil_from_days(day + days_1970_to_2000);
    // Within a day: each field is small.
    const unsigned hour = static_cast<unsigned>(within / us_per_hour),
                   minute = static_cast<unsigned>(within % us_per_hour / us_per_minute),
                   second = static_cast<unsigned>(within % us_per_minute / us_per_second);
    Name name;
    if (within == 0)
        std::snprintf(name.text, sizeof(name.text), "history_%04lld%02u%02u",
                      static_cast<long long>(date.year), date.month, date.day);
    else if (within % us_per_hour == 0)
        std::snprintf(name.text, sizeof(name.text), "history_%04lld%02u%02u_%02u",
                      static_cast<long long>(date.year), date.month, date.day, hour);
    else if (within % us_per_minute == 0)
        std::snprintf(name.text, sizeof(name.text), "history_%04lld%02u%02u_%02u%02u",
                      static_cast<long long>(date.year), date.month, date.day, hour, minute);
    else
        std::snprintf(name.text, sizeof(name.text), "history_%04lld%02u%02u_%02u%02u%02u",
                      static_cast<long long>(date.year), date.month, date.day, hour, minute,
                      second);
    return name;
}

bool expired(std::int64_t upper, std::int64_t now, std::int64_t retention_s)
{
    if (retention_s <= 0)
        return false;
    const std::int64_t retention =
        std::min<std::int64_t>(retention_s, unbounded_above / us_per_second) * us_per_second;
    return now > unbounded_below + retention && upper <= now - retention;
}

} // namespace history_retention
