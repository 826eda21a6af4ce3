// Write helpers (see write_helpers.hpp): the worker's pool, and the helper process's main.
#include "worker/write_helpers.hpp"

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

#include "call/query_runner.hpp"
#include "call/stop_request.hpp"
#include "common/call_codec.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"
#include "worker/group_commit.hpp"
#include "worker/stats_reporter.hpp"

#include <algorithm>
#include <cstring>
#include <string>

extern "C" {
PGDLLEXPORT void querygate_write_helper_main(Datum main_arg);
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

CallResult failed(ErrorCode code, const char *message)
{
    CallResult r;
    r.error = api_errors::make(code, message);
    return r;
}

} // namespace

struct WriteHelpers::Helper {
    dsm_segment *segment = nullptr;
    BackgroundWorkerHandle *handle = nullptr;
    shm_mq_handle *to = nullptr;   // requests, this worker the sender
    shm_mq_handle *from = nullptr; // results, this worker the receiver
    bool busy = false;             // a call is handed to it and its result not yet back
    bool sending = false;          // `outgoing` is not all in the queue yet
    bool gone = false;             // exited: to be detached and forgotten
    std::uint64_t token = 0;
    std::string outgoing; // the request being sent: the same bytes until it is all in

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

WriteHelpers::WriteHelpers() = default;

WriteHelpers::~WriteHelpers()
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

unsigned WriteHelpers::busy() const
{
    return static_cast<unsigned>(queue_.size()) +
           static_cast<unsigned>(std::count_if(helpers_.begin(), helpers_.end(),
                                               [](const auto &h) { return h->busy; }));
}

WriteHelpers::Helper *WriteHelpers::start_helper()
{
    auto helper = std::make_unique<Helper>();
    helpers_.reserve(helpers_.size() + 1);
    Helper *h = helper.get();
    bool no_slot = false;
    try {
        pg::guard([h, &no_slot] {
            MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
            h->segment = dsm_create(2 * queue_size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
            if (h->segment == nullptr) {
                MemoryContextSwitchTo(old);
                return;
            }
            dsm_pin_mapping(h->segment); // this process's, for its life, not a transaction's
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
            snprintf(worker.bgw_function_name, BGW_MAXLEN, "querygate_write_helper_main");
            snprintf(worker.bgw_name, BGW_MAXLEN, "querygate write helper");
            snprintf(worker.bgw_type, BGW_MAXLEN, "querygate write helper");
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
        ereport(LOG, (errmsg("querygate: could not start a write helper: %s", e.message.c_str())));
        if (h->segment != nullptr) {
            dsm_segment *segment = h->segment;
            pg::guard([segment] { dsm_detach(segment); });
        }
        return nullptr;
    }
    if (h->segment == nullptr) {
        if (no_slot && !told_no_slot_) {
            told_no_slot_ = true;
            ereport(LOG, (errmsg("querygate: no background worker slot is free for a write "
                                 "helper; this worker's writes wait for its helpers, or run in "
                                 "the worker while it has none"),
                          errhint("Raise max_worker_processes (a restart) for more helpers.")));
        }
        return nullptr;
    }
    helpers_.push_back(std::move(helper));
    return h;
}

WriteHelpers::Helper *WriteHelpers::idle_helper()
{
    for (auto &p : helpers_)
        if (!p->busy && !p->gone)
            return p.get();
    return nullptr;
}

bool WriteHelpers::give(Helper &h, std::uint64_t token, std::string &request)
{
    h.outgoing.swap(request);
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
        h.outgoing.swap(request);
        h.gone = true;
        return false;
    }
    h.busy = true;
    h.sending = r == SHM_MQ_WOULD_BLOCK;
    h.token = token;
    return true;
}

// How many helpers this worker may start: querygate.write_helpers, but no more than its share of
// the background worker slots the workers, the WAL flusher and the writer leave (one more is kept
// for PostgreSQL's logical replication launcher). Without the share, the first worker to write
// would take every slot and the others would run their writes themselves, each write stopping them.
std::size_t WriteHelpers::most() const
{
    const int reserved = settings::workers + 3;
    const int share =
        std::max(1, (max_worker_processes - reserved) / std::max(1, settings::workers));
    return static_cast<std::size_t>(std::min(settings::write_helpers, share));
}

bool WriteHelpers::hand_off(std::uint64_t token, const CallRequest &call)
{
    if (settings::write_helpers <= 0)
        return false;
    std::string request;
    call_codec::encode(call, request);
    queue_.reserve(queue_.size() + 1); // may throw: before the call is anyone's
    // An idle helper, or a new one while there is room (not retried for a second after a start
    // failed: a busy worker would otherwise ask the postmaster on every write).
    for (;;) {
        Helper *h = idle_helper();
        if (h == nullptr && helpers_.size() < most() &&
            std::chrono::steady_clock::now() >= retry_after_) {
            h = start_helper();
            if (h == nullptr)
                retry_after_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        }
        if (h == nullptr)
            break;
        if (give(*h, token, request))
            return true;
    }
    // Every helper busy: the call waits for the first to be free, unless this worker has none
    // running at all (none could start), when it runs here.
    if (std::none_of(helpers_.begin(), helpers_.end(), [](const auto &p) { return !p->gone; }))
        return false;
    queue_.push_back(Queued{token, std::move(request)});
    return true;
}

void WriteHelpers::collect(const Done &done)
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
                queue_.insert(queue_.begin(), Queued{h.token, std::move(h.outgoing)});
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
                queue_.insert(queue_.begin(), Queued{h.token, std::move(h.outgoing)});
                continue;
            }
            // It may have committed before it exited: the caller cannot be told either way.
            ereport(LOG, (errmsg("querygate: a write helper exited during a call; its outcome "
                                 "is unknown")));
            result = failed(error_code::internal_error, "internal error");
        }
        done(h.token, result);
    }
    // Calls waiting for a helper go to those now free, in the order they came.
    std::size_t next = 0;
    for (Helper *h = idle_helper(); h != nullptr && next < queue_.size(); h = idle_helper())
        if (give(*h, queue_[next].token, queue_[next].request))
            next++;
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(next));
    // With every helper gone, nothing will take them (the next write may start new helpers).
    if (!queue_.empty() &&
        std::none_of(helpers_.begin(), helpers_.end(), [](const auto &p) { return !p->gone; })) {
        std::vector<Queued> orphans;
        orphans.swap(queue_);
        for (Queued &q : orphans) {
            CallResult result = failed(error_code::unavailable,
                                       "the write could not be run now; nothing was written");
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
void serve_calls(shm_mq_handle *in, shm_mq_handle *out)
{
    GroupCommit group_commit; // given no connections: every commit waits for its own flush
    QueryRunner runner(group_commit);
    runner.start();
    StatsReporter stats;
    CallRequest call;
    std::string reply;
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
        if (call_codec::decode(static_cast<const char *>(data), size, call)) {
            call.limits_charged = true; // the worker charged it and holds its place in flight
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

void querygate_write_helper_main(Datum main_arg)
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
        serve_calls(in, out);
    } catch (const std::exception &e) {
        // As in the worker: this process ends alone (a call in progress is its worker's 500).
        entry.restore();
        ereport(LOG, (errmsg("querygate write helper stopping: %s", e.what())));
        proc_exit(1);
    } catch (...) {
        entry.restore();
        ereport(LOG, (errmsg("querygate write helper stopping: an unknown exception")));
        proc_exit(1);
    }
    proc_exit(0);
}
