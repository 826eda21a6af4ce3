// The HTTP connections open at once, per client address and in all, counted in shared memory by
// every worker, so that querygate.max_connections_per_ip and querygate.max_connections hold across
// workers: one address's connections spread over every worker still count as one address's.
// PostgreSQL side (dynahash and one LWLock); the worker's HttpServer asks through plain hooks
// (http/http_server.hpp) when it accepts and when a connection closes.
//
// Each worker counts its own connections in a column of its own, and zeroes that column when it
// starts: the counts of a worker that died are forgotten with it, never left to lock an address
// out. An address's entry goes when none of its connections is open any more.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace connection_counts {

std::size_t shmem_size();
void shmem_request(); // from the shmem_request hook: its lock
void shmem_init();    // from the shmem_startup hook

// This worker's column starts empty (at the worker's start, after worker_load::attach).
void start_worker();

enum class Refused { none = 0, address = 1, total = 2 };

// Counts a new connection from `addr`, or says which limit it is over (then nothing is counted).
// `slot` is what release() gives back (0: nothing to give back).
Refused admit(const sockaddr *addr, socklen_t len, std::uintptr_t &slot) noexcept;
// The connection counted under `slot` has closed.
void release(std::uintptr_t slot) noexcept;

} // namespace connection_counts
