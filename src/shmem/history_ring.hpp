// The run history's shared rings: every worker puts a record of each call it answers in a ring of
// its own, and the writer process (worker/state_writer.hpp) takes them out in batches and inserts
// them into querygate.history outside any call's transaction. A call never waits for the history:
// when its worker's ring is full (querygate.history_buffer records, shared out among the workers)
// the record is dropped and counted, never waited for.
//
// One producer and one consumer a ring, so that putting a record takes no lock and writes no
// cache line another process writes: the worker alone moves its ring's head, the writer alone its
// tail. (One ring for all, under a spinlock, had the lock's line go back and forth between the
// workers' cores on every call.) The writer takes a
// ring's records in order from the oldest, reads them where they are (no copy: a batch's records
// are a megabyte) and frees them once their rows are formed, and only then does the tail move past
// them, so a producer never writes a slot that is being read. Records are fixed-size (about
// 2.2 kB, a kilobyte of it for SQL a caller wrote): names are cut at 63 bytes; the masked columns'
// list and the parameters are made to fit by the runner (masked_room, params_room:
// history_values.hpp). Each text keeps its length, so that the writer measures nothing; the texts
// are packed (Record).
#pragma once

#include "pg/pg_headers.hpp"

#include "common/history.hpp"
#include "common/metrics.hpp"

#include <cstddef>
#include <string_view>

namespace history_ring {

// Bytes a record keeps of the JSON list of masked columns, its closing NUL included.
constexpr std::size_t masked_room = 256;
// Bytes a record keeps of the JSON object of parameters, its closing NUL included.
constexpr std::size_t params_room = 512;
// Bytes a record keeps of SQL a caller wrote (querygate.history_sql = text cuts it; a hash fits).
constexpr std::size_t sql_room = 1024;

// A record's texts, in the order it keeps them.
enum class Field : uint8 { request_id, key, policy, query, code, client, masked, params, sql };
constexpr std::size_t fields = 9;
// Bytes a record keeps of each text, its closing NUL included: names are cut to fit; the masked
// columns and the parameters, JSON that a cut would make something else, are kept whole or not at
// all.
constexpr std::size_t room[fields] = {65, 64, 64, 64, 32, 64, masked_room, params_room, sql_room};
constexpr std::size_t rooms_summed()
{
    std::size_t n = 0;
    for (std::size_t r : room)
        n += r;
    return n;
}
constexpr std::size_t texts_room = rooms_summed(); // every text at its longest

// A record as a ring holds it (plain data). The texts are packed one after another, each
// NUL-terminated, so that a usual record is its first two or three cache lines: its worker
// writes, and the writer then reads, only those (with each text in a room of its own, a record
// touched ten lines of its 1.2 kB).
struct Record {
    TimestampTz at; // when the call started
    int64 duration_us;
    int64 revision;
    uint64 rows;
    uint64 bytes;
    int32 version;
    int32 status;
    int32 worker; // 1-based
    int32 adhoc;  // 1: SQL the caller wrote (history.kind 'sql'); 0: a saved query
    uint16 len[fields];
    char texts[texts_room];

    // Keeps the texts (by Field), each cut or left out as `room` says.
    void set_texts(const std::string_view (&from)[fields]) noexcept;
    // Where each text starts (by Field), as kept, NUL-terminated, found in one pass over the
    // lengths; the writer may change their bytes, not their lengths.
    void text_starts(char *(&at)[fields]) noexcept;
    std::size_t text_len(Field f) const { return len[static_cast<std::size_t>(f)]; }
};

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

// Puts a record of a call answered by `worker` (1-based: its ring; only that worker may put in
// it), unless querygate.history is off or the sample leaves out a success. Never throws, never
// waits.
void put(const CallRecord &call, int worker) noexcept;

// The writer: it is the one consumer, and is woken (its latch set) when a ring is half full.
// register_writer() once, from the writer process.
void register_writer();
// Up to `most` records of one ring, oldest first, left in their slots until release(): the writer
// may change them (it makes their texts valid in the database's encoding) and no producer writes
// them. The rings are taken in turn; empty only when every ring is.
class Taken {
  public:
    std::size_t size() const { return static_cast<std::size_t>(end_ - first_); }
    bool empty() const { return end_ == first_; }
    Record &operator[](std::size_t i) const;

  private:
    friend Taken take(std::size_t most);
    friend void release(Taken &taken);
    uint32 ring_ = 0;
    uint64 first_ = 0;
    uint64 end_ = 0;
};
// One Taken at a time: release() it before taking again.
Taken take(std::size_t most);
// The taken slots are free again; `taken` is empty after it.
void release(Taken &taken);
// Counts records the writer saved, or gave up on (counted as dropped).
void saved(std::size_t n);
void lost(std::size_t n);

// The ring's counts since the server started.
metrics::HistoryStats stats();

} // namespace history_ring
