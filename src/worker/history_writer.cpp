// The run history's writer: see history_writer.hpp. PostgreSQL side.
#include "worker/history_writer.hpp"

#include "shmem/history_ring.hpp"
#include "common/settings.hpp"
#include "common/log_throttle.hpp"
#include "pg/pg_guard.hpp"
#include "rules/history_retention.hpp"
#include "worker/history_partitions.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
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
    col_kind,
    col_sql,
    ncolumns
};
const char *const column_names[ncolumns] = {"at",
                                            "request_id",
                                            "key_name",
                                            "policy",
                                            "query",
                                            "query_revision",
                                            "query_version",
                                            "status",
                                            "code",
                                            "duration_ms",
                                            "rows",
                                            "bytes",
                                            "client",
                                            "worker",
                                            "masked_columns",
                                            "params",
                                            "kind",
                                            "sql"};

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
    // SQL the caller wrote has no name: its kind says what ran, and its text or hash, which.
    v[col_query] = text_or_null(t, Field::query, null[col_query]);
    v[col_kind] = CStringGetTextDatum(r.adhoc != 0 ? "sql" : "query");
    v[col_sql] = text_or_null(t, Field::sql, null[col_sql]);
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
                    const history_partitions::Place place =
                        history_partitions::place_or_make(relid, rows[i].at());
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
    history_partitions::Survey s;
    Oid parent_id = InvalidOid;
    try {
        pg::guard([&] {
            begin("querygate: keeping the run history's partitions");
            parent_id = history_table();
            if (OidIsValid(parent_id)) {
                Relation parent = table_open(parent_id, AccessShareLock);
                s = history_partitions::survey(parent, GetCurrentTimestamp());
                table_close(parent, NoLock);
                if (s.current && !OidIsValid(s.next.relid) &&
                    s.next.lower != history_retention::unbounded_below)
                    history_partitions::make_partition(history_retention::span_for(
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
                dropped = history_partitions::drop_partition(parent_id, s.expired[i]);
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
