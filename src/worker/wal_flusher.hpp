// The WAL flusher: one background process that makes the workers' deferred commits durable
// (group commit, src/worker/group_commit.hpp), so that no worker waits for a disk sync.
//
// Why a process of its own: a worker that calls XLogFlush itself sits idle for the whole sync
// (0.4-0.5 ms on the benchmark's disk) with its next requests ready, so at 4 connections per worker
// the workers were busy a third of the time and wrote 3,081 a second against pgbench's 6,277 (whose
// eight backends overlap their syncs). Here a worker publishes how far WAL must be flushed, sets
// the flusher's latch and goes on serving; the flusher syncs back to back while anything is
// wanted, each sync covering every commit published before it starts, and after each one sets the
// latch of every worker holding answers, which then sends those whose commits are durable.
//
// Shared memory: the highest commit end any worker wants flushed, the flusher's process number, and
// per worker a "waiting" slot and a "committing" mark (group_commit.hpp says why). When no flusher
// runs (not started yet, or on a server still in recovery, where it is not started), a worker
// flushes for itself, as before.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xlogdefs.h"
}

#include <cstddef>

extern "C" {
PGDLLEXPORT void querygate_wal_flusher_main(Datum main_arg);
}

namespace wal_flusher {

// Bytes to reserve; called from the shmem_request hook.
std::size_t shmem_size();
// Creates or attaches the shared state; called from the shmem_startup hook. The process itself is
// registered by processes.cpp, beside the workers.
void shmem_init();

// Worker side. `worker` is the worker's number (0-based), as for worker_load.
void attach(int worker);
// A commit ending at `end` must be flushed before any answer that could show it.
void want(XLogRecPtr end);
// The highest commit end wanted so far (flushed or not).
XLogRecPtr wanted();
// Whether this worker is between the start of a deferred commit and its want(): the commit may be
// visible to other workers' queries before its end is published.
void set_committing(bool committing);
// Whether any worker is there now.
bool anyone_committing();
// Asks the flusher to flush what is wanted; false when no flusher runs (flush it yourself).
bool wake();
// Whether this worker holds answers for a flush: the flusher sets its latch after each flush.
void set_waiting(bool waiting);

} // namespace wal_flusher
