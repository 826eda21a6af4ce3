// Background worker slots: querygate's processes (workers, the WAL flusher, the writer, write
// helpers) are
// background workers, which count against max_worker_processes. PostgreSQL side; called once,
// by the postmaster, while it preloads the library.
//
// Why: PostgreSQL's default of 8 slots (one taken by the logical replication launcher) leaves two
// workers and the flusher room for four helpers in all, and each commit waiting for its flush needs
// a process of its own: writes from many connections queue behind too few helpers
// (docs/performance.md, design choices). Left at its default, max_worker_processes is raised by
// what querygate needs, so the slots PostgreSQL's own users (parallel query, logical replication)
// had stay theirs. A value the administrator set anywhere (postgresql.conf, ALTER SYSTEM, the
// command line) outranks this raise and is kept as it is: PostgreSQL ignores a setting from a
// source of lower priority, which is what PGC_S_DYNAMIC_DEFAULT is.
//
// What it costs: each slot is a PGPROC and a share of the lock table in shared memory (about a
// kilobyte and max_locks_per_transaction lock entries); helpers start only when writes come.
// A hot standby must have at least the primary's max_worker_processes: a standby that preloads
// querygate with the same settings computes the same value.
#pragma once

namespace worker_slots {

// The slots querygate's processes may take: workers, the WAL flusher, and every worker's helpers.
int needed();

// Raises max_worker_processes by needed() when the administrator has not set it. Postmaster only,
// before shared memory is sized (from _PG_init under shared_preload_libraries).
void reserve();

} // namespace worker_slots
