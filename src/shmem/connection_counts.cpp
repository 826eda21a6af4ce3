// Connections per client address and in all: see connection_counts.hpp. Between a lock's acquire
// and release there are only plain arithmetic and hash operations that cannot fail
// (HASH_ENTER_NULL), so no error can leave the lock held.
#include "shmem/connection_counts.hpp"

#include "common/settings.hpp"
#include "pg/pg_headers.hpp"
#include "shmem/worker_load.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
}

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace connection_counts {

namespace {

// The address, zero-filled: IPv4 in its first four bytes (an IPv4-mapped IPv6 address too), IPv6
// in all sixteen.
struct Key {
    uint8 family; // 4 or 6
    uint8 pad[3];
    uint8 address[16];
};

// An address's open connections, a count per worker.
struct Entry {
    Key key;       // first: dynahash's key
    int32 open[1]; // querygate.workers of them (the entry is sized at start)
};

struct Shared {
    LWLock *lock;
    int64 total[1]; // querygate.workers of them: each worker's open connections
};

// A connection counted in the total only (its address is not counted: no per-address limit was
// set when it came, or its family has no address).
constexpr std::uintptr_t total_only = 1;

const char tranche[] = "querygate connections";
Shared *shared = nullptr;
HTAB *table = nullptr;

int columns()
{
    return std::max(1, settings::workers);
}

std::size_t shared_size()
{
    return offsetof(Shared, total) + sizeof(int64) * static_cast<std::size_t>(columns());
}

std::size_t entry_size()
{
    return MAXALIGN(offsetof(Entry, open) + sizeof(int32) * static_cast<std::size_t>(columns()));
}

bool key_of(const sockaddr *addr, socklen_t len, Key &k)
{
    std::memset(&k, 0, sizeof(k));
    if (addr == nullptr)
        return false;
    if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        k.family = 4;
        std::memcpy(k.address, &reinterpret_cast<const sockaddr_in *>(addr)->sin_addr, 4);
        return true;
    }
    if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        const in6_addr &a = reinterpret_cast<const sockaddr_in6 *>(addr)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&a)) {
            k.family = 4;
            std::memcpy(k.address, a.s6_addr + 12, 4);
        } else {
            k.family = 6;
            std::memcpy(k.address, a.s6_addr, 16);
        }
        return true;
    }
    return false;
}

int64 open_in_all()
{
    int64 n = 0;
    for (int w = 0; w < columns(); w++)
        n += shared->total[w];
    return n;
}

int64 open_from(const Entry *e)
{
    int64 n = 0;
    for (int w = 0; w < columns(); w++)
        n += e->open[w];
    return n;
}

} // namespace

std::size_t shmem_size()
{
    return add_size(MAXALIGN(shared_size()),
                    hash_estimate_size(settings::max_connections, entry_size()));
}

void shmem_request()
{
    RequestNamedLWLockTranche(tranche, 1);
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared = static_cast<Shared *>(ShmemInitStruct("querygate connections", shared_size(), &found));
    if (!found) {
        std::memset(static_cast<void *>(shared), 0, shared_size());
        shared->lock = &GetNamedLWLockTranche(tranche)->lock;
    }
    HASHCTL info;
    std::memset(&info, 0, sizeof(info));
    info.keysize = sizeof(Key);
    info.entrysize = entry_size();
    table = ShmemInitHash("querygate connections per address", settings::max_connections,
                          settings::max_connections, &info, HASH_ELEM | HASH_BLOBS);
    LWLockRelease(AddinShmemInitLock);
}

void start_worker()
{
    const int me = worker_load::mine();
    if (table == nullptr || me < 0 || me >= columns())
        return;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    shared->total[me] = 0;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (Entry *e = static_cast<Entry *>(hash_seq_search(&scan))) {
        e->open[me] = 0;
        if (open_from(e) == 0)
            (void)hash_search(table, &e->key, HASH_REMOVE, nullptr); // allowed during a scan
    }
    LWLockRelease(shared->lock);
}

Refused admit(const sockaddr *addr, socklen_t len, std::uintptr_t &slot) noexcept
{
    slot = 0;
    const int me = worker_load::mine();
    if (table == nullptr || me < 0 || me >= columns())
        return Refused::none;
    Key key;
    const bool per_address = settings::max_connections_per_ip > 0 && key_of(addr, len, key);
    Refused refused = Refused::none;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    if (open_in_all() >= settings::max_connections) {
        refused = Refused::total;
    } else if (per_address) {
        bool found = false;
        Entry *e = static_cast<Entry *>(hash_search(table, &key, HASH_ENTER_NULL, &found));
        if (e == nullptr) {
            refused = Refused::total; // as many addresses as connections: the table is full
        } else {
            if (!found)
                std::memset(e->open, 0, sizeof(int32) * static_cast<std::size_t>(columns()));
            if (open_from(e) >= settings::max_connections_per_ip) {
                refused = Refused::address;
            } else {
                e->open[me]++;
                slot = reinterpret_cast<std::uintptr_t>(e);
            }
        }
    } else {
        slot = total_only;
    }
    if (refused == Refused::none)
        shared->total[me]++;
    LWLockRelease(shared->lock);
    return refused;
}

void release(std::uintptr_t slot) noexcept
{
    const int me = worker_load::mine();
    if (slot == 0 || table == nullptr || me < 0 || me >= columns())
        return;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    if (shared->total[me] > 0)
        shared->total[me]--;
    if (slot != total_only) {
        // The entry stays while this connection is counted in it.
        Entry *e = reinterpret_cast<Entry *>(slot);
        if (e->open[me] > 0)
            e->open[me]--;
        if (open_from(e) == 0)
            (void)hash_search(table, &e->key, HASH_REMOVE, nullptr);
    }
    LWLockRelease(shared->lock);
}

} // namespace connection_counts
