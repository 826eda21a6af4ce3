// The run history's shared ring: every worker puts a record of each call it answers here, and
// the writer process (worker/state_writer.hpp) takes them out in batches and inserts them into
// querygate.history outside any call's transaction. A call never waits for the history: putting a
// record takes a spinlock for the time of two additions, and when the ring is full
// (querygate.history_buffer records) the record is dropped and counted, never waited for.
//
// Many producers, one consumer. A producer reserves a slot under the ring's spinlock, fills it
// with no lock held and then marks it ready; the writer takes ready slots in order from the
// oldest, copies them out and frees them before the tail moves past them, so a producer never
// writes a slot that is being read. Records are fixed-size (about 1.2 kB): names are cut at 63
// bytes; the masked columns' list and the parameters are made to fit by the runner (masked_room,
// params_room: history_values.hpp).
#pragma once

#include "pg/pg_headers.hpp"

#include "common/history.hpp"
#include "common/metrics.hpp"

#include <cstddef>
#include <vector>

namespace history_ring {

// Bytes a record keeps of the JSON list of masked columns, its closing NUL included.
constexpr std::size_t masked_room = 256;
// Bytes a record keeps of the JSON object of parameters, its closing NUL included.
constexpr std::size_t params_room = 512;

// A record as the ring holds it, copied out for the writer (plain data).
struct Record {
    int64 at_us; // when the call started, Unix microseconds
    int64 duration_us;
    int64 revision;
    uint64 rows;
    uint64 bytes;
    int32 status;
    int32 worker; // 1-based
    char request_id[65];
    char key[64];
    char policy[64];
    char query[64];
    char code[32];
    char client[64];
    char masked[masked_room];
    char params[params_room];
};

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

// Puts a record of a call answered by `worker` (1-based), unless querygate.history is off or the
// sample leaves out a success. Never throws, never waits.
void put(const CallRecord &call, int worker) noexcept;

// The writer: it is the one consumer, and is woken (its latch set) when the ring is a quarter
// full. register_writer() once, from the writer process.
void register_writer();
// Copies out up to `most` ready records, oldest first, and frees their slots.
void take(std::vector<Record> &out, std::size_t most);
// Counts records the writer saved, or gave up on (counted as dropped).
void saved(std::size_t n);
void lost(std::size_t n);

// The ring's counts since the server started.
metrics::HistoryStats stats();

} // namespace history_ring
