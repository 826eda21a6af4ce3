// querygate's background processes: see processes.hpp.
#include "worker/processes.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "postmaster/bgworker.h"
}

#include "common/settings.hpp"
#include "http/listen_socket.hpp"

#include <string>

namespace processes {

namespace {

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

} // namespace

bool listen()
{
    std::string error;
    switch (listen_socket::open(settings::listen_addresses, settings::port, error)) {
    case listen_socket::Opened::listening:
        return true;
    case listen_socket::Opened::waiting:
        // Everything starts; the workers listen once the address is free (listen_socket.hpp).
        ereport(WARNING, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                          errmsg("querygate HTTP waits for its address: %s", error.c_str()),
                          errdetail("The HTTP workers listen as soon as it is free."),
                          errhint("If another program holds it, set querygate.listen_addresses "
                                  "and querygate.port to a free address and restart the server.")));
        return true;
    case listen_socket::Opened::failed:
        break;
    }
    // The server still starts: an HTTP address that cannot be used must not keep the database down.
    ereport(WARNING,
            (errcode(ERRCODE_CONFIG_FILE_ERROR), errmsg("querygate HTTP is off: %s", error.c_str()),
             errhint("Set querygate.listen_addresses and querygate.port to a free "
                     "address and restart the server.")));
    return false;
}

void register_all()
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

} // namespace processes
