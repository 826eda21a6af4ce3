// Watching the caller of the running call: see client_watch.hpp.
#include "call/client_watch.hpp"

#include "pg/pg_headers.hpp"

extern "C" {
#include "storage/latch.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include <poll.h>

namespace client_watch {

namespace {

constexpr int interval_ms = 500;

TimeoutId timeout_id = MAX_TIMEOUTS; // not registered yet
volatile sig_atomic_t watched_fd = -1;
volatile sig_atomic_t caller_gone = 0;

// In the SIGALRM handler: poll() is async-signal-safe, and the flags are what PostgreSQL's own
// cancel handler sets.
void check_caller()
{
    const int fd = watched_fd;
    if (fd < 0 || caller_gone)
        return;
    struct pollfd p;
    p.fd = fd;
    p.events = POLLRDHUP;
    p.revents = 0;
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        caller_gone = 1;
        QueryCancelPending = true;
        InterruptPending = true;
        SetLatch(MyLatch);
    }
}

} // namespace

void start(int fd)
{
    caller_gone = 0;
    watched_fd = -1;
    if (fd < 0)
        return;
    if (timeout_id == MAX_TIMEOUTS)
        timeout_id = RegisterTimeout(USER_TIMEOUT, check_caller);
    watched_fd = fd;
    enable_timeout_every(
        timeout_id, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), interval_ms), interval_ms);
}

void stop()
{
    if (timeout_id != MAX_TIMEOUTS && get_timeout_active(timeout_id))
        disable_timeout(timeout_id, false);
    watched_fd = -1;
    // A cancel the call did not reach must not cancel the next one.
    if (caller_gone)
        QueryCancelPending = false;
}

bool gone()
{
    return caller_gone != 0;
}

} // namespace client_watch
