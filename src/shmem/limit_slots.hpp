// The shared table of limit counts (limit_table.hpp) as it lies in shared memory: the counts in a
// fixed array of slots, each with a spinlock made once at startup, and a dynahash in shared memory
// that finds a caller's slot, under one LWLock. Between a lock's acquire and release there is only
// plain arithmetic and hash lookups that cannot fail (HASH_ENTER_NULL), so no error can leave a
// lock held. A slot's generation changes, under its spinlock, when its caller is forgotten
// (limit_table.cpp says what it is for). Not part of limit_table's interface: limit_slots.cpp
// makes, finds and forgets the slots, limit_table.cpp charges them.
#pragma once

#include "shmem/limit_table.hpp"

extern "C" {
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
}

#include <cstddef>

namespace limit_table {

constexpr std::size_t name_bytes = 64;

// The hash key: zero-filled, so equal subjects are equal bytes.
struct EntryKey {
    uint8 kind;
    uint8 pad[7];
    int64 key_id;
    char name[name_bytes];
};

// One caller's counts. Every field but `mutex` and `in_flight` is read and written under `mutex`.
struct alignas(64) Slot {
    slock_t mutex;     // made once, at startup
    uint64 generation; // changes when the slot's caller is forgotten
    // Calls admitted and not yet answered. Raised only under `mutex` (by a charge), lowered
    // without it (release): a call takes the spinlock once, not twice. Under the spinlock a count
    // of 0 stays 0 (only a charge raises it), so forget_idle may judge it there; a release that
    // lowers it meanwhile only makes a charge refuse as it would have a moment earlier. (Both
    // workers charge a busy key's slot: with the spinlock taken twice a call, perf put a tenth
    // of a microsecond a call in spinning on it.)
    pg_atomic_uint32 in_flight;
    rate_limits::Bucket bucket;
    double rate; // the rate and size the bucket was last charged under
    long capacity;
    bool quota_loaded;   // period_start and used hold the catalog's count (or a newer one)
    int64 period_start;  // of `used`, Unix microseconds
    int64 used;          // calls counted in that period
    int64 written_start; // what the catalog was last given
    int64 written_used;
    EntryKey key; // whose it is: an address slot's, to take it from its caller (make_address)
};

// The index: a caller's slot.
struct Entry {
    EntryKey key; // first: dynahash's key
    uint32 slot;
};

// The slots: first querygate.limit_entries for keys and policies, then querygate.address_entries
// for addresses, so that no number of addresses can take a key's place.
struct Shared {
    LWLock *lock;
    // Under the lock, exclusively:
    uint32 address_used; // address slots given out so far (the first ones, in order)
    uint32 address_hand; // the address slot given out longest ago, taken next (make_address)
    uint32 nfree;        // key slots not in use, their numbers in free[0..nfree)
    uint32 free[FLEXIBLE_ARRAY_MEMBER];
};

extern Shared *shared;
extern Slot *slots;
extern HTAB *table;

EntryKey key_of(const Subject &who);

// The slot for key, made (empty) if there is none. Under the lock, exclusively. nullptr when
// every slot holds a caller that matters.
Slot *find_or_make(const EntryKey &key, int64 now_us);

} // namespace limit_table
