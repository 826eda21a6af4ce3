// Catalog changes, a row at a time: see catalog_changes.hpp.
#include "call/catalog_changes.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/rel.h"
}

#include "pg/pg_guard.hpp"

#include <cstring>

namespace catalog_changes {

namespace {

constexpr int kinds = 2;
// Changes a worker may fall behind by before it forgets every row of a kind: thousands of
// revocations between two calls of one worker.
constexpr std::uint64_t ring_size = 8192;
constexpr std::uint64_t every_row = 0;

// Readers take no lock: a writer announces how far it will write (`reserved`) before it
// overwrites a slot, and shows what it wrote (`end`) after, so a reader that copied slots and
// then finds `reserved` more than the ring past where it began knows its copy may be torn.
struct Ring {
    pg_atomic_uint64 reserved; // slots being written up to (exclusive)
    pg_atomic_uint64 end;      // changes appended since the start: the next one's number
    std::uint64_t digests[ring_size];
};

struct Shared {
    slock_t mutex; // writers only
    Ring rings[kinds];
};

// Inherited from the postmaster, which made it (shared_preload_libraries); null in a backend of a
// server that did not preload querygate, which has no workers to tell.
Shared *shared = nullptr;

// This backend's changes in its open transaction, appended at its commit. Plain data: nothing
// may allocate or fail after the commit.
constexpr int most_pending = 64;
struct Pending {
    std::uint64_t digests[most_pending];
    int count = 0;
    bool all = false;
    bool any() const { return count > 0 || all; }
};
Pending pending[kinds];
bool callback_registered = false;

void append(Ring &ring, const Pending &p)
{
    std::uint64_t end = pg_atomic_read_u64(&ring.end);
    pg_atomic_write_u64(&ring.reserved, end + (p.all ? 1 : p.count));
    pg_write_barrier(); // announced before any slot is overwritten
    if (p.all)
        ring.digests[end++ % ring_size] = every_row;
    else
        for (int i = 0; i < p.count; i++)
            ring.digests[end++ % ring_size] = p.digests[i];
    pg_write_barrier(); // the digests before the end that shows them
    pg_atomic_write_u64(&ring.end, end);
}

void at_transaction_end(XactEvent event, void *)
{
    const bool any = pending[0].any() || pending[1].any();
    if (event == XACT_EVENT_COMMIT && any && shared != nullptr) {
        // The change is visible now, and the commit's invalidations not yet sent.
        SpinLockAcquire(&shared->mutex);
        for (int k = 0; k < kinds; k++)
            if (pending[k].any())
                append(shared->rings[k], pending[k]);
        SpinLockRelease(&shared->mutex);
    }
    // (A server that did not preload querygate has no workers to tell: nothing to refuse.)
    if (event == XACT_EVENT_PRE_PREPARE && any && shared != nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("querygate: a transaction that changed API keys or saved queries cannot "
                        "be prepared"),
                 errhint("Change them in a transaction committed directly.")));
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE)
        for (Pending &p : pending)
            p = Pending();
}

void note(Pending &p, std::uint64_t digest)
{
    if (p.all)
        return;
    if (p.count == most_pending) {
        p.all = true; // a bulk change: every worker forgets every row of the kind once
        return;
    }
    p.digests[p.count++] = digest;
}

// The changed row's digest, from its key_hash or its name.
void note_row(Kind kind, HeapTuple tuple, TupleDesc desc)
{
    if (tuple == nullptr)
        return;
    const int column = SPI_fnumber(desc, kind == Kind::key ? "key_hash" : "name");
    bool isnull = true;
    const Datum value = column > 0 ? heap_getattr(tuple, column, desc, &isnull) : Datum(0);
    Pending &p = pending[static_cast<int>(kind)];
    if (isnull) {
        p.all = true; // not a row this knows how to name
        return;
    }
    const text *t = DatumGetTextPP(value); // bytea and text share their varlena form
    const char *data = VARDATA_ANY(t);
    const std::size_t size = VARSIZE_ANY_EXHDR(t);
    note(p, kind == Kind::key ? key_digest(reinterpret_cast<const unsigned char *>(data), size)
                              : query_digest(std::string_view(data, size)));
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
        static_cast<Shared *>(ShmemInitStruct("querygate catalog changes", sizeof(Shared), &found));
    if (!found) {
        SpinLockInit(&shared->mutex);
        for (Ring &r : shared->rings) {
            pg_atomic_init_u64(&r.reserved, 0);
            pg_atomic_init_u64(&r.end, 0);
        }
    }
    LWLockRelease(AddinShmemInitLock);
}

std::uint64_t key_digest(const unsigned char *key_hash, std::size_t length)
{
    std::uint64_t d = 0;
    std::memcpy(&d, key_hash, length < sizeof(d) ? length : sizeof(d));
    return d == every_row ? 1 : d;
}

std::uint64_t query_digest(std::string_view name)
{
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : name) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h == every_row ? 1 : h;
}

void Reader::start()
{
    position_ =
        shared != nullptr ? pg_atomic_read_u64(&shared->rings[static_cast<int>(kind_)].end) : 0;
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
    const Ring &ring = shared->rings[static_cast<int>(kind_)];
    const std::uint64_t end = pg_atomic_read_u64(const_cast<pg_atomic_uint64 *>(&ring.end));
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
        const std::uint64_t d = ring.digests[i % ring_size];
        if (d == every_row)
            return true;
        changed.push_back(d);
    }
    // Writers may have gone round the ring while these were copied: then what was read may be
    // theirs, and nothing of it can be trusted.
    pg_read_barrier();
    return pg_atomic_read_u64(const_cast<pg_atomic_uint64 *>(&ring.reserved)) - from > ring_size;
}

} // namespace catalog_changes

// The triggers on api_key and saved_query: for each row updated or deleted, notes it, told to the
// workers when the transaction commits; for each statement that updated, deleted or truncated,
// tells the hot standbys (where no trigger runs, and this ring is not written) through the
// table's invalidation message, which the WAL carries to them at commit: their workers forget
// every row of the kind (catalog_cache.cpp).
QUERYGATE_SQL_FUNCTION(querygate_row_changed)
{
    using namespace catalog_changes;
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("row_changed() must be called as a trigger")));
    if (!callback_registered) {
        RegisterXactCallback(at_transaction_end, nullptr);
        callback_registered = true;
    }
    TriggerData *trigdata = reinterpret_cast<TriggerData *>(fcinfo->context);
    const Relation rel = trigdata->tg_relation;
    const Kind kind =
        std::strcmp(RelationGetRelationName(rel), "api_key") == 0 ? Kind::key : Kind::query;
    if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event)) {
        if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
            pending[static_cast<int>(kind)].all = true; // names no row
        CacheInvalidateRelcacheByRelid(RelationGetRelid(rel));
    } else {
        note_row(kind, trigdata->tg_trigtuple, RelationGetDescr(rel));
        if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
            note_row(kind, trigdata->tg_newtuple, RelationGetDescr(rel));
    }
    return PointerGetDatum(nullptr);
}
