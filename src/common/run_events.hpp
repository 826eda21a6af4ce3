// Run events for GET /events: a ring of the last calls' outcomes in shared memory, written by
// every worker after each call and read by every worker for the event streams it holds
// (http/event_stream.hpp), and their text as server-sent events.
//
// Plain C++ over a block of memory the PostgreSQL side provides (ShmemInitStruct): the ring's
// layout is fixed-size and address-free (std::atomic<uint64_t> is lock-free here), so the same
// bytes are read by every process. Writers are serialized by the caller (a spinlock on the
// PostgreSQL side); readers take no lock: each slot carries the id of the event it holds, written
// last, and a reader that finds another id before or after its copy knows the event was
// overwritten under it (a seqlock), and says so as a gap.
//
// What an event holds, and what it never holds: the query, the status and stable code, the
// duration, the rows and the request id, and who called as digests that only compare (Who); never
// parameters, rows, or a caller's name.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace run_events {

// Who made a call, as a watcher is matched with it: the first 16 bytes of SHA-256 of the caller's
// identity (a key; a token's policy, tenant and subject) and of its scope (its policy and tenant).
// All zero when no caller was accepted: such an event is no watcher's.
struct Who {
    unsigned char caller[16] = {};
    unsigned char scope[16] = {};
    bool known() const;
};

// Whether a watcher (`watcher`, seeing `whole_policy`: its policy's calls in its tenant, else its
// own) sees a call made by `made_by`.
bool sees(const Who &watcher, bool whole_policy, const Who &made_by);

struct Event {
    std::uint64_t id = 0;    // 1, 2, ...: the ring's sequence, the SSE event id
    std::int64_t at_us = 0;  // when the call ended, µs since the Unix epoch
    std::int32_t status = 0; // the HTTP status
    std::uint32_t duration_us = 0;
    std::uint64_t rows = 0;
    char query[64] = {};      // cut to fit; the names of saved queries are shorter
    bool adhoc = false;       // SQL the caller wrote (POST /sql): no query name
    char code[32] = {};       // the stable error code, empty on success
    char request_id[40] = {}; // cut to fit (a caller's X-Request-Id may be longer)
    Who who;
};

struct Slot {
    std::atomic<std::uint64_t> id; // the event's id once written whole; 0 while written
    Event event;
};

struct Ring {
    std::atomic<std::uint64_t> last; // the id of the newest event, 0 when none
    std::uint32_t capacity;          // slots, a power of two
    Slot *slots() { return reinterpret_cast<Slot *>(this + 1); }
    const Slot *slots() const { return reinterpret_cast<const Slot *>(this + 1); }
};

// Bytes for a ring of `capacity` slots (rounded up to a power of two, at least 2).
std::size_t size_of(std::uint32_t capacity);
// Lays the ring out in `memory` (size_of(capacity) bytes): empty.
Ring *init(void *memory, std::uint32_t capacity);

// Adds an event and returns its id. The caller holds the writers' lock.
std::uint64_t put(Ring &ring, const Event &event);

// What a reader gets after the event it saw last: up to `max` events in order, and the ids it
// missed before them (missed_from..missed_to, 0 when none), which the ring overwrote before it
// read them.
struct Batch {
    std::vector<Event> events;
    std::uint64_t missed_from = 0;
    std::uint64_t missed_to = 0;
};
void read_after(const Ring &ring, std::uint64_t last_seen, std::size_t max, Batch &out);

// The stream's text (the HTML Living Standard's event-stream format):
//   retry: 3000                                      once, first
//   id: 42 / event: run / data: {"id":42,...}         an event
//   id: 41 / event: gap / data: {"from":7,"to":41}    events lost to the reader
//   : keep-alive                                      a comment, every 15 s without events
void append_retry(std::string &out, unsigned milliseconds);
void append_event(std::string &out, const Event &event);
void append_gap(std::string &out, std::uint64_t from, std::uint64_t to);
void append_keepalive(std::string &out);

// A Last-Event-ID header's value as an id; false when it is not a whole number.
bool parse_last_event_id(const std::string &text, std::uint64_t &id);

} // namespace run_events
