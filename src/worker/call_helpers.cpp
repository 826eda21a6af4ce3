// Helpers (see call_helpers.hpp): the worker's pool, and the helper process's main.
#include "worker/call_helpers.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"
}

#include "call/client_watch.hpp"
#include "call/query_runner.hpp"
#include "call/stop_request.hpp"
#include "common/call_codec.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"
#include "worker/group_commit.hpp"
#include "worker/stats_reporter.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <poll.h>
#include <string>

extern "C" {
PGDLLEXPORT void querygate_helper_main(Datum main_arg);
}

namespace {

// Each way. A request is its key, parameters and body (up to querygate.max_body_size), a result
// its page of rows: most fit at once; longer ones go over several rounds.
constexpr Size queue_size = 64 * 1024;

shm_mq *requests_queue(dsm_segment *segment)
{
    return static_cast<shm_mq *>(dsm_segment_address(segment));
}

shm_mq *results_queue(dsm_segment *segment)
{
    return reinterpret_cast<shm_mq *>(static_cast<char *>(dsm_segment_address(segment)) +
                                      queue_size);
}

// After the queues: the worker's word to the helper. Calls are numbered by both sides as they go
// (the n-th request given, the n-th read); the worker stores a call's number to cancel it, so a
// word stored for a call that already ended never matches a later one.
struct Control {
    std::atomic<std::uint64_t> cancel;
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "read in a signal handler, and shared between processes");
constexpr Size segment_size = 2 * queue_size + sizeof(Control);

Control *control_of(dsm_segment *segment)
{
    return reinterpret_cast<Control *>(static_cast<char *>(dsm_segment_address(segment)) +
                                       2 * queue_size);
}

// How often the worker looks at the sockets of the calls it has out.
constexpr auto watch_interval = std::chrono::milliseconds(250);

CallResult failed(ErrorCode code, const char *message)
{
    CallResult r;
    r.error = api_errors::make(code, message);
    return r;
}

} // namespace

struct CallHelpers::Helper {
    dsm_segment *segment = nullptr;
    BackgroundWorkerHandle *handle = nullptr;
    shm_mq_handle *to = nullptr;   // requests, this worker the sender
    shm_mq_handle *from = nullptr; // results, this worker the receiver
    bool busy = false;             // a call is handed to it and its result not yet back
    bool sending = false;          // `outgoing` is not all in the queue yet
    bool gone = false;             // exited: to be detached and forgotten
    std::uint64_t token = 0;
    std::string outgoing;    // the request being sent: the same bytes until it is all in
    PoolShare share;         // whose call it runs
    int client_fd = -1;      // and that caller's socket
    std::uint64_t calls = 0; // requests given: the running call's number (Control)

    // Sends (more of) `outgoing` without waiting.
    shm_mq_result send()
    {
        shm_mq_result r = SHM_MQ_DETACHED;
        pg::guard(
            [this, &r] { r = shm_mq_send(to, outgoing.size(), outgoing.data(), true, true); });
        return r;
    }
    // Whether the helper ever attached as the results' sender: one that did not never read a
    // request, so nothing of its call ran.
    bool started_serving() const { return shm_mq_get_sender(results_queue(segment)) != nullptr; }
};

CallHelpers::CallHelpers() = default;

CallHelpers::~CallHelpers()
{
    // Detaching ends the helpers (their queues report it); at the worker's exit PostgreSQL
    // detaches every segment anyway.
    for (auto &h : helpers_)
        if (h->segment != nullptr) {
            dsm_segment *segment = h->segment;
            try {
                pg::guard([segment] { dsm_detach(segment); });
            } catch (...) {
            }
        }
}

unsigned CallHelpers::busy() const
{
    return static_cast<unsigned>(queue_.size()) +
           static_cast<unsigned>(std::count_if(helpers_.begin(), helpers_.end(),
                                               [](const auto &h) { return h->busy; }));
}

CallHelpers::Helper *CallHelpers::start_helper()
{
    auto helper = std::make_unique<Helper>();
    helpers_.reserve(helpers_.size() + 1);
    Helper *h = helper.get();
    bool no_slot = false;
    try {
        pg::guard([h, &no_slot] {
            MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
            h->segment = dsm_create(segment_size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
            if (h->segment == nullptr) {
                MemoryContextSwitchTo(old);
                return;
            }
            dsm_pin_mapping(h->segment); // this process's, for its life, not a transaction's
            new (control_of(h->segment)) Control{};
            shm_mq *to = shm_mq_create(requests_queue(h->segment), queue_size);
            shm_mq_set_sender(to, MyProc);
            shm_mq *from = shm_mq_create(results_queue(h->segment), queue_size);
            shm_mq_set_receiver(from, MyProc);

            BackgroundWorker worker;
            memset(&worker, 0, sizeof(worker));
            worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
            worker.bgw_start_time = BgWorkerStart_ConsistentState;
            worker.bgw_restart_time = BGW_NEVER_RESTART;
            snprintf(worker.bgw_library_name, BGW_MAXLEN, "querygate");
            snprintf(worker.bgw_function_name, BGW_MAXLEN, "querygate_helper_main");
            snprintf(worker.bgw_name, BGW_MAXLEN, "querygate helper");
            snprintf(worker.bgw_type, BGW_MAXLEN, "querygate helper");
            worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(h->segment));
            worker.bgw_notify_pid = MyProcPid; // its start and exit set this process's latch
            // Not waited for: the first request waits in its queue until the helper reads it
            // (or, should it never start, goes to another helper: collect()).
            if (!RegisterDynamicBackgroundWorker(&worker, &h->handle)) {
                no_slot = true;
                dsm_detach(h->segment);
                h->segment = nullptr;
                MemoryContextSwitchTo(old);
                return;
            }
            h->to = shm_mq_attach(to, h->segment, h->handle);
            h->from = shm_mq_attach(from, h->segment, h->handle);
            MemoryContextSwitchTo(old);
        });
    } catch (const pg::PgError &e) {
        ereport(LOG, (errmsg("querygate: could not start a helper: %s", e.message.c_str())));
        if (h->segment != nullptr) {
            dsm_segment *segment = h->segment;
            pg::guard([segment] { dsm_detach(segment); });
        }
        return nullptr;
    }
    if (h->segment == nullptr) {
        if (no_slot && !told_no_slot_) {
            told_no_slot_ = true;
            ereport(LOG, (errmsg("querygate: no background worker slot is free for a helper; "
                                 "this worker's calls wait for its helpers, or run in "
                                 "the worker while it has none"),
                          errhint("Raise max_worker_processes (a restart) for more helpers.")));
        }
        return nullptr;
    }
    helpers_.push_back(std::move(helper));
    return h;
}

CallHelpers::Helper *CallHelpers::idle_helper()
{
    for (auto &p : helpers_)
        if (!p->busy && !p->gone)
            return p.get();
    return nullptr;
}

bool CallHelpers::give(Helper &h, Queued &call)
{
    h.outgoing.swap(call.request);
    shm_mq_result r = SHM_MQ_DETACHED;
    try {
        r = h.send();
    } catch (...) {
        // Part of the message may be in the queue: nothing more may follow it there.
        h.gone = true;
        throw;
    }
    if (r == SHM_MQ_DETACHED) {
        // Exited while idle (or before attaching): not all of the request went in, so nothing of
        // it ran. The request goes back to the caller; the helper is forgotten at collect().
        h.outgoing.swap(call.request);
        h.gone = true;
        return false;
    }
    h.busy = true;
    h.sending = r == SHM_MQ_WOULD_BLOCK;
    h.token = call.token;
    h.share = std::move(call.share);
    h.client_fd = call.client_fd;
    h.calls++;
    return true;
}

// How many helpers this worker may start: querygate.helpers, but no more than its share of
// the background worker slots the workers, the WAL flusher and the writer leave (one more is kept
// for PostgreSQL's logical replication launcher). Without the share, the first worker to write
// would take every slot and the others would run their writes themselves, each write stopping them.
std::size_t CallHelpers::most() const
{
    const int reserved = settings::workers + 3;
    const int share =
        std::max(1, (max_worker_processes - reserved) / std::max(1, settings::workers));
    return static_cast<std::size_t>(std::min(settings::helpers, share));
}

std::size_t CallHelpers::share_cap() const
{
    return pool_share_cap(most(), settings::caller_share);
}

std::size_t CallHelpers::held_by_caller(const std::string &caller) const
{
    return static_cast<std::size_t>(
        std::count_if(helpers_.begin(), helpers_.end(),
                      [&caller](const auto &h) { return h->busy && h->share.caller == caller; }));
}

bool CallHelpers::within_share(const PoolShare &share) const
{
    std::size_t caller = 0, policy = 0;
    for (const auto &h : helpers_)
        if (h->busy) {
            caller += h->share.caller == share.caller;
            policy += h->share.policy == share.policy;
        }
    const std::size_t cap = share_cap();
    return caller < cap && policy < cap;
}

CallHelpers::Helper *CallHelpers::free_helper()
{
    Helper *h = idle_helper();
    // Not retried for a second after a start failed: a busy worker would otherwise ask the
    // postmaster on every call.
    if (h == nullptr && helpers_.size() < most() &&
        std::chrono::steady_clock::now() >= retry_after_) {
        h = start_helper();
        if (h == nullptr)
            retry_after_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    return h;
}

bool CallHelpers::hand_off(std::uint64_t token, const CallRequest &call, const PoolShare &share)
{
    if (settings::helpers <= 0)
        return false;
    Queued waiting{token, std::string(), share, call.client_fd};
    call_codec::encode(call, waiting.request);
    queue_.reserve(queue_.size() + 1); // may throw: before the call is anyone's
    if (within_share(share))
        for (Helper *h = free_helper(); h != nullptr; h = free_helper())
            if (give(*h, waiting))
                return true;
    // No helper free to it: the call waits for one, unless this worker has none running at all
    // (none could start), when it runs here.
    if (std::none_of(helpers_.begin(), helpers_.end(), [](const auto &p) { return !p->gone; }))
        return false;
    queue_.push_back(std::move(waiting));
    return true;
}

void CallHelpers::dispatch()
{
    while (!queue_.empty()) {
        // The first waiting call of the callers holding the fewest helpers, among those within
        // their shares.
        std::size_t best = queue_.size();
        std::size_t fewest = std::numeric_limits<std::size_t>::max();
        for (std::size_t i = 0; i < queue_.size(); i++) {
            const std::size_t held = held_by_caller(queue_[i].share.caller);
            if (held < fewest && within_share(queue_[i].share)) {
                best = i;
                fewest = held;
            }
        }
        if (best == queue_.size())
            return;
        Helper *h = free_helper();
        if (h == nullptr)
            return;
        if (give(*h, queue_[best]))
            queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(best));
    }
}

void CallHelpers::watch_callers(const Done &done)
{
    const auto now = std::chrono::steady_clock::now();
    if (now < next_watch_)
        return;
    next_watch_ = now + watch_interval;
    std::vector<pollfd> fds;
    fds.reserve(helpers_.size() + queue_.size());
    for (const auto &h : helpers_)
        if (h->busy && !h->gone && h->client_fd >= 0)
            fds.push_back(pollfd{h->client_fd, POLLRDHUP, 0});
    for (const Queued &q : queue_)
        if (q.client_fd >= 0)
            fds.push_back(pollfd{q.client_fd, POLLRDHUP, 0});
    if (fds.empty() || poll(fds.data(), fds.size(), 0) <= 0)
        return;
    const auto hung_up = [&fds](int fd) {
        for (const pollfd &p : fds)
            if (p.fd == fd)
                return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
        return false;
    };
    // Running: the helper cancels it at its next look (its answer, 499, comes back as any other).
    for (const auto &h : helpers_)
        if (h->busy && !h->gone && h->client_fd >= 0 && hung_up(h->client_fd))
            control_of(h->segment)->cancel.store(h->calls, std::memory_order_relaxed);
    // Waiting: answered now, without running.
    std::vector<Queued> kept;
    kept.reserve(queue_.size());
    std::vector<std::uint64_t> gone;
    for (Queued &q : queue_)
        if (q.client_fd >= 0 && hung_up(q.client_fd))
            gone.push_back(q.token);
        else
            kept.push_back(std::move(q));
    queue_.swap(kept);
    for (std::uint64_t token : gone) {
        CallResult result = failed(error_code::client_closed,
                                   "the caller closed the connection before the call ran");
        done(token, result);
    }
}

void CallHelpers::collect(const Done &done)
{
    for (auto &p : helpers_) {
        Helper &h = *p;
        if (!h.busy)
            continue;
        CallResult result;
        if (h.sending) {
            const shm_mq_result r = h.send();
            if (r == SHM_MQ_WOULD_BLOCK)
                continue;
            h.sending = false;
            if (r == SHM_MQ_DETACHED) {
                // Gone before the request was all in: it cannot have run. Back in line, first.
                h.gone = true;
                h.busy = false;
                queue_.insert(queue_.begin(),
                              Queued{h.token, std::move(h.outgoing), h.share, h.client_fd});
                continue;
            }
        }
        Size size = 0;
        void *data = nullptr;
        shm_mq_result r = SHM_MQ_DETACHED;
        pg::guard([&h, &r, &size, &data] { r = shm_mq_receive(h.from, &size, &data, true); });
        if (r == SHM_MQ_WOULD_BLOCK)
            continue;
        h.busy = false;
        if (r == SHM_MQ_SUCCESS) {
            if (!call_codec::decode(static_cast<const char *>(data), size, result))
                result = failed(error_code::internal_error, "internal error");
        } else {
            h.gone = true;
            if (!h.started_serving()) {
                // It never read the request (it did not start, or ended first): nothing of the
                // call ran, and it waits for another helper, first in line.
                queue_.insert(queue_.begin(),
                              Queued{h.token, std::move(h.outgoing), h.share, h.client_fd});
                continue;
            }
            // It may have committed before it exited: the caller cannot be told either way.
            ereport(LOG, (errmsg("querygate: a helper exited during a call; its outcome "
                                 "is unknown")));
            result = failed(error_code::internal_error, "internal error");
        }
        done(h.token, result);
    }
    watch_callers(done);
    dispatch();
    // With every helper gone, nothing will take them (the next write may start new helpers).
    if (!queue_.empty() &&
        std::none_of(helpers_.begin(), helpers_.end(), [](const auto &p) { return !p->gone; })) {
        std::vector<Queued> orphans;
        orphans.swap(queue_);
        for (Queued &q : orphans) {
            CallResult result = failed(error_code::unavailable,
                                       "no helper could run the call now; nothing of it ran");
            done(q.token, result);
        }
    }
    // Helpers that exited are forgotten; the next write may start new ones.
    for (auto &p : helpers_)
        if (p->gone && p->segment != nullptr) {
            dsm_segment *segment = p->segment;
            p->segment = nullptr;
            pg::guard([segment] { dsm_detach(segment); });
        }
    helpers_.erase(
        std::remove_if(helpers_.begin(), helpers_.end(), [](const auto &p) { return p->gone; }),
        helpers_.end());
}

namespace {

// The helper's loop: a request in, the call run as the worker would run it (without handing it
// off again), its result out. Returns when the worker has detached.
void serve_calls(shm_mq_handle *in, shm_mq_handle *out, const Control *control)
{
    GroupCommit group_commit; // given no connections: every commit waits for its own flush
    QueryRunner runner(group_commit);
    runner.start();
    StatsReporter stats;
    CallRequest call;
    std::string reply;
    std::uint64_t calls = 0; // requests read: the running call's number (Control)
    for (;;) {
        // Waits for the next request as the worker waits for its next event: on the latch (the
        // queue sets it), reporting statistics when due, ending with the postmaster.
        Size size = 0;
        void *data = nullptr;
        shm_mq_result r = SHM_MQ_DETACHED;
        pg::guard([in, &r, &size, &data] { r = shm_mq_receive(in, &size, &data, true); });
        if (r == SHM_MQ_WOULD_BLOCK) {
            // Asked to stop (stop_request.hpp): every request it was sent has been answered.
            if (stop_request::requested())
                return;
            const long timeout = stats.report(StatsReporter::Clock::now());
            (void)WaitLatch(MyLatch,
                            WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (timeout >= 0 ? WL_TIMEOUT : 0),
                            timeout, PG_WAIT_EXTENSION);
            ResetLatch(MyLatch);
            QueryCancelPending = false; // as in the worker: nothing to cancel between calls
            CHECK_FOR_INTERRUPTS();
            continue;
        }
        if (r != SHM_MQ_SUCCESS)
            return; // the worker detached: it exited
        // Settings reloaded while it waited apply to this call, as they would in the worker.
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
            settings::generation++;
        }
        CallResult result;
        // Numbered as the worker numbers it, whether or not it decodes.
        calls++;
        if (call_codec::decode(static_cast<const char *>(data), size, call)) {
            call.limits_charged = true; // the worker charged it and holds its place in flight
            // The worker holds the caller's socket: it stores this call's number if it hangs up.
            client_watch::watch_word(&control->cancel, calls);
            result = runner.run(call);
        } else
            result = failed(error_code::internal_error, "internal error");
        call_codec::encode(result, reply);
        pg::guard(
            [out, &r, &reply] { r = shm_mq_send(out, reply.size(), reply.data(), false, true); });
        if (r != SHM_MQ_SUCCESS)
            return;
    }
}

} // namespace

void querygate_helper_main(Datum main_arg)
{
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    stop_request::install();
    BackgroundWorkerUnblockSignals();

    // The segment outlives this process only while its worker holds it: gone, there is no work.
    dsm_segment *segment = dsm_attach(DatumGetUInt32(main_arg));
    if (segment == nullptr)
        proc_exit(0);
    dsm_pin_mapping(segment);
    shm_mq_set_receiver(requests_queue(segment), MyProc);
    shm_mq_set_sender(results_queue(segment), MyProc);
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    shm_mq_handle *in = shm_mq_attach(requests_queue(segment), segment, nullptr);
    shm_mq_handle *out = shm_mq_attach(results_queue(segment), segment, nullptr);
    MemoryContextSwitchTo(old);

    BackgroundWorkerInitializeConnection(settings::database, nullptr, 0);
    pgstat_report_appname("querygate");

    const pg::EntryState entry = pg::EntryState::save();
    try {
        serve_calls(in, out, control_of(segment));
    } catch (const std::exception &e) {
        // As in the worker: this process ends alone (a call in progress is its worker's 500).
        entry.restore();
        ereport(LOG, (errmsg("querygate helper stopping: %s", e.what())));
        proc_exit(1);
    } catch (...) {
        entry.restore();
        ereport(LOG, (errmsg("querygate helper stopping: an unknown exception")));
        proc_exit(1);
    }
    proc_exit(0);
}
