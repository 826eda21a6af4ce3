// The arithmetic of rate limits and quotas: see rate_limits.hpp.
#include "rules/rate_limits.hpp"

#include "common/civil_date.hpp"

#include <algorithm>
#include <cmath>

namespace rate_limits {

namespace {

constexpr std::int64_t us_per_second = 1000000;
constexpr std::int64_t us_per_day = 86400 * us_per_second;

} // namespace

Limits merge(const Limits &own, const Limits &inherited)
{
    Limits out;
    const Limits &rate = own.rate_per_second > 0 ? own : inherited;
    out.rate_per_second = rate.rate_per_second;
    out.burst = own.burst > 0 ? own.burst : rate.burst;
    out.max_in_flight = own.max_in_flight > 0 ? own.max_in_flight : inherited.max_in_flight;
    const Limits &quota = own.quota > 0 ? own : inherited;
    out.quota = quota.quota;
    out.quota_period = quota.quota_period;
    return out;
}

long capacity(const Limits &limits)
{
    if (limits.burst > 0)
        return limits.burst;
    const double up = std::ceil(limits.rate_per_second);
    return up < 1 ? 1 : up > 1e9 ? 1000000000L : static_cast<long>(up);
}

namespace {

// The bucket refilled to now (a new bucket is full; a clock that went back refills nothing).
double refilled(const Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us)
{
    if (bucket.refilled_us == 0)
        return static_cast<double>(capacity);
    const std::int64_t elapsed = std::max<std::int64_t>(0, now_us - bucket.refilled_us);
    return std::min(static_cast<double>(capacity),
                    bucket.tokens + rate_per_second * static_cast<double>(elapsed) / us_per_second);
}

} // namespace

bool take(Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us,
          std::int64_t &wait_us, long &remaining)
{
    double tokens = refilled(bucket, rate_per_second, capacity, now_us);
    // An administrator who lowered the burst shrinks a fuller bucket at once.
    tokens = std::min(tokens, static_cast<double>(capacity));
    // Workers read the clock before they take the entry's lock, so a call can come with a time
    // earlier than the last one's: the bucket's time never goes back, or the time between would
    // be refilled twice.
    bucket.refilled_us = std::max(bucket.refilled_us, now_us);
    wait_us = 0;
    if (tokens >= 1.0) {
        bucket.tokens = tokens - 1.0;
        remaining = static_cast<long>(bucket.tokens);
        return true;
    }
    bucket.tokens = tokens;
    remaining = 0;
    wait_us = rate_per_second > 0
                  ? static_cast<std::int64_t>(std::ceil((1.0 - tokens) / rate_per_second *
                                                        static_cast<double>(us_per_second)))
                  : us_per_second;
    return false;
}

void owe(Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us, double calls)
{
    const double tokens = std::min(refilled(bucket, rate_per_second, capacity, now_us),
                                   static_cast<double>(capacity));
    bucket.refilled_us = std::max(bucket.refilled_us, now_us);
    bucket.tokens = tokens - std::max(0.0, calls);
}

bool full(const Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us)
{
    return refilled(bucket, rate_per_second, capacity, now_us) >= static_cast<double>(capacity);
}

std::int64_t period_start(Period period, std::int64_t unix_us)
{
    const std::int64_t day = civil_date::floor_div(unix_us, us_per_day);
    if (period == Period::day)
        return day * us_per_day;
    const civil_date::Date date = civil_date::civil_from_days(day);
    return civil_date::days_from_civil(date.year, date.month, 1) * us_per_day;
}

std::int64_t period_end(Period period, std::int64_t unix_us)
{
    const std::int64_t start = period_start(period, unix_us);
    if (period == Period::day)
        return start + us_per_day;
    const civil_date::Date date =
        civil_date::civil_from_days(civil_date::floor_div(start, us_per_day));
    const bool december = date.month == 12;
    return civil_date::days_from_civil(december ? date.year + 1 : date.year,
                                       december ? 1 : date.month + 1, 1) *
           us_per_day;
}

long long seconds_up(std::int64_t us)
{
    if (us <= 0)
        return 0;
    return (us + us_per_second - 1) / us_per_second;
}

long long rate_window_seconds(const Limits &limits)
{
    if (limits.rate_per_second <= 0)
        return 0;
    return seconds_up(static_cast<std::int64_t>(static_cast<double>(capacity(limits)) /
                                                limits.rate_per_second * us_per_second));
}

long long quota_window_seconds(Period period, std::int64_t unix_us)
{
    return seconds_up(period_end(period, unix_us) - period_start(period, unix_us));
}

} // namespace rate_limits
