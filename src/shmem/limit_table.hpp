// The counts behind rate limits, in-flight limits and quotas (rules/rate_limits.hpp), in one
// shared-memory hash table that every worker charges, so a limit is exact across workers.
//
// One entry per caller that has a limit: a key (by its catalog id), a policy (bearer tokens, by
// name) or a client address (calls without valid credentials). A worker charges a caller it
// charged lately under the entry's spinlock alone (limit_table.cpp says how it knows the entry is
// still that caller's); other lookups take the table's lock shared and the entry's spinlock; only
// a new entry takes the lock exclusively; a call that ends takes the entry's spinlock alone.
//
// Keys and policies, and addresses, have room of their own, so no number of addresses can take a
// keyed caller's place. Keys and policies: querygate.limit_entries (a restart sizes it); when it is
// full, entries whose state is as good as new (a full bucket, nothing in flight, no quota count
// that is not in the catalog) are forgotten, and if none is, the call is refused (429
// rate_limited) rather than counted nowhere. Addresses: querygate.address_entries; when it is
// full, a new address takes the place of the address seen first longest ago, in constant time.
//
// Quota counts are loaded from querygate.quota_usage the first time a caller with a quota is seen
// after a start, and written back by the writer process (worker/state_writer.hpp).
#pragma once

#include "pg/pg_headers.hpp"

#include "common/api_error.hpp"
#include "common/call.hpp"
#include "rules/rate_limits.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace limit_table {

enum class Kind : uint8 { key = 1, policy = 2, address = 3 };

// Who is counted. Names longer than 63 bytes are cut (policy names never are: 63 at most).
struct Subject {
    Kind kind = Kind::key;
    int64 key_id = 0;      // Kind::key: api_key.id
    std::string_view name; // Kind::policy: its name; Kind::address: the address
};

// A call's place in its caller's in-flight count, given back by release: the entry itself, which
// stays where it is while a hold is counted in it (only an entry with nothing in flight is ever
// forgotten), so giving it back looks nothing up.
using Hold = LimitHold;

// Reads a quota count kept in the catalog: the start of its period (Unix microseconds; 0 when
// none is kept) and the calls counted in it. May throw pg::PgError.
using LoadQuota = std::function<void(int64 &period_start_us, int64 &used)>;

std::size_t shmem_size();
void shmem_request(); // from the shmem_request hook: its lock
void shmem_init();    // from the shmem_startup hook

// Charges one call to `who` under `limits` at now_us: its quota, its in-flight count and its
// bucket, in that order, each checked before anything is counted. A refusal is a 429 error
// (quota_exceeded, or rate_limited) with nothing counted; `report` says what the RateLimit and
// Retry-After headers say, and `hold` (on success) is what release() gives back. Nothing is
// counted for limits that set nothing. May throw pg::PgError (from load).
ApiError admit(const Subject &who, const rate_limits::Limits &limits, int64 now_us,
               LimitReport &report, Hold &hold, const LoadQuota &load);

// The call under `hold` cost `calls` more than the one charged (an export, by its length): its
// caller's bucket owes them (rate_limits::owe), at the rate it was charged under. Nothing when it
// holds nothing or has no rate.
void owe(const Hold &hold, int64 now_us, double calls) noexcept;

// The call under `hold` has ended: its caller's in-flight count goes down. Clears hold. Holds
// this process has not given back when it exits are given back then.
void release(Hold &hold) noexcept;

// A quota count as the catalog keeps it (plain data: collected under the table's lock).
struct QuotaCount {
    Kind kind;
    int64 key_id;
    char policy[64]; // Kind::policy: its name, NUL-terminated
    int64 period_start_us;
    int64 used;
    std::string_view policy_name() const { return policy; }
};
// The counts that changed since they were last written, and, once written, marking them so.
std::vector<QuotaCount> unwritten_quotas();
void quotas_written(const std::vector<QuotaCount> &written);

} // namespace limit_table
