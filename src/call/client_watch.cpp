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
const std::atomic<std::uint64_t> *word = nullptr; // a helper's (watch_word)
std::uint64_t word_value = 0;
volatile sig_atomic_t watching_word = 0;

// In the SIGALRM handler: poll() is async-signal-safe, and the flags are what PostgreSQL's own
// cancel handler sets.
void check_caller()
{
    const int fd = watched_fd;
    if (caller_gone)
        return;
    bool gone = false;
    if (fd >= 0) {
        struct pollfd p;
        p.fd = fd;
        p.events = POLLRDHUP;
        p.revents = 0;
        gone = poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
    } else if (watching_word) {
        gone = word->load(std::memory_order_relaxed) == word_value;
    }
    if (gone) {
        caller_gone = 1;
        QueryCancelPending = true;
        InterruptPending = true;
        SetLatch(MyLatch);
    }
}

} // namespace

void watch_word(const std::atomic<std::uint64_t> *w, std::uint64_t value)
{
    word = w;
    word_value = value;
}

void start(int fd)
{
    caller_gone = 0;
    watched_fd = -1;
    watching_word = fd < 0 && word != nullptr;
    if (fd < 0 && !watching_word)
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
    watching_word = 0;
    // A cancel the call did not reach must not cancel the next one.
    if (caller_gone)
        QueryCancelPending = false;
}

bool gone()
{
    return caller_gone != 0;
}

} // namespace client_watch
