// The one listening socket shared by every HTTP worker.
//
// It is created once, in the postmaster (_PG_init under shared_preload_libraries), and inherited by
// the forked workers, each of which hands it to its own libmicrohttpd daemon. Measured on this
// design's machine: with SO_REUSEPORT alone, the kernel pins each new connection to one worker's
// socket even while that worker is busy with a slow query (3 of 8 requests waited 0.78 s behind a
// 1 s query); with one shared socket, whichever worker is idle accepts. Pure C++: no PostgreSQL.
#pragma once

#include <string>

namespace listen_socket {

// Creates, binds and listens; returns the non-blocking fd, or -1 with a reason in error.
int open(const char *address, int port, std::string &error);

// The fd created in the postmaster, inherited by workers; -1 when there is none.
extern int shared_fd;

} // namespace listen_socket
