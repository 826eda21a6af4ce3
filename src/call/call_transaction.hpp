// The transaction of a call: every path that runs SQL for a caller (QueryRunner's run, ready,
// describe and watch_events) runs it in one CallTransaction, and none begins, commits or aborts
// one any other way.
//
// What it promises:
// - The constructor starts a read-only transaction (the statement's start time set, a snapshot
//   pushed; a call's also open to a stop request, call/stop_request.hpp). A granted write turns
//   it read-write itself, once its policy's decision is made.
// - It ends exactly once: commit() commits it, and the destructor aborts it unless commit()
//   returned. The abort is what PostgresMain does after an error: no timeout, budget, watch or
//   cancel outlives the call. A worker that cannot abort cannot serve another call: it ends
//   with FATAL (exit code 1, which restarts it alone; FATAL exits, it does not jump).
// - Either way the request's memory (CallSession::request_context), which is current while the
//   transaction ends, is reset as the transaction object goes.
// - Neither the constructor nor the destructor throws or longjmps: every PostgreSQL call in them
//   goes through pg::guard. What kept the transaction from starting is thrown by started(), the
//   first thing the caller does in its try block: its handlers then see that failure as any
//   other, while the transaction is still to be aborted.
//
// Why the abort waits for the destructor: a handler reads what the failed call left before the
// abort clears it (its budget spent, its caller gone, call/call_errors.hpp), and writes its log
// line under pg::HeldInterrupts, since the call's cancel may still be pending then.
//
//   {
//       CallTransaction transaction(session, CallTransaction::Kind::lookup);
//       try {
//           transaction.started();
//           ... the work ...
//           transaction.commit();
//       } catch (const std::exception &e) {
//           ... what the failure answers; logged under pg::HeldInterrupts ...
//       } // aborted here unless committed, and the request's memory reset
//   }
#pragma once

#include "pg/pg_headers.hpp"

#include <exception>
#include <string>

class GroupCommit; // worker/group_commit.hpp

// What a worker's session carries from one call's transaction to the next.
struct CallSession {
    explicit CallSession(GroupCommit &gc) : group_commit(gc) {}

    // Once, after the worker has connected to its database: the request's memory context.
    void start();
    // Sets the session's search_path to `path`, only when it changes: most workers serve queries
    // saved with the same path, so most calls skip this. Plans are re-validated by PostgreSQL if
    // it differs. Throws pg::PgError.
    void use_search_path(const std::string &path);

    GroupCommit &group_commit; // the worker's: a write's commit may be deferred (group_commit.hpp)
    // Per request, reset when its transaction object goes. Current while a transaction ends
    // (commit, abort), which deletes the contexts that were current during the call
    // (pg_guard.hpp).
    MemoryContext request_context = nullptr;
    // The session's search_path as last set by a committed call; unknown after an abort, which
    // rolls back a search_path set in its transaction.
    std::string search_path;
    bool search_path_known = false;
};

class CallTransaction {
  public:
    enum class Kind {
        // A call of a saved query: a stop request cancels it from the transaction's start to
        // just before its commit; its commit may be a deferred one (worker/group_commit.hpp), and
        // closes what Citus opened for its settings (call/citus_settings.hpp); the session-level
        // locks its SQL took are released after it (call/call_hygiene.hpp).
        call,
        // Only the catalog is read, as the worker itself (GET /ready, /openapi.json, /catalog,
        // /events).
        lookup,
    };

    CallTransaction(CallSession &session, Kind kind) noexcept;
    ~CallTransaction();
    CallTransaction(const CallTransaction &) = delete;
    CallTransaction &operator=(const CallTransaction &) = delete;

    // Throws what kept the transaction from starting (pg::PgError, std::bad_alloc), if anything.
    void started() const;
    // Commits. Throws pg::PgError when the commit fails: the transaction is then aborted by the
    // destructor, as any failed call's.
    void commit();

  private:
    void abort() noexcept;
    void reset_request_memory() noexcept;

    CallSession &session_;
    const Kind kind_;
    std::exception_ptr start_failure_;
    bool committed_ = false;
};
