// Tests of src/common/log_throttle.hpp: the first message of a window is logged, the others only at
// the debug level, and one summary line per window counts them and quotes the last.
#include "common/log_throttle.hpp"
#include "tap.hpp"

#include <string>

namespace {

using tap::is;
using tap::like;
using tap::ok;
using Clock = LogThrottle::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

void one_window()
{
    LogThrottle t;
    const Clock::time_point t0 = Clock::now();
    std::string summary;
    is(t.ms_until_summary(t0), -1L, "nothing pending at first");
    ok(t.note("first", t0), "the first message is logged");
    is(t.ms_until_summary(t0), -1L, "one logged message leaves nothing pending");
    ok(!t.note("second", t0 + seconds(1)), "the second in the window: debug only");
    ok(!t.note("third", t0 + seconds(2)), "the third too");
    is(t.ms_until_summary(t0 + seconds(2)), 58000L, "the summary is due when the window ends");
    ok(!t.summary_due(t0 + seconds(59), summary), "no summary before the window ends");
    ok(t.summary_due(t0 + seconds(60), summary), "a summary when the window ends");
    like(summary, "2 more messages in the last 60 s", "it counts what was left out");
    like(summary, "the last: third", "it quotes the last");
    ok(!t.summary_due(t0 + seconds(61), summary), "one summary only");
    is(t.ms_until_summary(t0 + seconds(61)), -1L, "nothing pending after it");
}

void steady_traffic()
{
    // A message every 10 ms for 10 minutes: the log gets the first and one summary a window.
    LogThrottle t;
    const Clock::time_point t0 = Clock::now();
    int logged = 0, summaries = 0;
    std::string summary;
    for (int i = 0; i < 60000; i++) {
        const Clock::time_point now = t0 + milliseconds(10 * i);
        if (t.summary_due(now, summary))
            summaries++;
        if (t.note("m" + std::to_string(i), now))
            logged++;
    }
    is(logged, 1, "10 minutes of steady messages: one logged as it came");
    is(summaries, 9, "and one summary per full window after the first");
}

void quiet_again()
{
    LogThrottle t;
    const Clock::time_point t0 = Clock::now();
    std::string summary;
    ok(t.note("a", t0), "a first message is logged");
    ok(t.note("b", t0 + seconds(61)), "after a quiet window, the next is logged again");
    ok(!t.note("c", t0 + seconds(62)), "and the one after it is not");
    ok(!t.note("d", t0 + seconds(130)), "a message after the window, with one left out: counted");
    ok(t.summary_due(t0 + seconds(130), summary), "the summary counts it too");
    like(summary, "2 more messages", "both left out");
    like(summary, "the last: d", "the last quoted");
}

} // namespace

int main()
{
    one_window();
    steady_traffic();
    quiet_again();
    return tap::done();
}
