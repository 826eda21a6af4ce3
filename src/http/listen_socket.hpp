// The one listening socket shared by every HTTP worker.
//
// It is created once, in the postmaster (_PG_init under shared_preload_libraries), and inherited by
// the forked workers, each of which hands it to its own libmicrohttpd daemon. Measured on this
// design's machine: with SO_REUSEPORT alone, the kernel pins each new connection to one worker's
// socket even while that worker is busy with a slow query (3 of 8 requests waited 0.78 s behind a
// 1 s query); with one shared socket, whichever worker is idle accepts. Pure C++: no PostgreSQL.
//
// An address in use when the server starts (most often the previous postmaster of a restart, still
// exiting with the socket open; or another program) does not turn HTTP off until the next restart:
// the socket is created all the same, unbound, and the workers bind it once the address is free.
// It is one socket (one open file shared by every process), so the first worker's bind serves all.
#pragma once

#include <string>

namespace listen_socket {

enum class Opened {
    listening, // bound and listening
    waiting,   // the address is in use: created, not bound; see listen_when_free
    failed     // no socket: error says why (an address that does not resolve, say)
};

// Creates, binds and listens, non-blocking; on listening or waiting, shared_fd is the socket.
// error says why when it is not listening.
Opened open(const char *address, int port, std::string &error);

// In a worker: true when the shared socket listens, binding and listening it first if it does not
// yet (one try). When not, error is empty if the address is still in use (the postmaster has said
// so), else says what else is wrong. Safe in several workers at once: a bind that finds the
// socket already bound by another counts as bound.
bool listen_when_free(std::string &error);

// The socket created in the postmaster, inherited by workers; -1 when there is none.
extern int shared_fd;

} // namespace listen_socket
