// Tests of the plain parts of fair shares: pool_share_cap (common/call.hpp), SlowQueries
// (call/slow_queries.hpp) and an export reader's pace (http/file_answer.cpp).
#include "call/slow_queries.hpp"
#include "common/call.hpp"
#include "http/file_answer.hpp"

#include "tap.hpp"

namespace settings {
int export_min_rate = 64;
int export_rate_window = 30;
} // namespace settings

namespace {

using tap::is;
using tap::ok;

void shares()
{
    is(pool_share_cap(8, 75), std::size_t(6), "75% of 8 helpers: 6");
    is(pool_share_cap(4, 75), std::size_t(3), "75% of 4 export places: 3");
    is(pool_share_cap(2, 75), std::size_t(1), "of 2: 1, so another caller finds one");
    is(pool_share_cap(1, 75), std::size_t(1), "of 1: that one");
    is(pool_share_cap(8, 1), std::size_t(1), "1%: still one");
    is(pool_share_cap(8, 99), std::size_t(7), "99% of 8: one fewer than all");
    is(pool_share_cap(8, 100), std::size_t(8), "100: all of them");
    is(pool_share_cap(0, 75), std::size_t(1), "no pool: the cap never matters (nothing is free)");
}

void slow_queries()
{
    SlowQueries slow;
    ok(!slow.slow("report", 1), "a query is not slow until seen so");
    slow.spent_budget("report", 1);
    ok(slow.slow("report", 1), "one that spent the budget is");
    ok(!slow.slow("report", 2), "its next revision is not");
    slow.ran_in_helper("report", 1, 6000, 10000);
    ok(slow.slow("report", 1), "it stays slow while it takes half the threshold or more");
    slow.ran_in_helper("report", 1, 4999, 10000);
    ok(!slow.slow("report", 1), "and comes back to the worker when it takes less");
    slow.spent_budget("report", 1);
    slow.ran_in_helper("report", 2, 0, 10000);
    ok(slow.slow("report", 1), "a quick run of another revision says nothing of this one");
}

void pace()
{
    using file_answer::Pace;
    const auto t0 = Pace::Clock::now();
    const auto s = [t0](double seconds) {
        return t0 + std::chrono::duration_cast<Pace::Clock::duration>(
                        std::chrono::duration<double>(seconds));
    };
    Pace p(1000, std::chrono::seconds(2), t0);
    ok(p.keeps_up(0, s(1.9)), "nothing judged before the first window ends");
    ok(p.keeps_up(2500, s(2.5)), "2,500 bytes in 2.5 s: 1,000 a second kept");
    ok(p.keeps_up(2600, s(3)), "the next window has not ended yet");
    ok(!p.keeps_up(3000, s(4.6)), "500 bytes in the 2.1 s after: too slow");
    Pace any(0, std::chrono::seconds(2), t0);
    ok(any.keeps_up(0, s(100)), "a pace of 0 accepts any reader");
}

} // namespace

int main()
{
    shares();
    slow_queries();
    pace();
    return tap::done();
}
