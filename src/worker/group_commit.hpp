// Group commit: writes share WAL flushes, and none is answered before its flush. PostgreSQL side;
// the worker owns it: the runner defers a write's flush, the worker's loop holds the answers.
//
// Why: a worker runs one call at a time, so with synchronous commit each write waits for its own
// WAL flush and a worker can commit only as fast as the disk syncs, while pgbench's many backends
// share flushes. With querygate.group_commit on, a write commits without waiting for the flush
// (synchronous_commit = off for that transaction only) and publishes how far WAL must be flushed;
// its answer is held; at the end of the round the worker asks the WAL flusher
// (src/worker/wal_flusher.hpp) for a flush and goes on serving. Held answers go out once WAL is
// flushed past their mark. Every answer made while any worker's published commit is unflushed is
// held too. A commit's end is known only after CommitTransactionCommand returns, and other workers
// may see the commit a few microseconds before that (PostgreSQL offers no hook between the commit
// record and its visibility); so a worker flags itself as committing just before, and while any
// worker is, an answer is held to the WAL insert position, which is past every commit it can have
// seen.
//
// A worker holding a single connection commits as PostgreSQL would: no other request can share its
// flush, and the deferred path costs more than it saves there (docs/performance.md, design
// choices). After a checkpoint every update carries a full-page image, so
// each deferred commit completes a WAL page and wakes the WAL writer, whose flush then races ours.
//
// What it gives up: between its commit and its flush (typically under a millisecond), a write is
// visible to direct SQL sessions before it is durable, as with synchronous_commit = off. That is
// why it is a setting, off by default. It never applies with synchronous standbys configured
// (their wait is per backend) or when the server's synchronous_commit is already off.
#pragma once

#include "pg/pg_headers.hpp"
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
    // Called just before that commit: from here until its end is published, every worker holds
    // its answers to the WAL insert position.
    void committing();
    // Called after the commit: publishes how far WAL must be flushed before answering.
    void committed();
    // The transaction was aborted instead: nothing to publish.
    void abandoned();
    // For an answer just made: the WAL position that must be flushed before it is sent, or
    // InvalidXLogRecPtr when it can go now.
    XLogRecPtr hold_until();
    // End of a round: asks for the flush of this round's deferred commits (or flushes them itself
    // when no flusher runs).
    void end_round();
    // How far WAL is flushed now.
    XLogRecPtr flushed();

  private:
    unsigned connections_ = 0;
    bool deferred_ = false;                  // the running transaction's commit was deferred
    bool to_request_ = false;                // this round deferred a commit
    XLogRecPtr before_ = InvalidXLogRecPtr;  // XactLastCommitEnd when the deferral was asked
    XLogRecPtr flushed_ = InvalidXLogRecPtr; // flushed position last seen
};
