// The HTTP worker's event loop, a round at a time: see event_loop.hpp.
#include "worker/event_loop.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/wait_event.h"
}

#include <sched.h>

#include "common/log_throttle.hpp"
#include "common/settings.hpp"
#include "http/accept_gate.hpp"
#include "http/busy_poll.hpp"
#include "http/http_server.hpp"
#include "api/request_handler.hpp"
#include "shmem/event_ring.hpp"
#include "shmem/stat_table.hpp"
#include "shmem/worker_load.hpp"
#include "worker/call_helpers.hpp"
#include "worker/event_pump.hpp"
#include "worker/group_commit.hpp"
#include "worker/stats_reporter.hpp"
#include "worker/wal_flusher.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unistd.h>

namespace event_loop {

void configure(HttpServer &server, RequestHandler &handler)
{
    server.set_max_body_size(static_cast<size_t>(settings::max_body_size));
    server.set_timeouts(settings::request_timeout, static_cast<unsigned>(settings::idle_timeout));
    server.set_overload(
        std::chrono::milliseconds(settings::overload_target),
        std::chrono::milliseconds(settings::overload_interval),
        [&handler](const HttpRequest &req, std::chrono::microseconds waited, HttpResponse &resp) {
            handler.refuse_overloaded(req, waited, resp);
        });
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

// The loop's rounds (event_loop.hpp).
class Rounds {
  public:
    using Clock = AcceptGate::Clock;

    Rounds(HttpServer &server, RequestHandler &handler, CallHelpers &helpers,
           GroupCommit &group_commit, EventPump &events);
    // One round; false once a stopping worker is done.
    bool next();

  private:
    long wait_timeout(Clock::time_point now, bool stopping, bool watching);
    int wait(WaitEvent *fired, int nfired, long timeout, bool watching);
    void take_events(const WaitEvent *fired, int n, bool watching);
    void between_calls();
    void serve_requests();
    void send_flushed();
    void feed_streams(bool stopping);
    void publish_activity(Clock::time_point woke, Clock::time_point round_end);
    bool drained(bool stopping, Clock::time_point round_end);
    void set_waiting(bool now);

    HttpServer &server_;
    RequestHandler &handler_;
    CallHelpers &helpers_;
    GroupCommit &group_commit_;
    EventPump &events_;
    // Two sets of events: the latch, postmaster death and libmicrohttpd's epoll fd (its
    // connections) in both, and the shared listening socket in one. The worker waits on the set
    // without the socket while the accept gate leaves pending connections to other workers.
    WaitEventSet *quiet_ = nullptr;
    WaitEventSet *accepting_ = nullptr;
    int listening_ = -1;
    AcceptGate gate_;
    StatsReporter stats_;
    HttpLog http_log_;
    long events_due_ = -1; // ms until the event streams need feeding; -1: not before an event
    // Whether the WAL flusher knows this worker holds answers (it then sets the latch after each
    // flush); told only on a change.
    bool waiting_ = false;
    BusyPoll busy_poll_;
    bool look_ = false; // look for the next request before sleeping
    const int cores_;
    worker_load::Activity activity_; // this worker's totals (querygate.stat_workers)
    Clock::time_point stop_by_{};
};

Rounds::Rounds(HttpServer &server, RequestHandler &handler, CallHelpers &helpers,
               GroupCommit &group_commit, EventPump &events)
    : server_(server), handler_(handler), helpers_(helpers), group_commit_(group_commit),
      events_(events), cores_(static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))))
{
    quiet_ = CreateWaitEventSet(TopMemoryContext, 3);
    accepting_ = CreateWaitEventSet(TopMemoryContext, 4);
    for (WaitEventSet *set : {quiet_, accepting_}) {
        AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
        AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
        AddWaitEventToSet(set, WL_SOCKET_READABLE, server.epoll_fd(), nullptr, nullptr);
    }
    listening_ =
        AddWaitEventToSet(accepting_, WL_SOCKET_READABLE, server.listen_fd(), nullptr, nullptr);
    stat_table::by_rounds(); // flushed at each round's end (feed_streams)
}

bool Rounds::next()
{
    const auto now = Clock::now();
    const bool stopping = server_.stopping();
    if (stopping && stop_by_ == Clock::time_point{})
        stop_by_ = now + drain_time;
    const bool watching = !stopping && gate_.watching(now);
    WaitEvent fired[4];
    const int n = wait(fired, 4, wait_timeout(now, stopping, watching), watching);
    // Busy from here to the round's end; the wait above (and a brief poll) is idle time.
    const auto woke = Clock::now();
    take_events(fired, n, watching);
    between_calls();
    serve_requests();
    send_flushed();
    feed_streams(stopping);
    const auto round_end = Clock::now();
    publish_activity(woke, round_end);
    return !drained(stopping, round_end);
}

// How long the round may wait for something to happen, in ms (-1: no limit).
long Rounds::wait_timeout(Clock::time_point now, bool stopping, bool watching)
{
    // Answers held for a flush: the flusher sets the latch once it has flushed; the short
    // timeout only bounds a wake-up lost to a flush done by someone else.
    long timeout = server_.timeout_ms();
    if (server_.holding())
        timeout = sooner(timeout, 10);
    // Helpers set the latch when a result is in, and their exit does too (bgw_notify_pid); the
    // timeout only bounds a wake-up lost anyway.
    if (helpers_.busy() > 0)
        timeout = sooner(timeout, 100);
    timeout = sooner(timeout, stats_.report(now));
    timeout = sooner(timeout, http_log_.ms_until_due(now));
    timeout = sooner(timeout, events_due_);
    if (stopping)
        timeout = sooner(timeout, 50); // bounds the drain
    else if (!watching)
        timeout = sooner(timeout, gate_.ms_until_watching(now));
    return timeout;
}

// Waits for events (a brief look first, when busy_poll says so): how many fired.
int Rounds::wait(WaitEvent *fired, int nfired, long timeout, bool watching)
{
    WaitEventSet *set = watching ? accepting_ : quiet_;
    int n = 0;
    if (look_ && timeout != 0) {
        n = poll_briefly(set, fired, nfired, cores_);
        busy_poll_.looked(n > 0);
    }
    if (n == 0) {
        const long wait = events_.may_sleep() ? timeout : 0;
        if (wait != 0) // asleep, for the other workers' looks
            worker_load::set_awake(false);
        n = WaitEventSetWait(set, wait, fired, nfired, PG_WAIT_EXTENSION);
        if (wait != 0)
            worker_load::set_awake(true);
    }
    return n;
}

// The latch reset; a pending connection taken when the accept gate lets this worker.
void Rounds::take_events(const WaitEvent *fired, int n, bool watching)
{
    for (int i = 0; i < n; i++) {
        if (fired[i].events & WL_LATCH_SET)
            ResetLatch(MyLatch);
        if (watching && fired[i].pos == listening_)
            take_connection(server_, gate_);
    }
}

// What must not outlive a call, cleared; the interrupts and a reload of the settings, taken.
void Rounds::between_calls()
{
    // A cancel (pg_cancel_backend, or a statement timeout that fired just as a call ended) has
    // nothing to cancel between calls; left pending, it would raise an error here, which a
    // background worker turns into FATAL.
    QueryCancelPending = false;
    CHECK_FOR_INTERRUPTS();
    if (ConfigReloadPending) {
        ConfigReloadPending = false;
        ProcessConfigFile(PGC_SIGHUP);
        settings::generation++;
        configure(server_, handler_);
    }
}

// The requests that arrived, served; the helpers' results answered in the same round.
void Rounds::serve_requests()
{
    group_commit_.set_connections(server_.connections());
    const std::uint64_t answered = server_.answered();
    server_.run();
    // Results of writes handed to helpers: their answers go out in the same round.
    bool finished = false;
    helpers_.collect([&](std::uint64_t token, CallResult &result) {
        HttpResponse response;
        if (handler_.finish(token, result, response))
            finished |= server_.answer_later(token, std::move(response));
    });
    if (finished)
        server_.run();
    look_ = settings::busy_poll > 0 && BusyPoll::core_to_spare(worker_load::awake(), cores_) &&
            busy_poll_.should_look(server_.answered() != answered);
}

// Group commit: the round's writes go to the WAL flusher together (when none runs, end_round
// flushed them itself); answers whose writes are durable go out now. The flusher is told this
// worker waits before the flushed position is read, so that a flush finishing in between still
// wakes it.
void Rounds::send_flushed()
{
    group_commit_.end_round();
    if (server_.holding()) {
        set_waiting(true);
        if (server_.release_held(group_commit_.flushed())) {
            server_.run(); // sends them, and serves what came meanwhile
            group_commit_.end_round();
        }
    }
    if (!server_.holding())
        set_waiting(false);
}

void Rounds::set_waiting(bool now)
{
    if (now != waiting_)
        wal_flusher::set_waiting(waiting_ = now);
}

// The round's run events and calls' counts, then the streams fed from the ring.
void Rounds::feed_streams(bool stopping)
{
    event_ring::flush(); // the round's run events, before any stream reads the ring
    stat_table::flush(); // and its calls' counts
    events_due_ = events_.pump(Clock::now(), stopping);
    worker_load::publish(server_.connections());
}

// What the HTTP server kept to log, and this worker's totals for querygate.stat_workers.
void Rounds::publish_activity(Clock::time_point woke, Clock::time_point round_end)
{
    http_log_.write(server_, round_end);
    activity_.requests = handler_.counts().answered;
    activity_.errors = handler_.counts().errors;
    activity_.in_flight = static_cast<unsigned>(server_.waiting_later() + server_.held());
    activity_.connections_refused = server_.refused_connections();
    activity_.connections_timed_out = server_.timed_out_connections();
    activity_.busy_us += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(round_end - woke).count());
    worker_load::publish(activity_);
}

// A stopping worker closes its connections between requests, and is done once none is left, no
// helper runs a call of its and no answer is held, or once its time to drain has passed (what is
// still open is closed as the server is destroyed).
bool Rounds::drained(bool stopping, Clock::time_point round_end)
{
    if (!stopping)
        return false;
    server_.close_waiting();
    const bool drained = server_.connections() == 0 && helpers_.busy() == 0 && !server_.holding();
    return drained || round_end >= stop_by_;
}

} // namespace

void run(HttpServer &server, RequestHandler &handler, CallHelpers &helpers,
         GroupCommit &group_commit, EventPump &events)
{
    Rounds rounds(server, handler, helpers, group_commit, events);
    while (rounds.next()) {
    }
}

} // namespace event_loop
