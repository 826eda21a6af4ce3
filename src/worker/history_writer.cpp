// The run history's writer: see history_writer.hpp. PostgreSQL side.
#include "worker/history_writer.hpp"

#include "call/history_ring.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

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
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <cstring>
#include <vector>

namespace history_writer {

namespace {

constexpr std::size_t batch_records = 1000;
constexpr int batches_per_pass = 20; // at most 20,000 records a pass; the ring wakes it sooner
constexpr long trim_batch = 10000;
constexpr int trims_per_pass = 10;

// What a batch's rows are formed in: kept from one batch to the next rather than given back to
// the system and faulted in again each time (an eighth of the writer's time went to that). Its
// one block holds a batch of a thousand short records; a longer one takes more blocks, given back
// after it.
constexpr Size batch_memory_size = 4 * 1024 * 1024;
MemoryContext batch_memory = nullptr;

// In the order of the time index, so that finding nothing to remove costs one descent of it: the
// writer saves no record while this runs, and a scan of the whole table (what the planner picks
// for "at < $1 LIMIT $2" on a table it has no statistics of) stalled it for seconds, long enough
// for a full ring to drop records.
const char trim_sql[] =
    "DELETE FROM querygate.history WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT ctid FROM querygate.history WHERE at OPERATOR(pg_catalog.<) (pg_catalog.now() "
    "OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1)) "
    "ORDER BY at USING OPERATOR(pg_catalog.<) LIMIT $2))";

// The database's encoding may not hold what a caller put in a URL (the query's name), and a
// name cut at its room may end inside a character: what is not valid becomes '?', so that no
// invalid text is ever stored (a dump of it would not restore).
template <std::size_t Room> void make_valid(history_ring::Text<Room> &text)
{
    const int encoding = GetDatabaseEncoding();
    char *s = text.data;
    const int len = text.len;
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

void abort_after(const pg::PgError &e, const char *what)
{
    ereport(WARNING, (errmsg("querygate writer: %s: %s", what, e.message.c_str())));
    pg::guard([] {
        AbortCurrentTransaction();
        pgstat_report_activity(STATE_IDLE, nullptr);
    });
}

// The columns a record fills, by name: a column the table has and this list does not is NULL.
enum Column {
    col_at,
    col_request_id,
    col_key_name,
    col_policy,
    col_query,
    col_query_revision,
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
const char *const column_names[ncolumns] = {
    "at",          "request_id", "key_name", "policy", "query",  "query_revision", "status", "code",
    "duration_ms", "rows",       "bytes",    "client", "worker", "masked_columns", "params"};

template <std::size_t Room> Datum text_of(const history_ring::Text<Room> &text)
{
    return PointerGetDatum(cstring_to_text_with_len(text.data, text.len));
}

template <std::size_t Room> Datum text_or_null(const history_ring::Text<Room> &text, bool &isnull)
{
    isnull = text.empty();
    return isnull ? Datum(0) : text_of(text);
}

template <std::size_t Room> Datum jsonb_or_null(const history_ring::Text<Room> &text, bool &isnull)
{
    isnull = text.empty();
    return isnull ? Datum(0) : DirectFunctionCall1(jsonb_in, CStringGetDatum(text.data));
}

// One record as the table's row, in the slot.
void fill(TupleTableSlot *slot, const int *attnums, const history_ring::Record &r)
{
    ExecClearTuple(slot);
    const int natts = slot->tts_tupleDescriptor->natts;
    for (int i = 0; i < natts; i++)
        slot->tts_isnull[i] = true;
    Datum v[ncolumns];
    bool null[ncolumns] = {};
    v[col_at] = TimestampTzGetDatum(r.at);
    v[col_request_id] = text_of(r.request_id);
    v[col_key_name] = text_or_null(r.key, null[col_key_name]);
    v[col_policy] = text_or_null(r.policy, null[col_policy]);
    v[col_query] = text_of(r.query);
    null[col_query_revision] = r.revision == 0;
    v[col_query_revision] = Int64GetDatum(r.revision);
    v[col_status] = Int16GetDatum(static_cast<int16>(r.status));
    v[col_code] = text_or_null(r.code, null[col_code]);
    v[col_duration_ms] = Float8GetDatum(static_cast<double>(r.duration_us) / 1000.0);
    v[col_rows] = Int64GetDatum(static_cast<int64>(r.rows));
    v[col_bytes] = Int64GetDatum(static_cast<int64>(r.bytes));
    v[col_client] = text_or_null(r.client, null[col_client]);
    v[col_worker] = Int32GetDatum(r.worker);
    v[col_masked_columns] = jsonb_or_null(r.masked, null[col_masked_columns]);
    v[col_params] = jsonb_or_null(r.params, null[col_params]);
    for (int c = 0; c < ncolumns; c++)
        if (attnums[c] > 0) {
            slot->tts_values[attnums[c] - 1] = v[c];
            slot->tts_isnull[attnums[c] - 1] = null[c];
        }
    ExecStoreVirtualTuple(slot);
}

// Inserts one batch; false when the table is not there or the insert failed (then logged). As
// COPY FROM does, with no statement to parse, plan or execute: the rows are formed from the
// records and inserted together (one WAL record per page), then their index entries. The table
// is querygate's own: no trigger, rule or row-level security of anyone else's applies to it.
bool insert(history_ring::Taken &batch)
{
    const int n = static_cast<int>(batch.size());
    for (int i = 0; i < n; i++) {
        history_ring::Record &r = batch[i];
        make_valid(r.request_id);
        make_valid(r.key);
        make_valid(r.policy);
        make_valid(r.query);
        make_valid(r.code);
        make_valid(r.client);
        make_valid(r.masked);
        make_valid(r.params);
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
                MemoryContextReset(batch_memory);
                const MemoryContext was = MemoryContextSwitchTo(batch_memory);
                Relation rel = table_open(relid, RowExclusiveLock);
                int attnums[ncolumns];
                for (int c = 0; c < ncolumns; c++)
                    attnums[c] = get_attnum(relid, column_names[c]);
                ResultRelInfo *info = makeNode(ResultRelInfo);
                InitResultRelInfo(info, rel, 1, nullptr, 0);
                EState *estate = CreateExecutorState();
                ExecOpenIndices(info, false);
                // Slots over a copy of the descriptor, which is not reference-counted: a thousand
                // slots over the relation's own would each remember it in the resource owner.
                TupleDesc desc = CreateTupleDescCopy(RelationGetDescr(rel));
                TupleTableSlot **slots =
                    static_cast<TupleTableSlot **>(palloc(sizeof(TupleTableSlot *) * n));
                for (int i = 0; i < n; i++) {
                    slots[i] = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
                    fill(slots[i], attnums, batch[i]);
                }
                // The rows hold copies of everything: the slots are free for the workers while
                // the rows are inserted, and a writer that dies before its commit loses the batch
                // rather than saving it twice when it starts again.
                history_ring::release(batch);
                BulkInsertState bulk = GetBulkInsertState();
                table_multi_insert(rel, slots, n, GetCurrentCommandId(true), 0, bulk);
                for (int i = 0; i < n; i++) {
                    if (info->ri_NumIndices > 0)
                        (void)ExecInsertIndexTuples(info, slots[i], estate, false, false, nullptr,
                                                    NIL);
                    ExecDropSingleTupleTableSlot(slots[i]);
                }
                FreeBulkInsertState(bulk);
                ExecCloseIndices(info);
                FreeExecutorState(estate);
                pgstat_count_heap_insert(rel, n);
                table_close(rel, NoLock);
                MemoryContextSwitchTo(was);
                saved = true;
            }
            commit();
        });
    } catch (const pg::PgError &e) {
        abort_after(e, "run history not saved (the records are counted as dropped)");
        saved = false;
    }
    return saved;
}

} // namespace

void save(bool all)
{
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

void trim()
{
    if (RecoveryInProgress() || settings::history_retention <= 0)
        return;
    for (int pass = 0; pass < trims_per_pass; pass++) {
        uint64 removed = 0;
        try {
            pg::guard([&] {
                begin("querygate: removing old run history");
                if (OidIsValid(history_table())) {
                    if (SPI_connect() != SPI_OK_CONNECT)
                        elog(ERROR, "querygate: SPI_connect failed");
                    Oid types[2] = {FLOAT8OID, INT8OID};
                    Datum values[2] = {Float8GetDatum(settings::history_retention),
                                       Int64GetDatum(trim_batch)};
                    if (SPI_execute_with_args(trim_sql, 2, types, values, nullptr, false, 0) !=
                        SPI_OK_DELETE)
                        elog(ERROR, "querygate: could not remove old run history");
                    removed = SPI_processed;
                    SPI_finish();
                }
                commit();
            });
        } catch (const pg::PgError &e) {
            abort_after(e, "old run history not removed (retried in a minute)");
            return;
        }
        if (removed < static_cast<uint64>(trim_batch))
            return;
    }
}

} // namespace history_writer
