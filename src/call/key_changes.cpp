// Key changes: see key_changes.hpp.
#include "call/key_changes.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/inval.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/rel.h"
}

#include "pg/pg_guard.hpp"

#include <cstring>

namespace key_changes {

namespace {

// Changes a worker may fall behind by before it forgets every key: thousands of revocations
// between two calls of one worker.
constexpr std::uint64_t ring_size = 8192;
constexpr std::uint64_t every_key = 0;

// Readers take no lock: a writer announces how far it will write (`reserved`) before it
// overwrites a slot, and shows what it wrote (`end`) after, so a reader that copied slots and
// then finds `reserved` more than the ring past where it began knows its copy may be torn.
struct Shared {
    slock_t mutex;             // writers only
    pg_atomic_uint64 reserved; // slots being written up to (exclusive)
    pg_atomic_uint64 end;      // changes appended since the start: the next one's number
    std::uint64_t digests[ring_size];
};

// Inherited from the postmaster, which made it (shared_preload_libraries); null in a backend of a
// server that did not preload querygate, which has no workers to tell.
Shared *shared = nullptr;

// This backend's changes in its open transaction, appended at its commit. Plain data: nothing
// may allocate or fail after the commit.
constexpr int most_pending = 64;
std::uint64_t pending[most_pending];
int pending_count = 0;
bool pending_all = false;
bool callback_registered = false;

void append_pending()
{
    if (shared == nullptr || (pending_count == 0 && !pending_all))
        return;
    SpinLockAcquire(&shared->mutex);
    std::uint64_t end = pg_atomic_read_u64(&shared->end);
    pg_atomic_write_u64(&shared->reserved, end + (pending_all ? 1 : pending_count));
    pg_write_barrier(); // announced before any slot is overwritten
    if (pending_all)
        shared->digests[end++ % ring_size] = every_key;
    else
        for (int i = 0; i < pending_count; i++)
            shared->digests[end++ % ring_size] = pending[i];
    pg_write_barrier(); // the digests before the end that shows them
    pg_atomic_write_u64(&shared->end, end);
    SpinLockRelease(&shared->mutex);
}

void at_transaction_end(XactEvent event, void *)
{
    switch (event) {
    case XACT_EVENT_COMMIT:
        // The change is visible now, and the commit's invalidations not yet sent.
        append_pending();
        break;
    case XACT_EVENT_PRE_PREPARE:
        if (pending_count > 0 || pending_all)
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("querygate: a transaction that changed API keys cannot be prepared"),
                     errhint("Change keys in a transaction committed directly.")));
        break;
    default:
        break;
    }
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE) {
        pending_count = 0;
        pending_all = false;
    }
}

void note(HeapTuple tuple, TupleDesc desc)
{
    if (tuple == nullptr)
        return;
    const int column = SPI_fnumber(desc, "key_hash");
    bool isnull = true;
    const Datum value = column > 0 ? heap_getattr(tuple, column, desc, &isnull) : Datum(0);
    if (isnull || pending_all)
        return;
    if (pending_count == most_pending) {
        pending_all = true; // a bulk change: every worker forgets every key once
        return;
    }
    const bytea *hash = DatumGetByteaPP(value);
    pending[pending_count++] =
        digest(reinterpret_cast<const unsigned char *>(VARDATA_ANY(hash)), VARSIZE_ANY_EXHDR(hash));
}

} // namespace

std::size_t shmem_size()
{
    return sizeof(Shared);
}

void shmem_init()
{
    bool found = false;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared =
        static_cast<Shared *>(ShmemInitStruct("querygate key changes", sizeof(Shared), &found));
    if (!found) {
        SpinLockInit(&shared->mutex);
        pg_atomic_init_u64(&shared->reserved, 0);
        pg_atomic_init_u64(&shared->end, 0);
    }
    LWLockRelease(AddinShmemInitLock);
}

std::uint64_t digest(const unsigned char *key_hash, std::size_t length)
{
    std::uint64_t d = 0;
    std::memcpy(&d, key_hash, length < sizeof(d) ? length : sizeof(d));
    return d == every_key ? 1 : d;
}

void Reader::start()
{
    position_ = shared != nullptr ? pg_atomic_read_u64(&shared->end) : 0;
    started_ = true;
}

bool Reader::read(std::vector<std::uint64_t> &changed)
{
    changed.clear();
    if (shared == nullptr)
        return false;
    if (!started_) {
        start();
        return true;
    }
    const std::uint64_t end = pg_atomic_read_u64(&shared->end);
    if (end == position_)
        return false;
    pg_read_barrier(); // the digests after the end that shows them
    const std::uint64_t from = position_;
    if (end - from > ring_size) {
        position_ = end;
        return true;
    }
    changed.reserve(end - from); // may throw: before the place moves
    position_ = end;
    for (std::uint64_t i = from; i < end; i++) {
        const std::uint64_t d = shared->digests[i % ring_size];
        if (d == every_key)
            return true;
        changed.push_back(d);
    }
    // Writers may have gone round the ring while these were copied: then what was read may be
    // theirs, and nothing of it can be trusted.
    pg_read_barrier();
    return pg_atomic_read_u64(&shared->reserved) - from > ring_size;
}

} // namespace key_changes

// The triggers on api_key: for each row updated or deleted, notes its key, told to the workers
// when the transaction commits; for each statement that updated, deleted or truncated, tells the
// standbys.
QUERYGATE_SQL_FUNCTION(querygate_key_changed)
{
    using namespace key_changes;
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("key_changed() must be called as a trigger")));
    if (!callback_registered) {
        RegisterXactCallback(at_transaction_end, nullptr);
        callback_registered = true;
    }
    TriggerData *trigdata = reinterpret_cast<TriggerData *>(fcinfo->context);
    if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event)) {
        // The statement: a TRUNCATE names no key. And for hot standbys, where no trigger runs
        // and this ring is not written, the table's invalidation message, which the WAL carries
        // to them at commit: their workers forget every key (catalog_cache.cpp).
        if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
            pending_all = true;
        CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
    } else {
        const TupleDesc desc = RelationGetDescr(trigdata->tg_relation);
        note(trigdata->tg_trigtuple, desc);
        if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
            note(trigdata->tg_newtuple, desc);
    }
    return PointerGetDatum(nullptr);
}
