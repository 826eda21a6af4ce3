// How many HTTP connections each worker holds, in shared memory, so that the least loaded worker
// takes the next one (src/http/accept_gate.hpp decides; src/worker/http_worker.cpp asks).
//
// Why: keep-alive pins a connection to the worker that accepted it for its whole life. Left to the
// kernel's wake-up order, a burst of new connections lands mostly on whichever worker ran first
// (8/0 and 21/11 splits were seen on two workers), and that worker then serves most calls alone.
//
// One slot per worker (querygate.workers is restart-only, so the array never changes size). A slot
// is "absent" until its worker starts and again after it exits, so a dead or restarting worker
// never looks like the least loaded one. Later rooms (metrics, rate limits shared by all workers)
// ask for their own shared memory the same way, from module.cpp's hooks.
#pragma once

#include <cstddef>

namespace worker_load {

// Bytes to reserve; called from the shmem_request hook.
std::size_t shmem_size();
// Creates or attaches the array; called from the shmem_startup hook.
void shmem_init();

// Claims slot `worker` for this process: its count starts at 0 and goes back to absent at exit.
void attach(int worker);
// Publishes this worker's open-connection count.
void publish(unsigned connections);
// The smallest count among the workers that are running (this one included).
unsigned fewest();
// Whether any worker is running (the writer waits for none at a clean stop).
bool any_running();

} // namespace worker_load
