// The writer: one background process that saves what the workers count in shared memory to the
// catalog, outside any call's transaction, so that no call waits for it: the quota counts
// (shmem/limit_table.hpp) into querygate.quota_usage, every querygate.quota_flush_interval, and the
// run history (shmem/history_ring.hpp, worker/history_writer.hpp) into querygate.history, every
// querygate.history_flush_interval or sooner when woken; both once more at a clean stop, after
// the workers have exited (a crash loses at most one interval's counts, which the next start reads
// back as they were last saved, and the records the ring held).
//
// Not during recovery: nothing can be written on a standby, whose counts are its own and start
// from what the primary last saved (replayed with its WAL).
#pragma once

#include "pg/pg_headers.hpp"

extern "C" {
PGDLLEXPORT void querygate_writer_main(Datum main_arg);
}
