// The rate-limit fields: see limit_fields.hpp.
#include "http/limit_fields.hpp"

#include <algorithm>

namespace limit_fields {

namespace {

const char *name_of(LimitReport::Policy policy)
{
    switch (policy) {
    case LimitReport::Policy::daily:
        return "\"daily\"";
    case LimitReport::Policy::monthly:
        return "\"monthly\"";
    case LimitReport::Policy::rate:
        break;
    }
    return "\"rate\"";
}

// An sf-integer parameter: at most 15 digits (RFC 9651 3.3.1), and none of these is negative.
void parameter(std::string &out, char key, long long value)
{
    out += ';';
    out += key;
    out += '=';
    out += std::to_string(std::clamp(value, 0LL, 999999999999999LL));
}

} // namespace

std::string ratelimit(const LimitReport &report)
{
    std::string out = name_of(report.policy);
    parameter(out, 'r', report.remaining);
    parameter(out, 't', report.reset_seconds);
    return out;
}

std::string ratelimit_policy(const LimitReport &report)
{
    std::string out = name_of(report.policy);
    parameter(out, 'q', report.limit);
    parameter(out, 'w', report.window_seconds);
    return out;
}

std::string policies(const rate_limits::Limits &limits, std::int64_t unix_us)
{
    std::string out;
    if (limits.rate_per_second > 0) {
        LimitReport rate;
        rate.policy = LimitReport::Policy::rate;
        rate.limit = rate_limits::capacity(limits);
        rate.window_seconds = rate_limits::rate_window_seconds(limits);
        out = ratelimit_policy(rate);
    }
    if (limits.quota > 0) {
        LimitReport quota;
        quota.policy = limits.quota_period == rate_limits::Period::day
                           ? LimitReport::Policy::daily
                           : LimitReport::Policy::monthly;
        quota.limit = limits.quota;
        quota.window_seconds = rate_limits::quota_window_seconds(limits.quota_period, unix_us);
        out += (out.empty() ? "" : ", ") + ratelimit_policy(quota);
    }
    return out;
}

} // namespace limit_fields
