// The library's entry point: settings, the shared listening socket, and the HTTP workers.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"
extern "C" {
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
}

#include "call/history_ring.hpp"
#include "call/event_ring.hpp"
#include "call/export_slots.hpp"
#include "call/catalog_changes.hpp"
#include "call/limit_table.hpp"
#include "call/stat_table.hpp"
#include "http/listen_socket.hpp"
#include "common/settings.hpp"
#include "worker/connection_counts.hpp"
#include "worker/wal_flusher.hpp"
#include "worker/worker_load.hpp"
#include "worker/worker_slots.hpp"

#include <string>

extern "C" {
PG_MODULE_MAGIC;
PGDLLEXPORT void _PG_init(void);
}

namespace {

// True in every process forked from a postmaster that preloaded the library.
bool preloaded = false;

// Shared memory, requested and set up through PostgreSQL's hooks (chained): the workers' load
// counts and activity, the WAL flusher's state, the limit counts (call/limit_table.hpp), the
// call statistics (call/stat_table.hpp) and the run history's ring (call/history_ring.hpp).
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

// One of querygate's background processes. Each has shared memory and a connection (the WAL
// flusher's to no database, as PostgreSQL's logical replication launcher's, which is what shows it
// in pg_stat_activity).
void register_process(const char *function, const char *name, const char *type,
                      BgWorkerStartTime start, int restart_seconds, Datum arg)
{
    BackgroundWorker worker{};
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = start;
    worker.bgw_restart_time = restart_seconds;
    snprintf(worker.bgw_library_name, BGW_MAXLEN, "querygate");
    snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
    snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
    snprintf(worker.bgw_type, BGW_MAXLEN, "%s", type);
    worker.bgw_main_arg = arg;
    RegisterBackgroundWorker(&worker);
}

void register_processes()
{
    // Consistent state, not recovery finished: workers also serve read-only calls on standbys.
    // Restarted at once when one exits (pg_terminate_backend: it serves again within a second);
    // worker_load::pace_start keeps one that fails as it starts from starting in a loop.
    for (int i = 0; i < settings::workers; i++) {
        char name[BGW_MAXLEN];
        snprintf(name, sizeof(name), "querygate http worker %d", i + 1);
        register_process("querygate_http_worker_main", name, "querygate http worker",
                         BgWorkerStart_ConsistentState, 0, Int32GetDatum(i));
    }
    // The WAL flusher (src/worker/wal_flusher.hpp), last, so that a server short of worker slots
    // loses it rather than a worker. Not during recovery: nothing is written there, and a promoted
    // standby starts it then.
    register_process("querygate_wal_flusher_main", "querygate wal flusher", "querygate wal flusher",
                     BgWorkerStart_RecoveryFinished, 1, 0);
    // The writer (src/worker/state_writer.hpp), for the same reasons after the flusher.
    register_process("querygate_writer_main", "querygate writer", "querygate writer",
                     BgWorkerStart_RecoveryFinished, 1, 0);
}

void init()
{
    settings::define(process_shared_preload_libraries_in_progress);
    if (!process_shared_preload_libraries_in_progress)
        return;
    preloaded = true;
    if (settings::workers == 0)
        return;

    std::string error;
    switch (listen_socket::open(settings::listen_addresses, settings::port, error)) {
    case listen_socket::Opened::listening:
        break;
    case listen_socket::Opened::waiting:
        // Everything starts; the workers listen once the address is free (listen_socket.hpp).
        ereport(WARNING, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                          errmsg("querygate HTTP waits for its address: %s", error.c_str()),
                          errdetail("The HTTP workers listen as soon as it is free."),
                          errhint("If another program holds it, set querygate.listen_addresses "
                                  "and querygate.port to a free address and restart the server.")));
        break;
    case listen_socket::Opened::failed:
        // The server still starts: an HTTP address that cannot be used must not keep the database
        // down.
        ereport(WARNING, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                          errmsg("querygate HTTP is off: %s", error.c_str()),
                          errhint("Set querygate.listen_addresses and querygate.port to a free "
                                  "address and restart the server.")));
        return;
    }
    prev_shmem_request = shmem_request_hook;
    shmem_request_hook = request_shmem;
    prev_shmem_startup = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
    worker_slots::reserve(); // before InitializeMaxBackends sizes shared memory for the slots
    register_processes();
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

// Called by the install script: tells the administrator whether this database is served over HTTP.
QUERYGATE_SQL_FUNCTION(querygate_http_status_notice)
{
    // WARNING, not NOTICE: while an extension script runs, PostgreSQL raises client_min_messages
    // to WARNING, and an administrator who installed an HTTP gateway should hear that HTTP is off.
    if (!preloaded) {
        ereport(
            WARNING,
            (errmsg("querygate is installed, but HTTP is off: the library is not in "
                    "shared_preload_libraries"),
             errhint("Add 'querygate' to shared_preload_libraries in postgresql.conf and restart "
                     "the server to start the HTTP workers.")));
    } else {
        const char *current = get_database_name(MyDatabaseId);
        // settings::database is defined: the library was preloaded.
        if (current != nullptr && strcmp(current, settings::database) != 0)
            ereport(WARNING, (errmsg("the querygate HTTP workers serve database \"%s\", not \"%s\"",
                                     settings::database, current),
                              errhint("Set querygate.database to \"%s\" and restart the server to "
                                      "serve this database.",
                                      current)));
    }
    PG_RETURN_VOID();
}
