// The run history's writer: see history_writer.hpp. PostgreSQL side.
#include "worker/history_writer.hpp"

#include "shmem/history_ring.hpp"
#include "common/settings.hpp"
#include "common/log_throttle.hpp"
#include "pg/pg_guard.hpp"
#include "rules/history_retention.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace history_writer {

namespace {

// A batch is a transaction: its commit, the wake-up of the WAL writer that an asynchronous
// commit sends, and opening the partition are paid once a batch. A worker's ring wakes the
// writer half full (2,048 records of the default ring), so a batch this size takes what woke it
// at once (with 1,000, a pass paid them three times: a tenth of the writer's time).
constexpr std::size_t batch_records = 2048;
constexpr int batches_per_pass = 10; // at most 20,480 records a pass; the ring wakes it sooner

// What a batch's rows are formed in: kept from one batch to the next rather than given back to
// the system and faulted in again each time (an eighth of the writer's time went to that). Its
// one block holds a batch of short records (their values and their tuples); a batch of longer
// ones takes more blocks, given back after it.
constexpr Size batch_memory_size = 4 * 1024 * 1024;
MemoryContext batch_memory = nullptr;

// The database's encoding may not hold what a caller put in a URL (the query's name), and a
// name cut at its room may end inside a character: what is not valid becomes '?', so that no
// invalid text is ever stored (a dump of it would not restore).
void make_valid(char *s, std::size_t length, int encoding)
{
    const int len = static_cast<int>(length);
    for (int i = 0; i < len;) {
        const int valid = pg_encoding_verifymbstr(encoding, s + i, len - i);
        i += valid;
        if (i < len)
            s[i++] = '?';
    }
}

// The history table, if the extension is installed in this database (it may not be yet).
Oid history_table()
{
    const Oid nsp = get_namespace_oid("querygate", true);
    return OidIsValid(nsp) ? get_relname_relid("history", nsp) : InvalidOid;
}

void begin(const char *activity)
{
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    pgstat_report_activity(STATE_RUNNING, activity);
}

void commit()
{
    PopActiveSnapshot();
    CommitTransactionCommand();
    pgstat_report_activity(STATE_IDLE, nullptr);
}

void abort_after(const pg::PgError &e, const char *what, int level = WARNING)
{
    ereport(level, (errmsg("querygate writer: %s: %s", what, e.message.c_str())));
    pg::guard([] {
        AbortCurrentTransaction();
        pgstat_report_activity(STATE_IDLE, nullptr);
    });
}

// A batch that fails fails again with the next while its cause stands (an administrator's index
// or trigger on a partition, a full disk), and batches come every flush interval or sooner: at the
// full call rate that was a WARNING or more a second. So the first of a minute is a WARNING, the
// rest go to DEBUG1, and one WARNING a minute says how many there were and what the last said
// (log_throttle.hpp, as libmicrohttpd's messages about callers). Each is counted as dropped
// either way (querygate.stat_history).
constexpr const char *batch_not_saved =
    "run history not saved (the records are counted as dropped)";
LogThrottle failed_batches;

// The level of a failed batch's message. No memory for the throttle's copy of it: a WARNING.
int failed_batch_level(const pg::PgError &e) noexcept
{
    try {
        return failed_batches.note(std::string(batch_not_saved) + ": " + e.message,
                                   LogThrottle::Clock::now())
                   ? WARNING
                   : DEBUG1;
    } catch (...) {
        return WARNING;
    }
}

// The minute's count of failed batches left at DEBUG1, when the minute is over.
void say_failed_batches()
{
    std::string summary;
    try {
        if (!failed_batches.summary_due(LogThrottle::Clock::now(), summary))
            return;
    } catch (...) {
        return; // said with the next
    }
    ereport(WARNING, (errmsg("querygate writer: %s", summary.c_str())));
}

// The columns a record fills, by name: a column the table has and this list does not is NULL.
enum Column {
    col_at,
    col_request_id,
    col_key_name,
    col_policy,
    col_query,
    col_query_revision,
    col_query_version,
    col_status,
    col_code,
    col_duration_ms,
    col_rows,
    col_bytes,
    col_client,
    col_worker,
    col_masked_columns,
    col_params,
    ncolumns
};
const char *const column_names[ncolumns] = {"at",     "request_id",     "key_name",       "policy",
                                            "query",  "query_revision", "query_version",  "status",
                                            "code",   "duration_ms",    "rows",           "bytes",
                                            "client", "worker",         "masked_columns", "params"};

// A record's texts where they are (history_ring::Record::text_starts), read field by field.
struct Texts {
    const history_ring::Record &r;
    char *at[history_ring::fields];
    explicit Texts(history_ring::Record &record) : r(record) { record.text_starts(at); }
    const char *data(history_ring::Field f) const { return at[static_cast<std::size_t>(f)]; }
    std::size_t len(history_ring::Field f) const { return r.text_len(f); }
};

Datum text_of(const Texts &t, history_ring::Field f)
{
    return PointerGetDatum(cstring_to_text_with_len(t.data(f), static_cast<int>(t.len(f))));
}

Datum text_or_null(const Texts &t, history_ring::Field f, bool &isnull)
{
    isnull = t.len(f) == 0;
    return isnull ? Datum(0) : text_of(t, f);
}

Datum jsonb_or_null(const Texts &t, history_ring::Field f, bool &isnull)
{
    isnull = t.len(f) == 0;
    return isnull ? Datum(0) : DirectFunctionCall1(jsonb_in, CStringGetDatum(t.data(f)));
}

// One record's values, by column, copied out of the ring.
struct Row {
    Datum v[ncolumns];
    bool null[ncolumns];
    TimestampTz at() const { return DatumGetTimestampTz(v[col_at]); }
};

void form(Row &row, history_ring::Record &r)
{
    using history_ring::Field;
    const Texts t(r);
    Datum *v = row.v;
    bool *null = row.null;
    for (int c = 0; c < ncolumns; c++)
        null[c] = false;
    v[col_at] = TimestampTzGetDatum(r.at);
    v[col_request_id] = text_of(t, Field::request_id);
    v[col_key_name] = text_or_null(t, Field::key, null[col_key_name]);
    v[col_policy] = text_or_null(t, Field::policy, null[col_policy]);
    v[col_query] = text_of(t, Field::query);
    null[col_query_revision] = r.revision == 0;
    v[col_query_revision] = Int64GetDatum(r.revision);
    null[col_query_version] = r.version == 0;
    v[col_query_version] = Int32GetDatum(r.version);
    v[col_status] = Int16GetDatum(static_cast<int16>(r.status));
    v[col_code] = text_or_null(t, Field::code, null[col_code]);
    v[col_duration_ms] = Float8GetDatum(static_cast<double>(r.duration_us) / 1000.0);
    v[col_rows] = Int64GetDatum(static_cast<int64>(r.rows));
    v[col_bytes] = Int64GetDatum(static_cast<int64>(r.bytes));
    v[col_client] = text_or_null(t, Field::client, null[col_client]);
    v[col_worker] = Int32GetDatum(r.worker);
    v[col_masked_columns] = jsonb_or_null(t, Field::masked, null[col_masked_columns]);
    v[col_params] = jsonb_or_null(t, Field::params, null[col_params]);
}

// The slots a batch's tuples are inserted from, kept from one batch to the next (making and
// dropping a thousand slots a batch was a twentieth of the writer's time), over a copy of the
// descriptor of the partition they were last made for: made again for a partition whose columns
// are not the same. A slot holds its tuple between the insert and the end of insert_rows, and
// owns it (no copy is made to insert it); the tuples are in the batch's memory, so every slot is
// emptied before that memory is reset (forget_tuples), also after a batch that failed.
struct KeptSlots {
    TupleDesc desc = nullptr; // in TopMemoryContext
    TupleTableSlot *slot[batch_records] = {};
    int made = 0;
};
KeptSlots kept;

// Empties every kept slot, freeing the tuple it owns. Before the batch memory is reset.
void forget_tuples()
{
    for (int i = 0; i < kept.made; i++)
        ExecClearTuple(kept.slot[i]);
}

// Whether two descriptors have the same columns: what a slot deforms a tuple by.
bool same_columns(TupleDesc a, TupleDesc b)
{
    if (a->natts != b->natts)
        return false;
    for (int i = 0; i < a->natts; i++) {
        const Form_pg_attribute x = TupleDescAttr(a, i), y = TupleDescAttr(b, i);
        if (x->atttypid != y->atttypid || x->attlen != y->attlen || x->attbyval != y->attbyval ||
            x->attalign != y->attalign || x->attisdropped != y->attisdropped)
            return false;
    }
    return true;
}

// n slots over rel's columns. The slots are dropped and made again when the columns are not
// those they were made for.
TupleTableSlot **slots_for(Relation rel, int n)
{
    TupleDesc desc = RelationGetDescr(rel);
    if (kept.desc != nullptr && !same_columns(kept.desc, desc)) {
        for (int i = 0; i < kept.made; i++)
            ExecDropSingleTupleTableSlot(kept.slot[i]);
        kept.made = 0;
        FreeTupleDesc(kept.desc);
        kept.desc = nullptr;
    }
    const MemoryContext was = MemoryContextSwitchTo(TopMemoryContext);
    // Not reference-counted: a slot over the relation's own descriptor would remember it in the
    // transaction's resource owner.
    if (kept.desc == nullptr)
        kept.desc = CreateTupleDescCopy(desc);
    for (; kept.made < n; kept.made++)
        kept.slot[kept.made] = MakeSingleTupleTableSlot(kept.desc, &TTSOpsHeapTuple);
    MemoryContextSwitchTo(was);
    return kept.slot;
}

// Inserts rows into one relation (a partition of querygate.history), as COPY FROM does, with no
// statement to parse, plan or execute: the rows are formed into tuples and inserted together (one
// WAL record per page), then their index entries, if an administrator has made any. Columns are
// found by name: a partition's may be numbered differently from its parent's, and a column the
// relation has and the row does not fill is NULL. The table is querygate's own: no trigger, rule
// or row-level security of anyone else's applies to it. In the batch's memory.
void insert_rows(Oid relid, const Row *rows, int n)
{
    if (n > static_cast<int>(batch_records)) // never: a batch is taken at most this size
        elog(ERROR, "querygate: %d history rows at once, more than the writer's %d slots", n,
             static_cast<int>(batch_records));
    Relation rel = table_open(relid, RowExclusiveLock);
    int attnums[ncolumns];
    for (int c = 0; c < ncolumns; c++)
        attnums[c] = get_attnum(relid, column_names[c]);
    ResultRelInfo *info = makeNode(ResultRelInfo);
    InitResultRelInfo(info, rel, 1, nullptr, 0);
    EState *estate = CreateExecutorState();
    ExecOpenIndices(info, false);
    TupleDesc desc = RelationGetDescr(rel);
    TupleTableSlot **slots = slots_for(rel, n);
    Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * desc->natts));
    bool *isnull = static_cast<bool *>(palloc(sizeof(bool) * desc->natts));
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < desc->natts; a++)
            isnull[a] = true;
        for (int c = 0; c < ncolumns; c++)
            if (attnums[c] > 0) {
                values[attnums[c] - 1] = rows[i].v[c];
                isnull[attnums[c] - 1] = rows[i].null[c];
            }
        // Formed once, where the insert takes it from (a virtual slot's values were copied
        // twice more: into the slot's own memory, then into the tuple).
        ExecStoreHeapTuple(heap_form_tuple(desc, values, isnull), slots[i], true);
    }
    BulkInsertState bulk = GetBulkInsertState();
    table_multi_insert(rel, slots, n, GetCurrentCommandId(true), 0, bulk);
    if (info->ri_NumIndices > 0)
        for (int i = 0; i < n; i++)
            (void)ExecInsertIndexTuples(info, slots[i], estate, false, false, nullptr, NIL);
    forget_tuples();
    FreeBulkInsertState(bulk);
    ExecCloseIndices(info);
    FreeExecutorState(estate);
    pgstat_count_heap_insert(rel, n);
    table_close(rel, NoLock);
}

// ---- partitions (rules/history_retention.hpp)

// Where a time goes in querygate.history: the partition that holds it (relid), with its range;
// or, relid invalid, the free gap between two partitions (or beyond the last) that it is in.
struct Place {
    Oid relid = InvalidOid;
    int64 lower = history_retention::unbounded_below;
    int64 upper = history_retention::unbounded_above;
};

// Whether querygate.history has the shape the writer keeps: partitioned by range of `at` (an
// administrator could have replaced it; then each batch fails with a clear error).
bool by_time(Relation parent)
{
    if (parent->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
        return false;
    PartitionKey key = RelationGetPartitionKey(parent);
    return key->strategy == PARTITION_STRATEGY_RANGE && key->partnatts == 1 &&
           key->parttypid[0] == TIMESTAMPTZOID;
}

// The parent's range bounds and partitions; nullptr when it has none (or not that shape).
PartitionBoundInfo range_bounds(Relation parent, PartitionDesc &desc)
{
    desc = nullptr;
    if (!by_time(parent))
        return nullptr;
    desc = RelationGetPartitionDesc(parent, true);
    return desc->nparts > 0 ? desc->boundinfo : nullptr;
}

// The value of range bound i, or `none` when there is none there or it is MINVALUE/MAXVALUE.
int64 bound_at(PartitionBoundInfo b, int i, int64 none)
{
    return i >= 0 && i < b->ndatums && b->kind[i][0] == PARTITION_RANGE_DATUM_VALUE
               ? DatumGetTimestampTz(b->datums[i][0])
               : none;
}

// Where `at` goes, found as tuple routing finds it: the greatest bound not above it, and the
// partition (if any) whose upper bound is the next one. Under a lock on the parent.
Place place_of(Relation parent, TimestampTz at)
{
    Place place;
    PartitionDesc desc = nullptr;
    PartitionBoundInfo b = range_bounds(parent, desc);
    if (b == nullptr)
        return place;
    PartitionKey key = RelationGetPartitionKey(parent);
    Datum value = TimestampTzGetDatum(at);
    bool equal = false;
    const int offset =
        partition_range_datum_bsearch(key->partsupfunc, key->partcollation, b, 1, &value, &equal);
    place.lower = bound_at(b, offset, history_retention::unbounded_below);
    place.upper = bound_at(b, offset + 1, history_retention::unbounded_above);
    const int index = b->indexes[offset + 1];
    if (index >= 0)
        place.relid = desc->oids[index];
    return place;
}

// A partition bound as SQL: an ISO timestamp in UTC, or MINVALUE/MAXVALUE.
void bound_sql(int64 t, char *out, std::size_t room)
{
    if (t == history_retention::unbounded_below || t == history_retention::unbounded_above) {
        std::snprintf(out, room, "%s", t < 0 ? "MINVALUE" : "MAXVALUE");
        return;
    }
    struct pg_tm tm;
    fsec_t fsec = 0;
    if (timestamp2tm(t, nullptr, &tm, &fsec, nullptr, nullptr) != 0)
        ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                        errmsg("querygate: a run history record's time is out of range")));
    std::snprintf(out, room, "'%04d-%02d-%02d %02d:%02d:%02d.%06d+00'", tm.tm_year, tm.tm_mon,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(fsec));
}

// Makes the partition of querygate.history for `span`, named after its start (with a digit after
// it when an unrelated table has that name), with the parent's columns, defaults and
// constraints. Made apart and then attached: CREATE TABLE ... PARTITION OF would lock the parent
// against its readers, where ATTACH PARTITION takes a lock that only other DDL waits for.
void make_partition(const history_retention::Span &span)
{
    const Oid nsp = get_namespace_oid("querygate", false);
    const history_retention::Name base = history_retention::name_for(span.lower);
    char name[sizeof(base.text) + 8];
    std::snprintf(name, sizeof(name), "%s", base.text);
    for (int suffix = 2; OidIsValid(get_relname_relid(name, nsp)); suffix++) {
        if (suffix > 9)
            ereport(ERROR, (errcode(ERRCODE_DUPLICATE_TABLE),
                            errmsg("querygate: no free name for a partition of querygate.history "
                                   "(%s and %s_2 to _9 are taken)",
                                   base.text, base.text)));
        std::snprintf(name, sizeof(name), "%s_%d", base.text, suffix);
    }
    char lower[64], upper[64];
    bound_sql(span.lower, lower, sizeof(lower));
    bound_sql(span.upper, upper, sizeof(upper));
    const char *quoted = quote_identifier(name);
    // The locks are waited for a moment at most (an administrator's DDL or ANALYZE on the table
    // holds the one ATTACH takes): the writer saves nothing while it waits, and a partition not
    // made now is made by the next batch, or the next pass.
    char *sql = psprintf("SET LOCAL lock_timeout = '500ms'; "
                         "CREATE TABLE querygate.%s (LIKE querygate.history INCLUDING DEFAULTS "
                         "INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION); "
                         "ALTER TABLE querygate.history ATTACH PARTITION querygate.%s "
                         "FOR VALUES FROM (%s) TO (%s)",
                         quoted, quoted, lower, upper);
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "querygate: SPI_connect failed");
    if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
        elog(ERROR, "querygate: could not make a partition of querygate.history");
    SPI_finish();
    CommandCounterIncrement(); // the parent's partitions, read again, include it
}

// Where `at` goes, making its partition if none holds it. The parent is open only while its
// partitions are read: ATTACH PARTITION refuses a table its own session has open.
Place place_or_make(Oid parent_id, TimestampTz at)
{
    Relation parent = table_open(parent_id, RowExclusiveLock);
    Place place = place_of(parent, at);
    const bool shaped = by_time(parent);
    table_close(parent, NoLock);
    if (OidIsValid(place.relid))
        return place;
    if (!shaped)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("querygate: querygate.history is not partitioned by \"at\"")));
    make_partition(
        history_retention::span_for(at, settings::history_retention, place.lower, place.upper));
    parent = table_open(parent_id, RowExclusiveLock);
    place = place_of(parent, at);
    table_close(parent, NoLock);
    if (!OidIsValid(place.relid))
        elog(ERROR, "querygate: the partition made for a run history record does not hold it");
    return place;
}

// Inserts one batch; false when the table is not there or the insert failed (then logged). The
// records are copied into rows and the ring's slots given back; then each run of records in the
// same partition is inserted into it, its partition made first when none holds it.
bool insert(history_ring::Taken &batch)
{
    const int n = static_cast<int>(batch.size());
    const int encoding = GetDatabaseEncoding();
    for (int i = 0; i < n; i++) {
        const Texts t(batch[i]);
        for (std::size_t f = 0; f < history_ring::fields; f++)
            make_valid(t.at[f], t.len(static_cast<history_ring::Field>(f)), encoding);
    }
    bool saved = false;
    try {
        pg::guard([&] {
            begin("querygate: saving the run history");
            const Oid relid = history_table();
            if (OidIsValid(relid)) {
                if (batch_memory == nullptr)
                    batch_memory = AllocSetContextCreate(
                        TopMemoryContext, "querygate history batch", batch_memory_size,
                        batch_memory_size, batch_memory_size);
                forget_tuples(); // a failed batch's tuples, before their memory goes
                MemoryContextReset(batch_memory);
                const MemoryContext was = MemoryContextSwitchTo(batch_memory);
                Row *rows = static_cast<Row *>(palloc(sizeof(Row) * n));
                for (int i = 0; i < n; i++)
                    form(rows[i], batch[i]);
                // The rows hold copies of everything: the slots are free for the workers while
                // the rows are inserted, and a writer that dies before its commit loses the batch
                // rather than saving it twice when it starts again.
                history_ring::release(batch);
                for (int i = 0; i < n;) {
                    const Place place = place_or_make(relid, rows[i].at());
                    int end = i + 1;
                    while (end < n && rows[end].at() >= place.lower && rows[end].at() < place.upper)
                        end++;
                    insert_rows(place.relid, rows + i, end - i);
                    i = end;
                }
                MemoryContextSwitchTo(was);
                saved = true;
            }
            commit();
        });
    } catch (const pg::PgError &e) {
        abort_after(e, batch_not_saved, failed_batch_level(e));
        saved = false;
    }
    return saved;
}

// The partitions of querygate.history that have outlived the retention, and whether the one
// holding `now` exists and the one after it does not (then made, so that a new span's first
// batch does not wait for it). Under a lock on the parent.
struct Survey {
    Oid expired[64]; // at most this many a pass: the rest at the next
    int nexpired = 0;
    bool current = false;
    Place next;
};

Survey survey(Relation parent, TimestampTz now)
{
    Survey s;
    PartitionDesc desc = nullptr;
    PartitionBoundInfo b = range_bounds(parent, desc);
    if (b == nullptr)
        return s;
    for (int i = 0; i < b->ndatums && s.nexpired < static_cast<int>(lengthof(s.expired)); i++) {
        const int index = b->indexes[i];
        const int64 upper = bound_at(b, i, history_retention::unbounded_above);
        if (index >= 0 && history_retention::expired(upper, now, settings::history_retention))
            s.expired[s.nexpired++] = desc->oids[index];
    }
    const Place here = place_of(parent, now);
    s.current = OidIsValid(here.relid);
    if (s.current && here.upper != history_retention::unbounded_above)
        s.next = place_of(parent, here.upper);
    return s;
}

// Drops one partition if nobody is using the table: the locks are asked for without waiting,
// so that neither the writer nor anyone queued behind its lock waits for a reader of
// querygate.history. False when it is in use (tried again at the next pass).
bool drop_partition(Oid parent, Oid partition)
{
    if (!ConditionalLockRelationOid(parent, AccessExclusiveLock))
        return false;
    if (!ConditionalLockRelationOid(partition, AccessExclusiveLock))
        return false;
    // Still there, and still a partition of the table (an administrator may have detached it).
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(partition)) ||
        get_partition_parent(partition, true) != parent)
        return true;
    ObjectAddress object;
    ObjectAddressSet(object, RelationRelationId, partition);
    performDeletion(&object, DROP_RESTRICT, 0);
    return true;
}

} // namespace

void save(bool all)
{
    say_failed_batches();
    if (RecoveryInProgress())
        return;
    for (int pass = 0; all || pass < batches_per_pass; pass++) {
        history_ring::Taken batch = history_ring::take(batch_records);
        if (batch.empty())
            return;
        const std::size_t n = batch.size();
        const bool saved = insert(batch); // catches every error
        history_ring::release(batch);     // if insert() did not get as far
        if (saved)
            history_ring::saved(n);
        else
            history_ring::lost(n);
    }
}

void keep_partitions()
{
    if (RecoveryInProgress())
        return;
    Survey s;
    Oid parent_id = InvalidOid;
    try {
        pg::guard([&] {
            begin("querygate: keeping the run history's partitions");
            parent_id = history_table();
            if (OidIsValid(parent_id)) {
                Relation parent = table_open(parent_id, AccessShareLock);
                s = survey(parent, GetCurrentTimestamp());
                table_close(parent, NoLock);
                if (s.current && !OidIsValid(s.next.relid) &&
                    s.next.lower != history_retention::unbounded_below)
                    make_partition(history_retention::span_for(
                        s.next.lower, settings::history_retention, s.next.lower, s.next.upper));
            }
            commit();
        });
    } catch (const pg::PgError &e) {
        abort_after(e, "the run history's partitions not kept (tried again in a minute)");
        return;
    }
    // Each drop in a transaction of its own: the table's lock is held for one drop at a time.
    for (int i = 0; i < s.nexpired; i++) {
        bool dropped = false;
        try {
            pg::guard([&] {
                begin("querygate: removing old run history");
                dropped = drop_partition(parent_id, s.expired[i]);
                commit();
            });
        } catch (const pg::PgError &e) {
            abort_after(e, "old run history not removed (tried again in a minute)");
            return;
        }
        if (!dropped) {
            ereport(LOG, (errmsg("querygate writer: old run history kept for now: "
                                 "querygate.history is in use (tried again in a minute)")));
            return;
        }
    }
}

} // namespace history_writer
