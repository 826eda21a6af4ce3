// When a worker that has just answered should look for the next request before it sleeps
// (querygate.busy_poll). Plain C++; the looking itself is in http_worker.cpp.
//
// Looking pays when the next request comes within the window, as it does from closed-loop clients
// (an answer, then the next request tens of microseconds later): the worker skips falling asleep
// and being woken, its largest kernel cost on the benchmark's machine. When requests come
// further apart than the window, every look is CPU spent for nothing (measured at 10,600 requests a
// second over 64 connections: 0.73 cores of workers without looking, 0.96 with), so after a look
// that found nothing the worker sleeps at once for the next 1, 2, 4 ... 64 rounds before it looks
// again, and the first look that finds something ends the back-off.
#pragma once

class BusyPoll {
  public:
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
