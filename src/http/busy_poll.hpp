// When a worker that has just answered should look for the next request before it sleeps
// (querygate.busy_poll). Plain C++; the looking itself is in http_worker.cpp.
//
// Looking pays when the next request comes within the window, as it does from closed-loop clients
// (an answer, then the next request tens of microseconds later): the worker skips falling asleep
// and being woken, its largest kernel cost on the benchmark's machine. When requests come
// further apart than the window, every look is CPU spent for nothing, so after a look
// that found nothing the worker sleeps at once for the next 1, 2, 4 ... 64 rounds before it looks
// again, and the first look that finds something ends the back-off.
//
// A look also needs a core nobody else is waiting for. sched_yield hands the core only to what
// waits on the same core's queue; a worker, or the client, queued on the other core waits out the
// whole look. With as many workers awake as cores, each look is a core taken from a process that
// has work, so a worker looks only while fewer workers than cores are awake. (What looking gains
// and costs, measured: docs/performance.md, design choices.)
#pragma once

class BusyPoll {
  public:
    // Whether a look would spend a core no other worker needs: `awake` workers (this one
    // counted) serving or looking rather than asleep, on a machine of `cores` cores.
    static bool core_to_spare(int awake, int cores) { return awake < cores; }

    // Whether to look after this round, given whether it answered something. An idle worker never
    // looks: it sleeps.
    bool should_look(bool answered)
    {
        if (!answered)
            return false;
        if (skip_ > 0) {
            skip_--;
            return false;
        }
        return true;
    }

    // What the look found.
    void looked(bool found)
    {
        if (found) {
            backoff_ = 0;
            return;
        }
        backoff_ = backoff_ == 0 ? 1 : (backoff_ < max_backoff ? backoff_ * 2 : max_backoff);
        skip_ = backoff_;
    }

  private:
    static constexpr int max_backoff = 64;
    int backoff_ = 0; // rounds skipped after the last miss
    int skip_ = 0;    // rounds still to skip
};
