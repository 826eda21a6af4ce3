// A read's budget in the worker: see worker_budget.hpp.
#include "call/worker_budget.hpp"

#include "pg/pg_headers.hpp"

extern "C" {
#include "storage/latch.h"
#include "utils/timeout.h"
}

namespace worker_budget {

namespace {

TimeoutId timeout_id = MAX_TIMEOUTS; // not registered yet
volatile sig_atomic_t budget_spent = 0;

// In the SIGALRM handler: the flags PostgreSQL's own cancel handler sets.
void budget_over()
{
    budget_spent = 1;
    QueryCancelPending = true;
    InterruptPending = true;
    SetLatch(MyLatch);
}

} // namespace

void start(int ms)
{
    budget_spent = 0;
    if (ms <= 0)
        return;
    if (timeout_id == MAX_TIMEOUTS)
        timeout_id = RegisterTimeout(USER_TIMEOUT, budget_over);
    enable_timeout_after(timeout_id, ms);
}

void stop()
{
    if (timeout_id != MAX_TIMEOUTS && get_timeout_active(timeout_id))
        disable_timeout(timeout_id, false);
    // A cancel the call did not reach (it ended first) must not cancel the next one, nor be
    // taken for the next call's.
    if (budget_spent)
        QueryCancelPending = false;
    budget_spent = 0;
}

bool spent()
{
    return budget_spent != 0;
}

} // namespace worker_budget
