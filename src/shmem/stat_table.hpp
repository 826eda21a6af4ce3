// What every call cost, per saved query and policy, and per policy for SQL callers wrote, in one
// shared-memory hash table that every worker and helper adds to: the querygate.stat_queries view
// and GET /metrics read it (sql_api/stat_functions.cpp, call/query_runner.cpp), so any worker's
// answer is complete.
//
// Only calls of a query that exists, by a caller whose policy may call it, and calls of SQL by a
// caller whose policy takes SQL, are counted here: a caller cannot make an entry for a name of
// its choosing, and SQL is counted under its kind alone (metrics::CallKind), never under a name,
// so its entries are bounded by the policies. Everything else a worker answers is counted by its
// own slot (shmem/worker_load.hpp). The table holds querygate.stat_entries
// entries (a restart sizes it); a call that finds it full is counted as unrecorded, not dropped
// silently, and querygate.stat_reset() empties it.
#pragma once

#include "pg/pg_headers.hpp"

#include "common/metrics.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

namespace stat_table {

// One call, as run() ends it.
struct Call {
    metrics::CallKind kind = metrics::CallKind::query;
    std::string_view query; // the saved query's name; empty for SQL
    std::string_view policy;
    const char *code = nullptr; // the error's code (common/api_error.hpp); nullptr: it succeeded
    int64 duration_us = 0;
    uint64 rows = 0;  // rows returned, or changed by a write that returns none
    uint64 bytes = 0; // the JSON body's size
};

std::size_t shmem_size();
void shmem_request(); // from the shmem_request hook: its lock
void shmem_init();    // from the shmem_startup hook

// Adds the call to its kind's, query's and policy's entry: at once, or, in a process that called
// by_rounds(), at its next flush(). Never throws: statistics are not worth a failed call
// (PostgreSQL's errors from the lock are caught and the call counted as unrecorded).
void record(const Call &call) noexcept;

// From now on this process keeps its calls' counts, summed per entry, until flush():
// an HTTP worker, which flushes at the end of each round, so that a round's calls take the table's
// lock and each entry's spinlock once, not once a call. (Taken once a call, by two workers on two
// cores, the entry's spinlock's line goes back and forth between them.)
// A call is then counted once its worker ends the round it was answered in, as PostgreSQL's own
// statistics are flushed after their transaction, not at each row. Counts kept when the process
// exits on an error are lost.
void by_rounds() noexcept;
// Adds the counts this process kept to the table. Never throws.
void flush() noexcept;

// Every entry, copied under the lock (plain data out: metrics.hpp), and the count of calls that
// found the table full since the last reset; this process's kept counts are flushed first. May
// throw pg::PgError.
std::vector<metrics::QueryStats> snapshot(uint64 &unrecorded);
// Forgets every entry and the unrecorded count (and this process's kept counts). May throw
// pg::PgError.
void reset();

} // namespace stat_table
