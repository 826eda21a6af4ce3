// The HTTP worker process: one thread, one event loop, the worker_spi way.
//
// libmicrohttpd runs without a thread of its own (external epoll). Its epoll fd sits in a
// WaitEventSet beside the process latch and postmaster death; MHD_get_timeout bounds the wait; and
// MHD_run, called on this thread, runs every request callback, so SPI and every other PostgreSQL
// call happen here only. Signals as worker_spi handles them: SIGHUP sets a flag and the latch and
// the loop reloads settings; SIGTERM (die) makes the next CHECK_FOR_INTERRUPTS end the process,
// cancelling a running query on the way. A worker serves one call at a time.
#include "pg_headers.hpp"
extern "C" {
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/wait_event.h"
}

#include "http_server.hpp"
#include "listen_socket.hpp"
#include "query_runner.hpp"
#include "request_handler.hpp"
#include "settings.hpp"

extern "C" {
PGDLLEXPORT void querygate_http_worker_main(Datum main_arg);
}

namespace {

void log_http(const char *message)
{
    ereport(LOG, (errmsg("querygate http: %s", message)));
}

// The loop. Errors outside a call (a failed wait) are promoted to FATAL by PostgreSQL in a
// background worker, which exits this process only; the postmaster starts a new one.
void serve()
{
    QueryRunner runner;
    runner.start();
    RequestHandler handler(runner);
    HttpServer server(
        listen_socket::shared_fd,
        [&handler](const HttpRequest &req, HttpResponse &resp) { handler.handle(req, resp); },
        [&handler](const HttpRequest &req, int status, HttpResponse &resp) {
            handler.refuse(req, status, resp);
        },
        log_http);
    if (!server.started())
        ereport(FATAL, (errmsg("querygate http worker could not start: %s",
                               server.start_error().c_str())));
    server.set_max_body_size(static_cast<size_t>(settings::max_body_size));

    // The latch, postmaster death, libmicrohttpd's epoll fd (its connections), and the shared
    // listening socket, which this worker accepts from itself, one connection per wakeup.
    WaitEventSet *events = CreateWaitEventSet(TopMemoryContext, 4);
    AddWaitEventToSet(events, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
    AddWaitEventToSet(events, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
    AddWaitEventToSet(events, WL_SOCKET_READABLE, server.epoll_fd(), nullptr, nullptr);
    const int listening =
        AddWaitEventToSet(events, WL_SOCKET_READABLE, server.listen_fd(), nullptr, nullptr);

    for (;;) {
        WaitEvent fired[4];
        int n = WaitEventSetWait(events, server.timeout_ms(), fired, 4, PG_WAIT_EXTENSION);
        for (int i = 0; i < n; i++) {
            if (fired[i].events & WL_LATCH_SET)
                ResetLatch(MyLatch);
            if (fired[i].pos == listening)
                (void)server.accept_one();
        }
        // A cancel (pg_cancel_backend, or a statement timeout that fired just as a call ended) has
        // nothing to cancel between calls; left pending, it would raise an error here, which a
        // background worker turns into FATAL.
        QueryCancelPending = false;
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
            settings::generation++;
            server.set_max_body_size(static_cast<size_t>(settings::max_body_size));
        }
        server.run();
    }
}

} // namespace

void querygate_http_worker_main(Datum main_arg)
{
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();

    BackgroundWorkerInitializeConnection(settings::database, nullptr, 0);
    pgstat_report_appname("querygate");
    if (listen_socket::shared_fd < 0)
        ereport(FATAL, (errmsg("querygate http worker has no listening socket")));

    try {
        serve();
    } catch (const std::exception &e) {
        // Nothing a caller sends should get here (callbacks catch); if it does, this worker ends
        // with exit code 1, which restarts it alone, not every connection of the server.
        ereport(LOG, (errmsg("querygate http worker stopping: %s", e.what())));
    }
    proc_exit(1);
}
