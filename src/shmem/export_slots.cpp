// The export slots: see export_slots.hpp.
#include "shmem/export_slots.hpp"

#include "pg/pg_headers.hpp"

#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

#include <cstdint>
#include <string>

namespace export_slots {

namespace {

struct Holder {
    int pid; // 0: free
    std::uint64_t caller;
    std::uint64_t policy;
};

struct Shared {
    slock_t mutex;
    Holder holders[most];
};

Shared *shared = nullptr;
bool exit_registered = false;

// FNV-1a: the same digest in every process (std::hash need not be).
std::uint64_t digest(const std::string &s)
{
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

void give_back_mine(int, Datum)
{
    if (shared == nullptr)
        return;
    SpinLockAcquire(&shared->mutex);
    for (Holder &h : shared->holders)
        if (h.pid == MyProcPid)
            h.pid = 0;
    SpinLockRelease(&shared->mutex);
}

} // namespace

std::size_t shmem_size()
{
    return sizeof(Shared);
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared =
        static_cast<Shared *>(ShmemInitStruct("querygate export slots", sizeof(Shared), &found));
    if (!found) {
        SpinLockInit(&shared->mutex);
        for (Holder &h : shared->holders)
            h = Holder{0, 0, 0};
    }
    LWLockRelease(AddinShmemInitLock);
}

int take(const PoolShare &who, int max_exports, Refusal &why)
{
    why = Refusal::server_full;
    if (shared == nullptr || max_exports <= 0)
        return -1;
    if (!exit_registered) {
        pg::guard([] { on_shmem_exit(give_back_mine, 0); });
        exit_registered = true;
    }
    const int size = max_exports < most ? max_exports : most;
    const std::size_t cap = pool_share_cap(static_cast<std::size_t>(size), settings::caller_share);
    const std::uint64_t caller = digest(who.caller), policy = digest(who.policy);
    int slot = -1, in_use = 0;
    std::size_t callers = 0, policies = 0;
    // Plain arithmetic under the spinlock: nothing here can fail.
    SpinLockAcquire(&shared->mutex);
    for (int i = 0; i < size; i++) {
        const Holder &h = shared->holders[i];
        if (h.pid == 0) {
            slot = slot < 0 ? i : slot;
            continue;
        }
        in_use++;
        callers += h.caller == caller;
        policies += h.policy == policy;
    }
    // Holders past a lowered max_exports still count until they end.
    for (int i = size; i < most; i++)
        in_use += shared->holders[i].pid != 0;
    if (in_use >= size)
        slot = -1;
    else if (callers >= cap)
        why = Refusal::caller_full, slot = -1;
    else if (policies >= cap)
        why = Refusal::policy_full, slot = -1;
    if (slot >= 0) {
        shared->holders[slot] = Holder{MyProcPid, caller, policy};
        why = Refusal::none;
    }
    SpinLockRelease(&shared->mutex);
    return slot;
}

void give(int slot) noexcept
{
    if (shared == nullptr || slot < 0 || slot >= most)
        return;
    SpinLockAcquire(&shared->mutex);
    if (shared->holders[slot].pid == MyProcPid)
        shared->holders[slot].pid = 0;
    SpinLockRelease(&shared->mutex);
}

} // namespace export_slots
