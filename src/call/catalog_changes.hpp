// Which API keys and which saved queries changed, told to every worker's catalog cache
// (call/catalog_cache.hpp) one row at a time, so that a change costs a worker what changed, not a
// reload of every key or every query.
//
// Why: a service that gives each of its users a key has hundreds of thousands of them and
// creates and revokes them all day, and may save thousands of queries. A worker that reloaded
// every key and query on each change paid for the whole catalog at the next call after any of
// them. Workers now fetch a key by its hash, and a query by its name, the first time they need
// it, and keep it; what
// changes a kept row (an UPDATE or DELETE: a key revoked, expired, given another policy or limit;
// a query saved again, published, rolled back or dropped) is told here.
//
// How: a row trigger on api_key and on saved_query (row_changed) notes the digest of each changed
// row (a key's hash, the old and the new; a query's name) in its backend; when that transaction
// commits (XACT_EVENT_COMMIT, after the change is visible to every new snapshot and before the
// commit's invalidation messages go out), they are appended to a ring in shared memory, one for
// each kind, that every worker reads at the start of each call. A worker forgets the rows the ring
// names and fetches them again with a snapshot taken after it read the ring, so it sees the
// change. A rolled-back change is never appended. A TRUNCATE, a transaction that changed more rows
// than it notes one by one, and a worker that fell more than the ring behind, all say "every row":
// the worker forgets every one of that kind. A transaction that changed such rows cannot be
// prepared (PREPARE TRANSACTION): its commit would come from elsewhere, unannounced. A new key or
// query needs no notice: nothing of it was kept. A hot standby runs no trigger: its workers forget
// every row of a kind when the table's invalidation message is replayed (the statement trigger
// sends one, as the other catalog tables' do). PostgreSQL side.
#pragma once

#include "pg/pg_headers.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace catalog_changes {

enum class Kind { key = 0, query = 1 };

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

// The digests the rings name rows by, never 0 (which a ring keeps for "every row"): a key's, the
// first 8 bytes of its key_hash (a SHA-256, so as good as any hash); a query's, FNV-1a of its name.
std::uint64_t key_digest(const unsigned char *key_hash, std::size_t length);
std::uint64_t query_digest(std::string_view name);

// A worker's place in the ring of one kind.
class Reader {
  public:
    explicit Reader(Kind kind) : kind_(kind) {}
    // Starts at the ring's end: nothing before now concerns a cache that is empty now.
    void start();
    // The rows changed since the last look, in `changed` (cleared first); true when every row of
    // the kind must be forgotten instead (a TRUNCATE, a transaction that changed too many, or the
    // ring passed this reader). An atomic read when nothing changed.
    bool read(std::vector<std::uint64_t> &changed);

  private:
    Kind kind_;
    std::uint64_t position_ = 0;
    bool started_ = false;
};

} // namespace catalog_changes
