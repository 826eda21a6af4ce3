// Whether the caller of the running call is still there. A caller that hangs up while its query
// runs must not hold the worker until the query ends: every half second of the call a timeout
// looks at the connection's socket (poll, POLLRDHUP: the peer has closed it), as PostgreSQL's
// client_connection_check_interval does for its own clients, and if the caller is gone cancels
// the query (the next CHECK_FOR_INTERRUPTS raises the cancel; the transaction rolls back, so a
// write is not half done). The call then ends as 499 client_closed, in the history and the
// statistics; nobody reads its answer.
//
// A call run by a helper has no socket to look at: the connection is the worker's. The worker
// looks at it instead and, when the caller is gone, stores the call's number in a word the
// helper shares with it (worker/call_helpers.hpp); the helper's timeout looks at the word the same
// way, and the call ends the same way.
// PostgreSQL side.
#pragma once

#include <atomic>
#include <cstdint>

namespace client_watch {

// In a helper, before each call: the worker's word, and the number that says this call's caller
// is gone. A call started with no socket watches it.
void watch_word(const std::atomic<std::uint64_t> *word, std::uint64_t value);
// From the start of a call to its end: the connection's socket (-1: the word, if any, or nothing
// to watch).
void start(int fd);
void stop();
// The call was cancelled because its caller had gone (until the next start).
bool gone();

} // namespace client_watch
