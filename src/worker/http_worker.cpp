// The HTTP worker process: one thread, one event loop, the worker_spi way.
//
// libmicrohttpd runs without a thread of its own (external epoll). Its epoll fd sits in a
// WaitEventSet beside the process latch and postmaster death; MHD_get_timeout bounds the wait; and
// MHD_run, called on this thread, runs every request callback, so SPI and every other PostgreSQL
// call happen here only. Signals as worker_spi handles them: SIGHUP sets a flag and the latch and
// the loop reloads settings. SIGTERM (a server stopping, or pg_terminate_backend) cancels the
// running call, which is answered 503 shutting_down (src/call/stop_request.hpp); the worker
// then drains: it accepts nothing more, refuses what arrives, closes its connections between
// requests, sends what it has answered, and exits (exit code 1, so that after
// pg_terminate_backend it starts again). A worker serves one call at a time; between calls it
// accepts new connections when it holds the fewest (src/http/accept_gate.hpp). After a round that
// answered something it may look for the next request for a few microseconds before it sleeps
// (querygate.busy_poll; src/http/busy_poll.hpp says when and why).
#include "pg/pg_headers.hpp"
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

#include <sched.h>

#include "http/accept_gate.hpp"
#include "http/busy_poll.hpp"
#include "http/http_server.hpp"
#include "http/listen_socket.hpp"
#include "common/log_throttle.hpp"
#include "shmem/event_ring.hpp"
#include "call/query_runner.hpp"
#include "shmem/stat_table.hpp"
#include "call/stop_request.hpp"
#include "pg/pg_guard.hpp"
#include "worker/access_log_sink.hpp"
#include "shmem/connection_counts.hpp"
#include "worker/event_pump.hpp"
#include "worker/group_commit.hpp"
#include "worker/tls_files.hpp"
#include "api/request_handler.hpp"
#include "common/settings.hpp"
#include "worker/stats_reporter.hpp"
#include "worker/wal_flusher.hpp"
#include "shmem/worker_load.hpp"
#include "worker/call_helpers.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

extern "C" {
PGDLLEXPORT void querygate_http_worker_main(Datum main_arg);
}

namespace {

// How long a stopping worker waits at most for its answers to go out (a caller that reads its
// answer slowly); its running call was cancelled at once.
constexpr std::chrono::seconds drain_time{5};

// What the HTTP server kept to log (http_server.hpp), logged after a round: libmicrohttpd's
// messages are about callers' requests, so they go through the throttle (log_throttle.hpp: the
// first of a minute at LOG, the rest at DEBUG1 and counted in one LOG line a minute); a fault a
// callback of ours caught is a bug of ours, logged at LOG always.
class HttpLog {
  public:
    void write(HttpServer &server, LogThrottle::Clock::time_point now)
    {
        if (server.take_log(lines_)) {
            for (const std::string &m : lines_.faults)
                ereport(LOG, (errmsg("querygate http: %s", m.c_str())));
            for (const std::string &m : lines_.library)
                ereport(throttle_.note(m, now) ? LOG : DEBUG1,
                        (errmsg("querygate http: %s", m.c_str())));
            if (lines_.left_out > 0) {
                const std::string m = std::to_string(lines_.left_out) +
                                      " messages of one round not kept (more than " +
                                      std::to_string(HttpServer::max_log_lines) + ")";
                ereport(throttle_.note(m, now) ? LOG : DEBUG1,
                        (errmsg("querygate http: %s", m.c_str())));
            }
        }
        if (throttle_.summary_due(now, summary_))
            ereport(LOG, (errmsg("querygate http: %s", summary_.c_str())));
    }
    long ms_until_due(LogThrottle::Clock::time_point now) const
    {
        return throttle_.ms_until_summary(now);
    }

  private:
    HttpServer::LogLines lines_;
    LogThrottle throttle_;
    std::string summary_;
};

// Takes the pending connection if this worker should (src/http/accept_gate.hpp), and publishes its
// connection count for the other workers either way.
void take_connection(HttpServer &server, AcceptGate &gate)
{
    const auto now = AcceptGate::Clock::now();
    const unsigned mine = server.connections();
    worker_load::publish(mine);
    if (!gate.should_accept(mine, worker_load::fewest(), now))
        return;
    switch (server.accept_one()) {
    case HttpServer::Accepted::one:
        worker_load::publish(server.connections());
        break;
    case HttpServer::Accepted::none:
        break;
    case HttpServer::Accepted::out_of_resources: {
        gate.out_of_resources(now);
        // Once a minute at most: the condition can last, and the log must not grow with it.
        static AcceptGate::Clock::time_point last_logged{};
        if (last_logged == AcceptGate::Clock::time_point{} ||
            now - last_logged >= std::chrono::minutes(1)) {
            last_logged = now;
            ereport(LOG, (errmsg("querygate http worker cannot accept connections: %s",
                                 strerror(server.accept_error())),
                          errhint("Raise the server's open-file limit (ulimit -n, LimitNOFILE), "
                                  "or lower the number of client connections.")));
        }
        break;
    }
    }
}

// The earlier of two wait timeouts in ms, where -1 means none.
long sooner(long a, long b)
{
    return a < 0 ? b : b < 0 ? a : std::min(a, b);
}

// Looks for ready events for up to querygate.busy_poll microseconds, yielding the CPU between
// looks (sched_yield: what waits for this core gets it meanwhile); 0 when none came, or once
// another worker woke and left no core to spare. When to look is BusyPoll's decision
// (src/http/busy_poll.hpp).
int poll_briefly(WaitEventSet *set, WaitEvent *fired, int nfired, int cores)
{
    // A window of 0 (the setting turned off by a reload since the decision) looks no time at all.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(settings::busy_poll);
    while (std::chrono::steady_clock::now() < until) {
        sched_yield();
        if (int n = WaitEventSetWait(set, 0, fired, nfired, PG_WAIT_EXTENSION))
            return n;
        if (!BusyPoll::core_to_spare(worker_load::awake(), cores))
            return 0;
    }
    return 0;
}

// The loop. Errors outside a call (a failed wait) are promoted to FATAL by PostgreSQL in a
// background worker, which exits this process only; the postmaster starts a new one.
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
    // With querygate.ssl on, TLS or nothing: a worker whose certificate or key cannot be used
    // serves no plain HTTP in their place. It says why once and exits with code 0, which
    // PostgreSQL takes as done (a background worker that exits 0 is not started again), so the
    // log does not fill with the same failure every second; the settings need a restart anyway.
    // A caller that hangs up while its answer is sent must not end the process: PostgreSQL's
    // background workers ignore SIGPIPE already, and the server relies on it (http_server.hpp).
    pqsignal(SIGPIPE, SIG_IGN);
    HttpServer::Tls tls;
    if (settings::ssl) {
        std::string problem;
        if (!tls_files::load(tls, problem)) {
            ereport(LOG,
                    (errmsg("querygate http worker does not serve: querygate.ssl is on, but %s",
                            problem.c_str()),
                     errhint("Fix querygate.ssl_cert_file and querygate.ssl_key_file (or "
                             "PostgreSQL's ssl_cert_file and ssl_key_file), then restart.")));
            proc_exit(0);
        }
    }
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
    server.set_max_body_size(static_cast<size_t>(settings::max_body_size));
    server.set_timeouts(settings::request_timeout, static_cast<unsigned>(settings::idle_timeout));
    const auto set_overload = [&server, &handler] {
        server.set_overload(
            std::chrono::milliseconds(settings::overload_target),
            std::chrono::milliseconds(settings::overload_interval),
            [&handler](const HttpRequest &req, std::chrono::microseconds waited,
                       HttpResponse &resp) { handler.refuse_overloaded(req, waited, resp); });
    };
    set_overload();
    // GET /events: the streams this worker holds, fed after each round.
    event_stream::Streams streams;
    handler.set_event_streams(&streams);
    EventPump events(runner, server, streams);
    long events_due = -1;
    server.set_hold([&group_commit] { return group_commit.hold_until(); });
    server.set_stop_request([] { return stop_request::requested(); });
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

    // Two sets of events: the latch, postmaster death and libmicrohttpd's epoll fd (its
    // connections) in both, and the shared listening socket in one. The worker waits on the set
    // without the socket while the accept gate leaves pending connections to other workers.
    WaitEventSet *quiet = CreateWaitEventSet(TopMemoryContext, 3);
    WaitEventSet *accepting = CreateWaitEventSet(TopMemoryContext, 4);
    for (WaitEventSet *set : {quiet, accepting}) {
        AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
        AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
        AddWaitEventToSet(set, WL_SOCKET_READABLE, server.epoll_fd(), nullptr, nullptr);
    }
    const int listening =
        AddWaitEventToSet(accepting, WL_SOCKET_READABLE, server.listen_fd(), nullptr, nullptr);
    AcceptGate gate;
    StatsReporter stats;
    HttpLog http_log;
    // Whether the WAL flusher knows this worker holds answers (it then sets the latch after each
    // flush); told only on a change.
    bool waiting = false;
    auto set_waiting = [&waiting](bool now) {
        if (now != waiting)
            wal_flusher::set_waiting(waiting = now);
    };

    stat_table::by_rounds(); // flushed at each round's end, below
    BusyPoll busy_poll;
    bool look = false; // look for the next request before sleeping
    const int cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    worker_load::Activity activity; // this worker's totals (querygate.stat_workers)
    AcceptGate::Clock::time_point stop_by{};
    for (;;) {
        const auto now = AcceptGate::Clock::now();
        const bool stopping = server.stopping();
        if (stopping && stop_by == AcceptGate::Clock::time_point{})
            stop_by = now + drain_time;
        const bool watching = !stopping && gate.watching(now);
        // Answers held for a flush: the flusher sets the latch once it has flushed; the short
        // timeout only bounds a wake-up lost to a flush done by someone else.
        long timeout = server.timeout_ms();
        if (server.holding())
            timeout = sooner(timeout, 10);
        // Helpers set the latch when a result is in, and their exit does too (bgw_notify_pid);
        // the timeout only bounds a wake-up lost anyway.
        if (helpers.busy() > 0)
            timeout = sooner(timeout, 100);
        timeout = sooner(timeout, stats.report(now));
        timeout = sooner(timeout, http_log.ms_until_due(now));
        timeout = sooner(timeout, events_due);
        if (stopping)
            timeout = sooner(timeout, 50); // bounds the drain
        else if (!watching)
            timeout = sooner(timeout, gate.ms_until_watching(now));
        WaitEvent fired[4];
        WaitEventSet *set = watching ? accepting : quiet;
        int n = 0;
        if (look && timeout != 0) {
            n = poll_briefly(set, fired, 4, cores);
            busy_poll.looked(n > 0);
        }
        if (n == 0) {
            const long wait = events.may_sleep() ? timeout : 0;
            if (wait != 0) // asleep, for the other workers' looks
                worker_load::set_awake(false);
            n = WaitEventSetWait(set, wait, fired, 4, PG_WAIT_EXTENSION);
            if (wait != 0)
                worker_load::set_awake(true);
        }
        // Busy from here to the round's end; the wait above (and a brief poll) is idle time.
        const auto woke = AcceptGate::Clock::now();
        for (int i = 0; i < n; i++) {
            if (fired[i].events & WL_LATCH_SET)
                ResetLatch(MyLatch);
            if (watching && fired[i].pos == listening)
                take_connection(server, gate);
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
            server.set_timeouts(settings::request_timeout,
                                static_cast<unsigned>(settings::idle_timeout));
            set_overload();
        }
        group_commit.set_connections(server.connections());
        const std::uint64_t answered = server.answered();
        server.run();
        // Results of writes handed to helpers: their answers go out in the same round.
        bool finished = false;
        helpers.collect([&](std::uint64_t token, CallResult &result) {
            HttpResponse response;
            if (handler.finish(token, result, response))
                finished |= server.answer_later(token, std::move(response));
        });
        if (finished)
            server.run();
        look = settings::busy_poll > 0 && BusyPoll::core_to_spare(worker_load::awake(), cores) &&
               busy_poll.should_look(server.answered() != answered);
        // Group commit: the round's writes go to the WAL flusher together (when none runs,
        // end_round flushed them itself); answers whose writes are durable go out now. The
        // flusher is told this worker waits before the flushed position is read, so that a flush
        // finishing in between still wakes it.
        group_commit.end_round();
        if (server.holding()) {
            set_waiting(true);
            if (server.release_held(group_commit.flushed())) {
                server.run(); // sends them, and serves what came meanwhile
                group_commit.end_round();
            }
        }
        if (!server.holding())
            set_waiting(false);
        event_ring::flush(); // the round's run events, before any stream reads the ring
        stat_table::flush(); // and its calls' counts
        events_due = events.pump(AcceptGate::Clock::now(), stopping);
        worker_load::publish(server.connections());
        const auto round_end = AcceptGate::Clock::now();
        http_log.write(server, round_end);
        activity.requests = handler.counts().answered;
        activity.errors = handler.counts().errors;
        activity.in_flight = static_cast<unsigned>(server.waiting_later() + server.held());
        activity.connections_refused = server.refused_connections();
        activity.connections_timed_out = server.timed_out_connections();
        activity.busy_us += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(round_end - woke).count());
        worker_load::publish(activity);
        if (stopping) {
            server.close_waiting();
            const bool drained =
                server.connections() == 0 && helpers.busy() == 0 && !server.holding();
            if (drained || round_end >= stop_by)
                return; // what is still open is closed as the server is destroyed
        }
    }
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
