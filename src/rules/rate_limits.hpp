// What a caller may spend: requests per second with a burst (a token bucket), calls in flight at
// once, and calls per day or month (a quota). The arithmetic only, on plain values: the counts
// themselves live in shared memory, exact across every worker (src/shmem/limit_table.hpp), and
// their limits in the catalog (policy and api_key, set with querygate.set_limits). Plain C++.
//
// A key's own limits win over its policy's, limit by limit: a key with only a quota of its own
// keeps its policy's rate. Counted per caller: per key, per policy for bearer tokens (every
// token of a policy shares its counts), per client address for calls with no valid credentials.
#pragma once

#include <cstdint>

namespace rate_limits {

enum class Period { day, month };

struct Limits {
    double rate_per_second = 0; // 0: no rate limit
    long burst = 0;             // tokens the bucket holds; 0: the rate rounded up (at least 1)
    long max_in_flight = 0;     // 0: no limit
    long long quota = 0;        // calls per period; 0: no quota
    Period quota_period = Period::day;

    bool any() const { return rate_per_second > 0 || max_in_flight > 0 || quota > 0; }
};

// The caller's limits: each of `own` where it sets one, else `inherited`'s. The burst follows the
// rate it belongs to, and the period its quota.
Limits merge(const Limits &own, const Limits &inherited);

// The bucket's size for these limits: the burst, or the rate rounded up, at least 1.
long capacity(const Limits &limits);

// A token bucket as shared memory keeps it. A bucket never used (refilled_us 0) is full.
struct Bucket {
    double tokens = 0;
    std::int64_t refilled_us = 0;
};

// Refills the bucket to now and takes one token. False, with how long until a token is there,
// when it is empty; `remaining` is what is left either way (whole tokens).
bool take(Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us,
          std::int64_t &wait_us, long &remaining);

// Refills the bucket to now and takes `calls` tokens more from it, below empty if need be: a call
// that turned out to cost more than one (an export, by its length) is paid for by the caller's
// next calls, which wait until the bucket has refilled past it.
void owe(Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us, double calls);

// Whether a bucket left alone is full again by now, so that forgetting it changes nothing.
bool full(const Bucket &bucket, double rate_per_second, long capacity, std::int64_t now_us);

// The start of the period (UTC midnight of the day, or of the month's first day) holding
// unix_us, and of the next one, in microseconds since the Unix epoch.
std::int64_t period_start(Period period, std::int64_t unix_us);
std::int64_t period_end(Period period, std::int64_t unix_us);

// Whole seconds, rounded up, of a wait in microseconds (at least 1 when there is any wait).
long long seconds_up(std::int64_t us);

// The windows the RateLimit-Policy field gives the limits (http/limit_fields.hpp), in whole
// seconds: the time an empty bucket takes to fill; the period holding unix_us.
long long rate_window_seconds(const Limits &limits);
long long quota_window_seconds(Period period, std::int64_t unix_us);

} // namespace rate_limits
