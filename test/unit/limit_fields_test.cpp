// Tests of src/http/limit_fields.cpp: the RateLimit and RateLimit-Policy fields as the IETF draft
// (draft-ietf-httpapi-ratelimit-headers-08 and later) writes them, a String naming the policy with
// Integer parameters, as in the draft's own examples; each policy's name; values past what an
// sf-integer may hold, or below 0, clamped.
#include "http/limit_fields.hpp"
#include "tap.hpp"

#include <cstdint>

namespace {

using tap::is;

LimitReport report(LimitReport::Policy policy, long long limit, long long remaining,
                   long long reset, long long window)
{
    LimitReport r;
    r.present = true;
    r.policy = policy;
    r.limit = limit;
    r.remaining = remaining;
    r.reset_seconds = reset;
    r.window_seconds = window;
    return r;
}

} // namespace

int main()
{
    const LimitReport rate = report(LimitReport::Policy::rate, 100, 50, 30, 10);
    is(limit_fields::ratelimit(rate), std::string("\"rate\";r=50;t=30"),
       "RateLimit: the policy's name, r calls left, t seconds until reset");
    is(limit_fields::ratelimit_policy(rate), std::string("\"rate\";q=100;w=10"),
       "RateLimit-Policy: its quota q over a window of w seconds");
    is(limit_fields::ratelimit(report(LimitReport::Policy::daily, 3, 0, 3600, 86400)),
       std::string("\"daily\";r=0;t=3600"), "a daily quota");
    is(limit_fields::ratelimit_policy(report(LimitReport::Policy::monthly, 1000, 5, 9, 2678400)),
       std::string("\"monthly\";q=1000;w=2678400"), "a monthly quota over a month of 31 days");
    is(limit_fields::ratelimit(report(LimitReport::Policy::rate, 1, -4, 1LL << 60, 1)),
       std::string("\"rate\";r=0;t=999999999999999"),
       "below 0 is 0; past 15 digits (what an sf-integer holds) is the largest it holds");

    // Every policy of a caller's limits, for /catalog: 2024-02-10 (a month of 29 days).
    const std::int64_t feb_10 = 1707523200LL * 1000000;
    rate_limits::Limits limits;
    limits.rate_per_second = 100;
    limits.burst = 1000;
    limits.quota = 5000;
    limits.quota_period = rate_limits::Period::month;
    is(limit_fields::policies(limits, feb_10),
       std::string("\"rate\";q=1000;w=10, \"monthly\";q=5000;w=2505600"),
       "a rate and a monthly quota: two members, the bucket filling in 10 s, February's 29 days");
    limits.quota_period = rate_limits::Period::day;
    limits.rate_per_second = 0;
    is(limit_fields::policies(limits, feb_10), std::string("\"daily\";q=5000;w=86400"),
       "a daily quota alone");
    rate_limits::Limits in_flight;
    in_flight.max_in_flight = 3;
    is(limit_fields::policies(in_flight, feb_10), std::string(),
       "an in-flight limit alone: no policy with a window");
    return tap::done();
}
