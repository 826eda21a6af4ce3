// Which API keys changed, told to every worker's key cache (call/catalog_cache.hpp) one key at a
// time, so that a revocation costs a worker what it revoked, not a reload of every key.
//
// Why: a service that gives each of its users a key has hundreds of thousands of them and
// creates and revokes them all day. A worker that reloaded every key on each change paid 155-256
// ms after each create_key with 100,000 keys. Workers now fetch a key by its hash the first time
// it is presented and keep it in a bounded cache; what changes a cached key (an UPDATE or DELETE
// of its row: a revocation, an expiry, a new policy or limit) is told here.
//
// How: a row trigger on api_key (key_changed) notes the digest of each changed row's key_hash (the
// old and the new) in its backend; when that transaction commits (XACT_EVENT_COMMIT, after the
// change is visible to every new snapshot and before the commit's invalidation messages go out),
// they are appended to a ring in shared memory that every worker reads at the start of each call.
// A worker forgets the cached keys the ring names and fetches them again with a snapshot taken
// after it read the ring, so it sees the change. A rolled-back change is never appended. A
// TRUNCATE, a transaction that changed more keys than it notes one by one, and a worker that fell
// more than the ring behind, all say "every key": the worker forgets them all. A transaction that
// changed keys cannot be prepared (PREPARE TRANSACTION): its commit would come from elsewhere,
// unannounced. A new key needs no notice: nothing of it was cached. A hot standby runs no trigger:
// its workers forget every key when the table's invalidation message is replayed (the statement
// trigger sends one, as the other catalog tables' do). PostgreSQL side.
#pragma once

#include "pg/pg_headers.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace key_changes {

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

// The digest the ring names a key by: the first 8 bytes of its key_hash (a SHA-256, so they are as
// good as any hash), never 0, which the ring keeps for "every key".
std::uint64_t digest(const unsigned char *key_hash, std::size_t length);

// A worker's place in the ring.
class Reader {
  public:
    // Starts at the ring's end: nothing before now concerns a cache that is empty now.
    void start();
    // The keys changed since the last look, in `changed` (cleared first); true when every key
    // must be forgotten instead (a TRUNCATE, a transaction that changed too many, or the ring
    // passed this reader). An atomic read when nothing changed.
    bool read(std::vector<std::uint64_t> &changed);

  private:
    std::uint64_t position_ = 0;
    bool started_ = false;
};

} // namespace key_changes
