// How many HTTP connections each worker holds, in shared memory, so that the least loaded worker
// takes the next one (src/http/accept_gate.hpp decides; src/worker/http_worker.cpp asks).
//
// Why: keep-alive pins a connection to the worker that accepted it for its whole life. Left to the
// kernel's wake-up order, a burst of new connections lands mostly on whichever worker ran first
// (8/0 and 21/11 splits were seen on two workers), and that worker then serves most calls alone.
//
// One slot per worker (querygate.workers is restart-only, so the array never changes size). A slot
// is "absent" until its worker starts and again after it exits, so a dead or restarting worker
// never looks like the least loaded one.
//
// Each slot also holds what its worker has done since it started, for querygate.stat_workers and
// GET /metrics: requests answered, errors among them, time busy, calls awaiting an answer. Only its
// own worker writes a slot; anyone reads it.
#pragma once

#include "common/metrics.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace worker_load {

// Bytes to reserve; called from the shmem_request hook.
std::size_t shmem_size();
// Creates or attaches the array; called from the shmem_startup hook.
void shmem_init();

// Called first as a worker starts: the postmaster starts a worker that exited again at once
// (bgw_restart_time 0, so that one terminated serves again within a second), and one that fails
// as it starts would start again in a loop; so a worker that starts less than a second after
// the previous start in its slot waits out the rest of that second.
void pace_start(int worker);
// Claims slot `worker` for this process: its count starts at 0 and goes back to absent at exit.
void attach(int worker);
// This process's slot (0-based), -1 when it is not a worker.
int mine();
// Publishes this worker's open-connection count.
void publish(unsigned connections);
// The smallest count among the workers that are running (this one included).
unsigned fewest();
// Whether any worker is running (the writer waits for none at a clean stop).
bool any_running();
// This worker is awake (serving, or looking for the next request) or asleep in its wait; set
// around a wait that may sleep. A worker is awake from attach() until it exits.
void set_awake(bool awake);
// The running workers awake now, this one counted (src/http/busy_poll.hpp: whether a look has a
// core to spare).
int awake();

// What this worker has done since it started (totals, not increments).
struct Activity {
    std::uint64_t requests = 0;
    std::uint64_t errors = 0;
    std::uint64_t busy_us = 0;
    unsigned in_flight = 0;
    std::uint64_t connections_refused = 0;
    std::uint64_t connections_timed_out = 0;
};
void publish(const Activity &activity);
// Every running worker's slot.
std::vector<metrics::WorkerStats> snapshot();

} // namespace worker_load
