// Unit tests of the statistics' arithmetic (src/rules/call_totals.hpp): calls added one at a time,
// and the same calls kept in parts and merged (as an HTTP worker keeps its round's calls and adds
// them to the shared table's), come to the same counts, mean, squared deviations, extremes and
// histogram; merging nothing, or into nothing, changes nothing but what is merged.
#include "rules/call_totals.hpp"

#include "tap.hpp"

#include <cmath>
#include <cstring>

namespace {

CallTotals empty()
{
    CallTotals t;
    std::memset(&t, 0, sizeof(t));
    return t;
}

bool near(double a, double b)
{
    return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(b));
}

// Durations in seconds, spread over several buckets and slots.
const double durations[] = {0.00004, 0.0003, 0.0021, 0.00009, 0.7, 0.0004, 0.012, 0.00005, 3.0};
constexpr int ncalls = static_cast<int>(sizeof(durations) / sizeof(durations[0]));

void add_call(CallTotals &t, int i)
{
    t.add(i % 3 == 0 ? 1 : 0, durations[i], static_cast<uint64_t>(i), 100u + i);
}

void same(const CallTotals &got, const CallTotals &want, const std::string &what)
{
    tap::is(got.calls, want.calls, what + ": calls");
    tap::ok(std::memcmp(got.by_code, want.by_code, sizeof(got.by_code)) == 0, what + ": by code");
    tap::is(got.rows, want.rows, what + ": rows");
    tap::is(got.bytes, want.bytes, what + ": bytes");
    tap::ok(near(got.total_s, want.total_s), what + ": total");
    tap::is(got.min_s, want.min_s, what + ": min");
    tap::is(got.max_s, want.max_s, what + ": max");
    tap::ok(near(got.mean_s, want.mean_s), what + ": mean");
    tap::ok(near(got.m2, want.m2), what + ": squared deviations",
            tap::show(got.m2) + " against " + tap::show(want.m2));
    tap::ok(std::memcmp(got.buckets, want.buckets, sizeof(got.buckets)) == 0, what + ": histogram");
}

void test_merge_equals_adding()
{
    CallTotals one_by_one = empty();
    for (int i = 0; i < ncalls; i++)
        add_call(one_by_one, i);
    // The textbook variance, for the adding itself.
    double mean = 0;
    for (double d : durations)
        mean += d;
    mean /= ncalls;
    double m2 = 0;
    for (double d : durations)
        m2 += (d - mean) * (d - mean);
    tap::ok(near(one_by_one.mean_s, mean), "added one by one: the mean");
    tap::ok(near(one_by_one.m2, m2), "added one by one: the squared deviations");
    tap::is(one_by_one.min_s, 0.00004, "the least");
    tap::is(one_by_one.max_s, 3.0, "the most");

    // Every split into rounds: [0, a), [a, b), [b, n).
    int wrong = 0;
    for (int a = 0; a <= ncalls; a++)
        for (int b = a; b <= ncalls; b++) {
            CallTotals parts[3] = {empty(), empty(), empty()};
            for (int i = 0; i < ncalls; i++)
                add_call(parts[i < a ? 0 : i < b ? 1 : 2], i);
            CallTotals table = empty();
            for (const CallTotals &p : parts)
                table.merge(p);
            const CallTotals &want = one_by_one;
            bool all = table.calls == want.calls && table.rows == want.rows &&
                       near(table.mean_s, want.mean_s) && near(table.m2, want.m2) &&
                       table.min_s == want.min_s && table.max_s == want.max_s &&
                       std::memcmp(table.buckets, want.buckets, sizeof(want.buckets)) == 0;
            if (!all)
                wrong++;
            if (!all || (a == 3 && b == 7))
                same(table, want,
                     "rounds split at " + std::to_string(a) + " and " + std::to_string(b));
        }
    tap::is(wrong, 0, "every split into three rounds comes to the same totals");
}

void test_merge_edges()
{
    CallTotals t = empty();
    add_call(t, 4);
    const CallTotals before = t;
    t.merge(empty());
    same(t, before, "merging nothing");
    CallTotals into = empty();
    into.merge(before);
    same(into, before, "merging into nothing");
    tap::is(CallTotals::bucket_of(0.0001), 0, "a duration on a bound is in that bound's bucket");
    tap::is(CallTotals::bucket_of(0.00011), 1, "past it, in the next");
    tap::is(CallTotals::bucket_of(1e9), metrics::duration_buckets - 1, "past every bound: +Inf");
}

} // namespace

int main()
{
    test_merge_equals_adding();
    test_merge_edges();
    return tap::done();
}
