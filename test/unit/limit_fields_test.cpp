// Tests of src/http/limit_fields.cpp: the RateLimit and RateLimit-Policy fields as the IETF draft
// (draft-ietf-httpapi-ratelimit-headers-08 and later) writes them, a String naming the policy with
// Integer parameters, as in the draft's own examples; each policy's name; values past what an
// sf-integer may hold, or below 0, clamped.
#include "http/limit_fields.hpp"
#include "tap.hpp"

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
    return tap::done();
}
