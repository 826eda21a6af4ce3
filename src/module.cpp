// The library's entry point: settings, the shared listening socket, and the HTTP workers.
#include "pg_headers.hpp"
extern "C" {
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
}

#include "listen_socket.hpp"
#include "settings.hpp"
#include "wal_flusher.hpp"
#include "worker_load.hpp"

#include <string>

extern "C" {
PG_MODULE_MAGIC;
PGDLLEXPORT void _PG_init(void);
PG_FUNCTION_INFO_V1(querygate_http_status_notice);
}

namespace {

// True in every process forked from a postmaster that preloaded the library.
bool preloaded = false;

// Shared memory, requested and set up through PostgreSQL's hooks (chained). Only the workers'
// load counts and the WAL flusher's state today; metrics and rate limits shared by all
// workers are the next to ask here.
shmem_request_hook_type prev_shmem_request = nullptr;
shmem_startup_hook_type prev_shmem_startup = nullptr;

void request_shmem()
{
    if (prev_shmem_request)
        prev_shmem_request();
    RequestAddinShmemSpace(worker_load::shmem_size());
    RequestAddinShmemSpace(wal_flusher::shmem_size());
}

void startup_shmem()
{
    if (prev_shmem_startup)
        prev_shmem_startup();
    worker_load::shmem_init();
    wal_flusher::shmem_init();
}

void register_workers()
{
    for (int i = 0; i < settings::workers; i++) {
        BackgroundWorker worker{};
        worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
        // Consistent state, not recovery finished: workers also serve read-only calls on standbys.
        worker.bgw_start_time = BgWorkerStart_ConsistentState;
        worker.bgw_restart_time = 5;
        snprintf(worker.bgw_library_name, BGW_MAXLEN, "querygate");
        snprintf(worker.bgw_function_name, BGW_MAXLEN, "querygate_http_worker_main");
        snprintf(worker.bgw_name, BGW_MAXLEN, "querygate http worker %d", i + 1);
        snprintf(worker.bgw_type, BGW_MAXLEN, "querygate http worker");
        worker.bgw_main_arg = Int32GetDatum(i);
        RegisterBackgroundWorker(&worker);
    }
}

} // namespace

void _PG_init(void)
{
    settings::define(process_shared_preload_libraries_in_progress);
    if (!process_shared_preload_libraries_in_progress)
        return;
    preloaded = true;
    if (settings::workers == 0)
        return;

    std::string error;
    int fd = listen_socket::open(settings::listen_addresses, settings::port, error);
    if (fd < 0) {
        // The server still starts: a busy HTTP port must not keep the database down.
        ereport(WARNING, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                          errmsg("querygate HTTP is off: %s", error.c_str()),
                          errhint("Set querygate.listen_addresses and querygate.port to a free "
                                  "address and restart the server.")));
        return;
    }
    listen_socket::shared_fd = fd;
    prev_shmem_request = shmem_request_hook;
    shmem_request_hook = request_shmem;
    prev_shmem_startup = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
    register_workers();
    wal_flusher::register_process();
}

// Called by the install script: tells the administrator whether this database is served over HTTP.
Datum querygate_http_status_notice(PG_FUNCTION_ARGS)
{
    // WARNING, not NOTICE: while an extension script runs, PostgreSQL raises client_min_messages
    // to WARNING, and an administrator who installed an HTTP gateway should hear that HTTP is off.
    if (!preloaded) {
        ereport(WARNING,
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
