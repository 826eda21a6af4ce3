// A process asked to stop: see stop_request.hpp.
#include "call/stop_request.hpp"

#include "pg/pg_headers.hpp"

extern "C" {
#include "storage/latch.h"
}

#include <cerrno>
#include <csignal>

namespace stop_request {

namespace {

volatile sig_atomic_t stop = 0;
volatile sig_atomic_t in_call = 0;

// The flags PostgreSQL's own cancel handler (StatementCancelHandler) sets.
void cancel_the_call()
{
    QueryCancelPending = true;
    InterruptPending = true;
}

void on_sigterm(SIGNAL_ARGS)
{
    const int saved_errno = errno;
    stop = 1;
    if (in_call)
        cancel_the_call();
    SetLatch(MyLatch);
    errno = saved_errno;
}

} // namespace

void install()
{
    pqsignal(SIGTERM, on_sigterm);
}

bool requested()
{
    return stop != 0;
}

void call_started()
{
    in_call = 1;
    if (stop)
        cancel_the_call();
}

void call_ended()
{
    in_call = 0;
    // A stop that came after the query's last check has nothing left to cancel: the call commits
    // and is answered.
    if (stop)
        QueryCancelPending = false;
}

} // namespace stop_request
