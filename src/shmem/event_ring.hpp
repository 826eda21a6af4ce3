// The run events of every worker's calls, in shared memory, for GET /events (issue 18): the ring
// (common/run_events.hpp) that every worker writes after each call and reads for its streams, the
// wake-up of workers that sleep with streams open, and the count of open streams per key.
//
// A call pays the copy of one event (about 200 bytes) and, with streams open, a spinlock to put it
// in the ring; with none open, its worker puts the round's events in at once. Only when another
// worker sleeps with streams open is a latch set, once: a worker asks to be woken just before it
// sleeps, and the first event after that wakes it.
#pragma once

#include "pg/pg_headers.hpp"

#include "common/history.hpp"
#include "common/run_events.hpp"

#include <cstddef>
#include <string_view>

namespace event_ring {

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

// The ring, or null when querygate.event_buffer is 0 (events are off).
const run_events::Ring *ring();

// A call answered: its event, unless events are off. Put in the ring at once while a stream is
// open on any worker; otherwise kept in this process until flush() (or until 64 are kept), since
// nobody waits for it. Never throws, never waits but for the writers' spinlock.
void put(const CallRecord &call) noexcept;
// Puts the events kept since the last flush in the ring, in the order they came, and wakes the
// workers that asked. The worker calls it at the end of each round, before it reads the ring for
// its own streams and before it sleeps, so an event waits at most for the rest of its round.
void flush() noexcept;

// Worker `worker` (0-based) sleeps with streams open: the next event sets its latch. Asked again
// before each sleep (the wake-up is used up when it fires).
void wake_me(int worker);

// A stream of `subject` opens: false when the subject holds `most` streams already, or no more
// subjects can be counted (the table is full). Given back with give_stream(), or when this
// process exits.
bool take_stream(std::string_view subject, int most);
void give_stream(std::string_view subject);

} // namespace event_ring
