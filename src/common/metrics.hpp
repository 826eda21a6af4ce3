// The statistics both sides see: what the shared tables hold (shmem/stat_table.hpp,
// shmem/worker_load.hpp), copied out as plain data for the SQL views and for GET /metrics
// (http/prometheus_text.hpp). Plain C++.
#pragma once

#include "common/api_error.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace metrics {

// The upper bounds of the call-duration histogram's buckets, in seconds (a last one, +Inf,
// follows). Fine at the low end: a lookup takes tens of microseconds.
inline constexpr double duration_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                             1,      2.5,     5,      10};
inline constexpr int duration_buckets = static_cast<int>(std::size(duration_bounds)) + 1;

// Calls are counted by how they ended: slot 0 for success, 1 + i for error_code::all[i].
inline constexpr int code_slots = static_cast<int>(std::size(error_code::all)) + 1;
// The slot of a code (nullptr: success). A call ends with a code of error_code::all, which holds
// every code defined (test/unit/api_error_test.cpp); anything else would be a bug, counted as
// internal_error rather than nowhere.
inline int code_slot(const char *code)
{
    if (code == nullptr)
        return 0;
    int internal = 0;
    for (int i = 0; i < code_slots - 1; i++) {
        if (std::strcmp(code, error_code::all[i].code) == 0)
            return 1 + i;
        if (std::strcmp(error_code::all[i].code, error_code::internal_error.code) == 0)
            internal = 1 + i;
    }
    return internal;
}
// The code a slot counts: "ok" for slot 0.
inline const char *slot_code(int slot)
{
    return slot <= 0 || slot >= code_slots ? "ok" : error_code::all[slot - 1].code;
}

// What a caller called: a saved query, by its name, or SQL it wrote (POST /sql, MCP's
// execute_sql), counted per policy under the kind alone. SQL has no name a statistic could keep:
// its per-worker name means nothing, and its text is the caller's, unbounded, and may hold
// values it typed.
enum class CallKind : uint8_t { query = 0, sql = 1 };

// The kind as the views, the run history and /metrics spell it.
inline const char *kind_name(CallKind kind)
{
    return kind == CallKind::sql ? "sql" : "query";
}

struct QueryStats {
    CallKind kind = CallKind::query;
    std::string query; // empty for SQL
    std::string policy;
    uint64_t calls = 0;
    uint64_t by_code[code_slots] = {}; // calls by how they ended (code_slot)
    uint64_t rows = 0;
    uint64_t bytes = 0;
    double total_seconds = 0;
    double min_seconds = 0;
    double max_seconds = 0;
    double mean_seconds = 0;
    double sum_sq_dev = 0;                   // of the durations from their mean (Welford's M2)
    uint64_t buckets[duration_buckets] = {}; // calls by duration, not cumulative
    uint64_t errors() const { return calls - by_code[0]; }
};

struct WorkerStats {
    int worker = 0; // 1-based, as the process is named
    int pid = 0;
    int64_t started_us = 0; // Unix microseconds
    uint64_t connections = 0;
    uint64_t in_flight = 0; // calls handed to a helper or held for a flush, not yet answered
    uint64_t requests = 0;  // answered, probes and refusals included
    uint64_t errors = 0;    // of those, answered with a status of 400 or more
    uint64_t busy_us = 0;   // time spent serving, not waiting for events
    uint64_t connections_refused = 0;   // over max_connections(_per_ip), answered 503 at accept
    uint64_t connections_timed_out = 0; // closed at querygate.request_timeout
};

// The run history's ring (shmem/history_ring.hpp), since the server started.
struct HistoryStats {
    uint64_t buffered = 0; // records waiting for the writer
    uint64_t written = 0;  // saved to querygate.history
    uint64_t dropped = 0;  // lost: the ring was full, or the writer could not save them
    uint64_t skipped = 0;  // successes left out by querygate.history_sample_rate
    // What the rings held when the server last stopped without a clean stop (a crash, an
    // immediate stop): lost with them.
    uint64_t lost_at_restart = 0;
};

// Everything GET /metrics answers.
struct Snapshot {
    std::vector<QueryStats> queries;
    std::vector<WorkerStats> workers;
    uint64_t unrecorded = 0; // calls the statistics table had no room for
    HistoryStats history;
    bool statistics = true; // querygate.statistics
};

} // namespace metrics
