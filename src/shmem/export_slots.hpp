// The places among querygate.max_exports exports written or sent at once, counting every worker,
// with a share for each caller and each policy (querygate.caller_share: pool_share_cap), so that
// one key reading its exports slowly cannot hold every place while others are refused. A place
// is held from the start of the export's query until its file is sent or its connection is gone.
// Shared memory: a fixed array of holders under one spinlock (a take looks at max_exports
// holders at most: a few), each holder named by digests of its caller and policy. Places a
// process holds when it exits are given back then. PostgreSQL side.
#pragma once

#include "common/call.hpp"

#include <cstddef>

namespace export_slots {

// The most querygate.max_exports may be.
constexpr int most = 1024;

std::size_t shmem_size();
void shmem_init(); // from the shmem_startup hook

enum class Refusal { none, server_full, caller_full, policy_full };

// A place for `who`'s export: its number (>= 0), or -1 with why not.
int take(const PoolShare &who, int max_exports, Refusal &why);
// The export in place `slot` ended (-1: none taken).
void give(int slot) noexcept;

} // namespace export_slots
