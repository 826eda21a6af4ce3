// querygate's entry point: what the library does when PostgreSQL loads it, one call per
// subsystem. Under shared_preload_libraries the postmaster defines the settings, opens the HTTP
// address, asks for shared memory and registers the background processes; loaded any other way
// (CREATE EXTENSION, LOAD) it defines the reloadable settings only, and HTTP is off.
#include "pg/pg_guard.hpp"
#include "pg/pg_headers.hpp"
extern "C" {
#include "miscadmin.h"
}

#include "common/settings.hpp"
#include "shmem/shared_memory.hpp"
#include "worker/processes.hpp"
#include "worker/worker_slots.hpp"

extern "C" {
PG_MODULE_MAGIC;
PGDLLEXPORT void _PG_init(void);
}

namespace {

void init()
{
    settings::define(process_shared_preload_libraries_in_progress);
    if (!process_shared_preload_libraries_in_progress || settings::workers == 0)
        return;
    if (!processes::listen())
        return;
    shared_memory::install_hooks();
    worker_slots::reserve(); // before InitializeMaxBackends sizes shared memory for the slots
    processes::register_all();
}

} // namespace

// Like every extern "C" entry, through the boundary's wrapper: no C++ exception reaches the
// postmaster.
void _PG_init(void)
{
    (void)pg::sql_entry([] {
        init();
        return (Datum)0;
    });
}
