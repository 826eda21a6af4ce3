// The HTTP worker process: its start, what it serves with, and its event loop
// (worker/event_loop.hpp).
//
// Signals as worker_spi handles them: SIGHUP sets a flag and the latch and the loop reloads
// settings. SIGTERM (a server stopping, or pg_terminate_backend) cancels the running call, which
// is answered 503 shutting_down (src/call/stop_request.hpp); the worker then drains: it accepts
// nothing more, refuses what arrives, closes its connections between requests, sends what it has
// answered, and exits (exit code 1, so that after pg_terminate_backend it starts again). A worker
// serves one call at a time; between calls it accepts new connections when it holds the fewest
// (src/http/accept_gate.hpp).
#include "pg/pg_headers.hpp"
extern "C" {
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
}

#include "call/query_runner.hpp"
#include "call/stop_request.hpp"
#include "common/settings.hpp"
#include "http/http_server.hpp"
#include "http/listen_socket.hpp"
#include "api/request_handler.hpp"
#include "pg/pg_guard.hpp"
#include "shmem/connection_counts.hpp"
#include "shmem/worker_load.hpp"
#include "worker/access_log_sink.hpp"
#include "worker/call_helpers.hpp"
#include "worker/event_loop.hpp"
#include "worker/event_pump.hpp"
#include "worker/group_commit.hpp"
#include "worker/tls_files.hpp"
#include "worker/wal_flusher.hpp"

#include <cstring>
#include <malloc.h>
#include <string>
#include <sys/resource.h>

extern "C" {
PGDLLEXPORT void querygate_http_worker_main(Datum main_arg);
}

namespace {

// With querygate.ssl on, TLS or nothing: a worker whose certificate or key cannot be used serves
// no plain HTTP in their place. It says why once and exits with code 0, which PostgreSQL takes as
// done (a background worker that exits 0 is not started again), so the log does not fill with the
// same failure every second; the settings need a restart anyway.
void load_tls_or_exit(HttpServer::Tls &tls)
{
    if (!settings::ssl)
        return;
    std::string problem;
    if (!tls_files::load(tls, problem)) {
        ereport(LOG, (errmsg("querygate http worker does not serve: querygate.ssl is on, but %s",
                             problem.c_str()),
                      errhint("Fix querygate.ssl_cert_file and querygate.ssl_key_file (or "
                              "PostgreSQL's ssl_cert_file and ssl_key_file), then restart.")));
        proc_exit(0);
    }
}

// The server could not start: with TLS, as a certificate or key that cannot be used (exit code
// 0, as above); else FATAL, and the postmaster starts the worker again.
void started_or_exit(const HttpServer &server)
{
    if (!server.started() && settings::ssl) {
        ereport(LOG,
                (errmsg("querygate http worker does not serve: %s", server.start_error().c_str()),
                 errhint("Fix querygate.ssl_cert_file and querygate.ssl_key_file, then "
                         "restart.")));
        proc_exit(0);
    }
    if (!server.started())
        ereport(FATAL, (errmsg("querygate http worker could not start: %s",
                               server.start_error().c_str())));
}

// Connections counted per client address and in all, across workers (shmem/connection_counts.hpp):
// one over a limit is refused as it is accepted.
void admit_by_address(HttpServer &server, RequestHandler &handler)
{
    connection_counts::start_worker();
    server.set_admission(HttpServer::Admission{
        [](const sockaddr *addr, socklen_t len, std::uintptr_t &slot) {
            return static_cast<int>(connection_counts::admit(addr, len, slot));
        },
        [](std::uintptr_t slot) { connection_counts::release(slot); },
        [&handler](int refused, HttpResponse &resp) {
            handler.refuse_connection(
                refused == static_cast<int>(connection_counts::Refused::address), resp);
        }});
}

// The worker: what it serves with, made once, then its rounds until it is done.
void serve()
{
    // Group commit is the worker's: the runner defers a write's flush, the loop holds its answer.
    GroupCommit group_commit;
    QueryRunner runner(group_commit);
    runner.start();
    // Writes and slow reads go to helper processes while this worker serves on (call_helpers.hpp).
    CallHelpers helpers;
    ServerLogSink access_log; // querygate.log_requests
    RequestHandler handler(runner, &helpers, &access_log);
    // A caller that hangs up while its answer is sent must not end the process: PostgreSQL's
    // background workers ignore SIGPIPE already, and the server relies on it (http_server.hpp).
    pqsignal(SIGPIPE, SIG_IGN);
    HttpServer::Tls tls;
    load_tls_or_exit(tls);
    HttpServer server(
        listen_socket::shared_fd,
        [&handler](const HttpRequest &req, HttpResponse &resp) { handler.handle(req, resp); },
        [&handler](const HttpRequest &req, int status, HttpResponse &resp) {
            handler.refuse(req, status, resp);
        },
        settings::ssl ? &tls : nullptr);
    // GnuTLS holds the key now; this copy goes.
    explicit_bzero(tls.key_pem.data(), tls.key_pem.size());
    tls.key_pem.clear();
    started_or_exit(server);
    event_loop::configure(server, handler);
    // GET /events: the streams this worker holds, fed after each round.
    event_stream::Streams streams;
    handler.set_event_streams(&streams);
    EventPump events(runner, server, streams);
    server.set_hold([&group_commit] { return group_commit.hold_until(); });
    server.set_stop_request([] { return stop_request::requested(); });
    admit_by_address(server, handler);

    event_loop::run(server, handler, helpers, group_commit, events);
}

// Every connection is a descriptor, and the soft limit most servers start with (1024) is what
// stopped new callers behind 3,000 idle connections ("Too many open files"): the worker raises
// its own to the hard limit. PostgreSQL's file accounting (max_files_per_process) was fixed at
// the postmaster's start from the old limit, so the room added is the connections' alone.
void raise_open_file_limit()
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max)
        return;
    files.rlim_cur = files.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0)
        ereport(LOG, (errmsg("querygate http worker could not raise its open-file limit: %m")));
}

// The address was in use when the server started (listen_socket.hpp): the socket is bound here as
// soon as it is free, tried every quarter second (a restart's previous postmaster frees it within
// moments of its exit). A stop request ends the wait.
void wait_for_address(int index)
{
    if (listen_socket::shared_fd < 0)
        ereport(FATAL, (errmsg("querygate http worker has no listening socket")));
    std::string error, said;
    bool waited = false;
    while (!listen_socket::listen_when_free(error)) {
        waited = true;
        // Anything but the address still in use (which the postmaster has said), once.
        if (!error.empty() && error != said) {
            ereport(LOG, (errmsg("querygate http worker %d cannot listen yet: %s", index + 1,
                                 error.c_str())));
            said = error;
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 250,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        if (stop_request::requested())
            proc_exit(1);
    }
    if (waited)
        ereport(LOG,
                (errmsg("querygate http worker %d listens: its address is free now", index + 1)));
}

} // namespace

void querygate_http_worker_main(Datum main_arg)
{
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    stop_request::install();
    worker_load::pace_start(DatumGetInt32(main_arg));
    BackgroundWorkerUnblockSignals();

    BackgroundWorkerInitializeConnection(settings::database, nullptr, 0);
    pgstat_report_appname("querygate");
    wait_for_address(DatumGetInt32(main_arg));
    worker_load::attach(DatumGetInt32(main_arg));
    wal_flusher::attach(DatumGetInt32(main_arg));
    // Keep freed memory in this process. A round of many connections frees a few hundred kB of
    // request, response and libmicrohttpd pool memory at once; glibc then gives the top of the
    // heap back to the kernel and the next round faults it in again (memset and page faults were
    // most of a worker's time serving 100-row pages at 16 connections per worker: 560-960 us of
    // CPU per call against 160-200 us at 4).
    (void)mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
    (void)mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
    raise_open_file_limit();

    const pg::EntryState entry = pg::EntryState::save();
    try {
        serve();
    } catch (const std::exception &e) {
        // Nothing a caller sends should get here (callbacks catch); if it does, this worker ends
        // with exit code 1, which restarts it alone, not every connection of the server.
        entry.restore();
        ereport(LOG, (errmsg("querygate http worker stopping: %s", e.what())));
    } catch (...) {
        entry.restore();
        ereport(LOG, (errmsg("querygate http worker stopping: an unknown exception")));
    }
    proc_exit(1);
}
