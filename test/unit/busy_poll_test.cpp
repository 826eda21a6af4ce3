// Tests of src/http/busy_poll.hpp: a worker looks for the next request only after a round that
// answered something; after a look that found nothing it sleeps at once for the next 1, 2, 4 ...
// 64 rounds, and the first look that finds something ends the back-off; and it looks only while
// fewer workers than cores are awake.
#include "http/busy_poll.hpp"
#include "tap.hpp"

#include <string>

namespace {

using tap::is;
using tap::ok;

// Answered rounds until the worker looks again (the look itself not counted), at most 1000.
int skipped_before_look(BusyPoll &p)
{
    int skipped = 0;
    while (!p.should_look(true) && skipped < 1000)
        skipped++;
    return skipped;
}

void basics()
{
    BusyPoll p;
    ok(p.should_look(true), "a worker that answered looks");
    ok(!p.should_look(false), "an idle worker never looks");
    ok(p.should_look(true), "an idle round changes nothing");
    p.looked(true);
    ok(p.should_look(true), "a look that found something: look again next time");
    p.looked(true);
    ok(p.should_look(true), "finding every time: look every time");

    BusyPoll idle;
    bool never = true;
    for (int i = 0; i < 1000; i++)
        never = never && !idle.should_look(false);
    ok(never, "1000 idle rounds: never a look");
}

void backoff()
{
    BusyPoll p;
    const int expected[] = {1, 2, 4, 8, 16, 32, 64, 64, 64, 64};
    int miss = 0;
    for (int want : expected) {
        ok(p.should_look(true), "miss " + std::to_string(miss + 1) + ": it looked");
        p.looked(false);
        is(skipped_before_look(p), want,
           "after " + std::to_string(++miss) + " misses: " + std::to_string(want) +
               " rounds without a look");
    }
    p.looked(true);
    is(skipped_before_look(p), 0, "a look that finds something ends the back-off");
    p.looked(false);
    is(skipped_before_look(p), 1, "a miss after a find starts again at 1");
    p.looked(false);
    is(skipped_before_look(p), 2, "and doubles again");
}

void idle_rounds()
{
    // While backing off, idle rounds sleep anyway: they neither look nor count as skipped rounds.
    BusyPoll p;
    p.looked(false);
    p.looked(false); // back-off 2
    ok(!p.should_look(false), "backing off: an idle round does not look");
    ok(!p.should_look(false), "backing off: another idle round does not look");
    ok(!p.should_look(true), "backing off: the first answered round still skips");
    ok(!p.should_look(false), "backing off: an idle round between");
    ok(!p.should_look(true), "backing off: the second answered round skips");
    ok(p.should_look(true), "backing off: the third answered round looks");
}

void long_run()
{
    // A worker whose looks never find anything: in 10000 answered rounds it looks about once per
    // 65 rounds once the back-off is at its cap.
    BusyPoll p;
    int looks = 0;
    for (int i = 0; i < 10000; i++)
        if (p.should_look(true)) {
            looks++;
            p.looked(false);
        }
    // 1 + 2 + 4 + ... + 64 = 127 skipped in the first 7 misses (134 rounds), then 65 per look.
    is(looks, 7 + (10000 - 134 + 64) / 65, "never finding: looks in 10000 answered rounds");
}

void spare_cores()
{
    ok(BusyPoll::core_to_spare(1, 2), "2 cores, this worker alone awake: a core to spare");
    ok(!BusyPoll::core_to_spare(2, 2), "2 cores, 2 workers awake: none to spare");
    ok(!BusyPoll::core_to_spare(3, 2), "2 cores, 3 workers awake: none to spare");
    ok(!BusyPoll::core_to_spare(1, 1), "1 core: never");
    ok(BusyPoll::core_to_spare(4, 16), "16 cores, 4 workers awake: cores to spare");
}

} // namespace

int main()
{
    basics();
    spare_cores();
    backoff();
    idle_rounds();
    long_run();
    return tap::done();
}
