// The run history's shared ring: every worker puts a record of each call it answers here, and
// the writer process (worker/state_writer.hpp) takes them out in batches and inserts them into
// querygate.history outside any call's transaction. A call never waits for the history: putting a
// record takes a spinlock for the time of two additions, and when the ring is full
// (querygate.history_buffer records) the record is dropped and counted, never waited for.
//
// Many producers, one consumer. A producer reserves a slot under the ring's spinlock, fills it
// with no lock held and then marks it ready; the writer takes ready slots in order from the
// oldest, reads them where they are (no copy: a batch's records are a megabyte) and frees them
// once their rows are formed, and only then does the tail move past them, so a producer never
// writes a slot that is being read. Records are fixed-size (about 1.2 kB): names are cut at 63
// bytes; the masked columns' list and the parameters are made to fit by the runner (masked_room,
// params_room: history_values.hpp). Each text keeps its length, so that the writer measures
// nothing.
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

// A text of at most Room - 1 bytes and its length (plain data; NUL-terminated as well).
template <std::size_t Room> struct Text {
    uint16 len;
    char data[Room];
    static_assert(Room <= UINT16_MAX, "a length in 16 bits");
    // Keeps what fits of `from`.
    void set(std::string_view from) noexcept;
    // Keeps `from`, or nothing when it does not fit: JSON, which a cut would make something else.
    void set_whole(std::string_view from) noexcept;
    bool empty() const { return len == 0; }
};

// A record as the ring holds it (plain data).
struct Record {
    TimestampTz at; // when the call started
    int64 duration_us;
    int64 revision;
    int32 version;
    uint64 rows;
    uint64 bytes;
    int32 status;
    int32 worker; // 1-based
    Text<65> request_id;
    Text<64> key;
    Text<64> policy;
    Text<64> query;
    Text<32> code;
    Text<64> client;
    Text<masked_room> masked;
    Text<params_room> params;
};

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

// Puts a record of a call answered by `worker` (1-based), unless querygate.history is off or the
// sample leaves out a success. Never throws, never waits.
void put(const CallRecord &call, int worker) noexcept;

// The writer: it is the one consumer, and is woken (its latch set) when the ring is a quarter
// full. register_writer() once, from the writer process.
void register_writer();
// Up to `most` ready records, oldest first, left in their slots until release(): the writer may
// change them (it makes their texts valid in the database's encoding) and no producer writes them.
class Taken {
  public:
    std::size_t size() const { return static_cast<std::size_t>(end_ - first_); }
    bool empty() const { return end_ == first_; }
    Record &operator[](std::size_t i) const;

  private:
    friend Taken take(std::size_t most);
    friend void release(Taken &taken);
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
