// Whether the caller of the running call is still there. A caller that hangs up while its query
// runs must not hold the worker until the query ends: every half second of the call a timeout
// looks at the connection's socket (poll, POLLRDHUP: the peer has closed it), as PostgreSQL's
// client_connection_check_interval does for its own clients, and if the caller is gone cancels
// the query (the next CHECK_FOR_INTERRUPTS raises the cancel; the transaction rolls back, so a
// write is not half done). The call then ends as 499 client_closed, in the history and the
// statistics; nobody reads its answer.
//
// A call run by a write helper is not watched: the connection is the worker's, not the helper's.
// PostgreSQL side.
#pragma once

namespace client_watch {

// From the start of a call to its end: the connection's socket (-1: nothing to watch).
void start(int fd);
void stop();
// The call was cancelled because its caller had gone (until the next start).
bool gone();

} // namespace client_watch
