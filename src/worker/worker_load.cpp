// The per-worker connection counts in shared memory (see worker_load.hpp). Plain atomics, no lock:
// a count read while another worker changes it is at most one connection off, and the only use is
// a preference that src/http/accept_gate.cpp bounds in time.
#include "pg/pg_headers.hpp"
extern "C" {
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

#include "common/settings.hpp"
#include "worker/worker_load.hpp"

#include <climits>

namespace {

constexpr uint32 absent = UINT32_MAX;

pg_atomic_uint32 *slots = nullptr; // settings::workers of them
int my_slot = -1;

void release_slot(int, Datum)
{
    if (slots != nullptr && my_slot >= 0)
        pg_atomic_write_u32(&slots[my_slot], absent);
    my_slot = -1;
}

} // namespace

std::size_t worker_load::shmem_size()
{
    return mul_size(sizeof(pg_atomic_uint32), static_cast<Size>(settings::workers));
}

void worker_load::shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    slots = static_cast<pg_atomic_uint32 *>(
        ShmemInitStruct("querygate worker load", shmem_size(), &found));
    if (!found)
        for (int i = 0; i < settings::workers; i++)
            pg_atomic_init_u32(&slots[i], absent);
    LWLockRelease(AddinShmemInitLock);
}

void worker_load::attach(int worker)
{
    if (slots == nullptr || worker < 0 || worker >= settings::workers)
        ereport(FATAL, (errmsg("querygate http worker %d has no load slot", worker + 1)));
    my_slot = worker;
    pg_atomic_write_u32(&slots[my_slot], 0);
    on_shmem_exit(release_slot, 0);
}

void worker_load::publish(unsigned connections)
{
    if (my_slot >= 0)
        pg_atomic_write_u32(&slots[my_slot], connections);
}

unsigned worker_load::fewest()
{
    uint32 least = absent;
    for (int i = 0; i < settings::workers; i++) {
        uint32 n = pg_atomic_read_u32(&slots[i]);
        if (n < least)
            least = n;
    }
    return least;
}

bool worker_load::any_running()
{
    if (slots == nullptr)
        return false;
    for (int i = 0; i < settings::workers; i++)
        if (pg_atomic_read_u32(&slots[i]) != absent)
            return true;
    return false;
}
