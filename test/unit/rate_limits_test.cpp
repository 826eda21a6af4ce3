// Unit tests of the limit arithmetic (src/rules/rate_limits.hpp): merging a key's limits over its
// policy's, the bucket's size, taking tokens and the wait for the next, refilling to the size and
// not beyond, a clock that goes back, and the bounds of days and months (leap years, December).
#include "rules/rate_limits.hpp"

#include "tap.hpp"

#include <cstdint>

using namespace rate_limits;

namespace {

constexpr std::int64_t second = 1000000;

// Microseconds since the epoch of a UTC date at midnight (days counted by hand below).
std::int64_t day_us(std::int64_t days)
{
    return days * 86400 * second;
}

void test_merge()
{
    Limits policy;
    policy.rate_per_second = 10;
    policy.burst = 20;
    policy.max_in_flight = 4;
    policy.quota = 1000;
    policy.quota_period = Period::month;
    Limits key;
    key.quota = 5; // its own quota, per day
    Limits m = merge(key, policy);
    tap::is(m.rate_per_second, 10.0, "a key without a rate of its own keeps its policy's");
    tap::is(m.burst, 20L, "and that rate's burst");
    tap::is(m.max_in_flight, 4L, "and its in-flight limit");
    tap::is(m.quota, 5LL, "its own quota wins");
    tap::ok(m.quota_period == Period::day, "with its own period");
    key.rate_per_second = 1;
    m = merge(key, policy);
    tap::is(m.rate_per_second, 1.0, "its own rate wins");
    tap::is(m.burst, 0L, "the burst follows its rate: its own (none: the rate rounded up)");
    tap::ok(!Limits().any(), "no limits: any() is false");
    Limits only_in_flight;
    only_in_flight.max_in_flight = 1;
    tap::ok(only_in_flight.any(), "an in-flight limit alone is a limit");
}

void test_capacity()
{
    Limits l;
    l.rate_per_second = 2.5;
    tap::is(capacity(l), 3L, "without a burst, the rate rounded up");
    l.rate_per_second = 0.001;
    tap::is(capacity(l), 1L, "at least 1");
    l.burst = 7;
    tap::is(capacity(l), 7L, "a burst is the size");
}

void test_take()
{
    Bucket b;
    std::int64_t wait = 0;
    long left = 0;
    const std::int64_t t0 = 1000 * second;
    for (int i = 0; i < 3; i++)
        tap::ok(take(b, 1.0, 3, t0, wait, left),
                "a new bucket is full: token " + std::to_string(i + 1));
    tap::is(left, 0L, "nothing left after three");
    tap::ok(!take(b, 1.0, 3, t0, wait, left), "the fourth at the same instant is refused");
    tap::is(wait, second, "the next token comes in a second");
    tap::ok(!take(b, 1.0, 3, t0 + second / 2, wait, left), "half a second later, still none");
    tap::is(wait, second / 2, "and half a second to wait");
    tap::ok(take(b, 1.0, 3, t0 + second, wait, left), "a second later, one");
    tap::ok(!full(b, 1.0, 3, t0 + 2 * second), "two seconds later, not yet full");
    tap::ok(full(b, 1.0, 3, t0 + 4 * second), "four seconds later, full");
    tap::ok(take(b, 1.0, 3, t0 + 100 * second, wait, left), "long after");
    tap::is(left, 2L, "refilled only to the size: 2 left after one");
    tap::ok(take(b, 1.0, 3, t0, wait, left), "a clock that went back still takes what is there");
    tap::is(left, 1L, "and adds nothing for the time it went back");
    Bucket shrink;
    (void)take(shrink, 1.0, 10, t0, wait, left);
    tap::is(left, 9L, "a bucket of 10");
    (void)take(shrink, 1.0, 2, t0, wait, left);
    tap::is(left, 1L, "a burst lowered to 2 shrinks it at once");
    tap::is(seconds_up(1), 1LL, "any wait is at least a second in a header");
    tap::is(seconds_up(second), 1LL, "a second is 1");
    tap::is(seconds_up(second + 1), 2LL, "rounded up");
    tap::is(seconds_up(0), 0LL, "no wait is 0");
}

void test_periods()
{
    // 2024-02-29 is day 19782; 2024-03-01 is 19783; 2024-12-01 is 20058; 2025-01-01 is 20089.
    const std::int64_t noon = day_us(19782) + 12 * 3600 * second;
    tap::is(period_start(Period::day, noon), day_us(19782), "a day starts at midnight UTC");
    tap::is(period_end(Period::day, noon), day_us(19783), "and ends at the next");
    tap::is(period_start(Period::month, noon), day_us(19782 - 28),
            "February 2024 starts on the 1st");
    tap::is(period_end(Period::month, noon), day_us(19783), "and ends on March 1st (a leap year)");
    const std::int64_t december = day_us(20058) + 5 * second;
    tap::is(period_end(Period::month, december), day_us(20089), "December ends on January 1st");
    tap::is(period_start(Period::day, day_us(20058)), day_us(20058), "midnight belongs to its day");
    tap::is(period_start(Period::day, -1), day_us(-1), "before the epoch, the day before");
}

} // namespace

// A call that cost more than one: the caller's next calls pay for it.
void test_owe()
{
    Bucket b;
    std::int64_t wait = 0;
    long left = 0;
    const std::int64_t t0 = 1000 * second;
    tap::ok(take(b, 10.0, 10, t0, wait, left), "a call of a full bucket of 10");
    owe(b, 10.0, 10, t0, 29);
    tap::ok(!take(b, 10.0, 10, t0, wait, left), "after owing 29 more, the next call waits");
    tap::is(wait, 2 * second + second / 10, "until 21 tokens have come back: 2.1 s at 10 a second");
    tap::ok(!take(b, 10.0, 10, t0 + 2 * second, wait, left), "2 s later, still owing");
    tap::ok(take(b, 10.0, 10, t0 + 3 * second, wait, left), "3 s later, paid and a call admitted");
    Bucket fresh;
    owe(fresh, 10.0, 10, t0, 0);
    tap::ok(take(fresh, 10.0, 10, t0, wait, left) && left == 9, "owing nothing changes nothing");
}

int main()
{
    test_owe();
    test_merge();
    test_capacity();
    test_take();
    test_periods();
    return tap::done();
}
