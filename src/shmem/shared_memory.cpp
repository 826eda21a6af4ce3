// querygate's shared memory, requested and set up: see shared_memory.hpp.
#include "shmem/shared_memory.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "storage/ipc.h"
#include "storage/shmem.h"
}

#include "call/catalog_changes.hpp"
#include "shmem/connection_counts.hpp"
#include "shmem/event_ring.hpp"
#include "shmem/export_slots.hpp"
#include "shmem/history_ring.hpp"
#include "shmem/limit_table.hpp"
#include "shmem/stat_table.hpp"
#include "shmem/worker_load.hpp"
#include "worker/wal_flusher.hpp"

namespace shared_memory {

namespace {

shmem_request_hook_type prev_shmem_request = nullptr;
shmem_startup_hook_type prev_shmem_startup = nullptr;

void request_shmem()
{
    if (prev_shmem_request)
        prev_shmem_request();
    RequestAddinShmemSpace(worker_load::shmem_size());
    RequestAddinShmemSpace(wal_flusher::shmem_size());
    RequestAddinShmemSpace(limit_table::shmem_size());
    RequestAddinShmemSpace(export_slots::shmem_size());
    RequestAddinShmemSpace(catalog_changes::shmem_size());
    limit_table::shmem_request();
    RequestAddinShmemSpace(stat_table::shmem_size());
    stat_table::shmem_request();
    RequestAddinShmemSpace(history_ring::shmem_size());
    RequestAddinShmemSpace(event_ring::shmem_size());
    RequestAddinShmemSpace(connection_counts::shmem_size());
    connection_counts::shmem_request();
}

void startup_shmem()
{
    if (prev_shmem_startup)
        prev_shmem_startup();
    worker_load::shmem_init();
    wal_flusher::shmem_init();
    limit_table::shmem_init();
    export_slots::shmem_init();
    catalog_changes::shmem_init();
    stat_table::shmem_init();
    history_ring::shmem_init();
    event_ring::shmem_init();
    connection_counts::shmem_init();
}

} // namespace

void install_hooks()
{
    prev_shmem_request = shmem_request_hook;
    shmem_request_hook = request_shmem;
    prev_shmem_startup = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
}

} // namespace shared_memory
