// Group commit inside a worker: several writes share one WAL flush, and none is answered before
// its flush. PostgreSQL side; the worker reaches it through QueryRunner.
//
// Why: a worker runs one call at a time, so with synchronous commit each write waits for its own
// WAL flush and a worker can commit only as fast as the disk syncs, while pgbench's many backends
// share flushes. With querygate.group_commit on, a write commits without waiting for the flush
// (synchronous_commit = off for that transaction only), its answer is held, the worker goes on
// with the other requests that are ready, and at the end of that round one XLogFlush covers every
// commit of the round; then the held answers go out. Every response produced while a commit is
// unflushed is held too, so no answer from this worker shows data a crash could still lose.
//
// A worker holding a single connection commits as PostgreSQL would: no other request can share its
// round, and the deferred path costs more than it saves there (measured at 1 connection: 1,330
// against 2,000 writes a second). After a checkpoint every update carries a full-page image, so
// each deferred commit completes a WAL page and wakes the WAL writer, whose flush then races the
// worker's own.
//
// What it gives up: between its commit and the round's flush (the rest of one round, typically
// well under a millisecond), a write is visible to other sessions (other workers, direct SQL
// clients) before it is durable, as with synchronous_commit = off. That is why it is a setting,
// off by default. It never applies with synchronous standbys configured (their wait is per
// backend) or when the server's synchronous_commit is already off.
#pragma once

#include "pg_headers.hpp"
extern "C" {
#include "access/xlogdefs.h"
}

class GroupCommit {
  public:
    // How many connections the worker holds: with one, nothing can share a flush.
    void set_connections(unsigned n) { connections_ = n; }
    // Called inside a write call's transaction, before its commit: when group commit applies,
    // this transaction's commit will not wait for its WAL flush.
    void defer_this_commit();
    // Called after the commit: remembers how far WAL must be flushed before answering.
    void committed();
    // The transaction was aborted instead: nothing to remember.
    void abandoned() { deferred_ = false; }
    // Whether some commit awaits its flush (and answers must wait).
    bool pending() const { return pending_ != InvalidXLogRecPtr; }
    // Flushes WAL up to the last deferred commit (one fsync for the round).
    void flush();

  private:
    unsigned connections_ = 0;
    bool deferred_ = false;                    // the running transaction's commit was deferred
    XLogRecPtr before_ = InvalidXLogRecPtr;    // XactLastCommitEnd when the deferral was asked
    XLogRecPtr pending_ = InvalidXLogRecPtr;   // highest unflushed commit end
};
