// The run history's writer: see history_writer.hpp. PostgreSQL side.
#include "worker/history_writer.hpp"

#include "call/history_ring.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

#include <cstring>
#include <vector>

namespace history_writer {

namespace {

constexpr std::size_t batch_records = 1000;
constexpr int batches_per_pass = 20; // at most 20,000 records a pass; the ring wakes it sooner
constexpr long trim_batch = 10000;
constexpr int trims_per_pass = 10;

// Empty strings become NULL; times are Unix microseconds, durations microseconds.
const char insert_sql[] =
    "INSERT INTO querygate.history (at, request_id, key_name, policy, query, query_revision, "
    "status, code, duration_ms, rows, bytes, client, worker, masked_columns, params) "
    "SELECT pg_catalog.to_timestamp(a::pg_catalog.float8 OPERATOR(pg_catalog./) 1000000), r, "
    "NULLIF(k, ''), NULLIF(p, ''), q, NULLIF(v, 0), s, "
    "NULLIF(c, ''), d::pg_catalog.float8 OPERATOR(pg_catalog./) 1000, n, b, "
    "NULLIF(cl, ''), w, CASE WHEN m OPERATOR(pg_catalog.=) '' THEN NULL "
    "ELSE m::pg_catalog.jsonb END, "
    "CASE WHEN j OPERATOR(pg_catalog.=) '' THEN NULL ELSE j::pg_catalog.jsonb END "
    "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), "
    "pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6), pg_catalog.unnest($7), "
    "pg_catalog.unnest($8), pg_catalog.unnest($9), pg_catalog.unnest($10), "
    "pg_catalog.unnest($11), pg_catalog.unnest($12), pg_catalog.unnest($13), "
    "pg_catalog.unnest($14), pg_catalog.unnest($15)) "
    "AS u(a, r, k, p, q, v, s, c, d, n, b, cl, w, m, j)";
constexpr int insert_columns = 15;

const char trim_sql[] =
    "DELETE FROM querygate.history WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT ctid FROM querygate.history WHERE at OPERATOR(pg_catalog.<) (pg_catalog.now() "
    "OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1)) LIMIT $2))";

// The database's encoding may not hold what a caller put in a URL (the query's name), and a
// name cut at its room may end inside a character: what is not valid becomes '?', so that no
// invalid text is ever stored (a dump of it would not restore).
void make_valid(char *s)
{
    const int encoding = GetDatabaseEncoding();
    int len = static_cast<int>(std::strlen(s));
    for (int i = 0; i < len;) {
        const int valid = pg_encoding_verifymbstr(encoding, s + i, len - i);
        i += valid;
        if (i < len)
            s[i++] = '?';
    }
}

// The history table, if the extension is installed in this database (it may not be yet).
bool table_exists()
{
    const Oid nsp = get_namespace_oid("querygate", true);
    return OidIsValid(nsp) && OidIsValid(get_relname_relid("history", nsp));
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

// Inserts one batch; false when the table is not there or the insert failed (then logged).
bool insert(std::vector<history_ring::Record> &batch)
{
    for (history_ring::Record &r : batch)
        for (char *s :
             {r.request_id, r.key, r.policy, r.query, r.code, r.client, r.masked, r.params})
            make_valid(s);
    const int n = static_cast<int>(batch.size());
    bool saved = false;
    try {
        pg::guard([&] {
            begin("querygate: saving the run history");
            if (table_exists()) {
                Datum *cols[insert_columns];
                for (Datum *&c : cols)
                    c = static_cast<Datum *>(palloc(sizeof(Datum) * n));
                for (int i = 0; i < n; i++) {
                    const history_ring::Record &r = batch[i];
                    cols[0][i] = Int64GetDatum(r.at_us);
                    cols[1][i] = CStringGetTextDatum(r.request_id);
                    cols[2][i] = CStringGetTextDatum(r.key);
                    cols[3][i] = CStringGetTextDatum(r.policy);
                    cols[4][i] = CStringGetTextDatum(r.query);
                    cols[5][i] = Int64GetDatum(r.revision);
                    cols[6][i] = Int32GetDatum(r.status);
                    cols[7][i] = CStringGetTextDatum(r.code);
                    cols[8][i] = Int64GetDatum(r.duration_us);
                    cols[9][i] = Int64GetDatum(static_cast<int64>(r.rows));
                    cols[10][i] = Int64GetDatum(static_cast<int64>(r.bytes));
                    cols[11][i] = CStringGetTextDatum(r.client);
                    cols[12][i] = Int32GetDatum(r.worker);
                    cols[13][i] = CStringGetTextDatum(r.masked);
                    cols[14][i] = CStringGetTextDatum(r.params);
                }
                // Each column's element type: int8, text or int4.
                static const Oid types[insert_columns] = {
                    INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, INT4OID, TEXTOID,
                    INT8OID, INT8OID, INT8OID, TEXTOID, INT4OID, TEXTOID, TEXTOID};
                Oid array_types[insert_columns];
                Datum arrays[insert_columns];
                for (int c = 0; c < insert_columns; c++) {
                    int16 len;
                    bool byval;
                    char align;
                    get_typlenbyvalalign(types[c], &len, &byval, &align);
                    arrays[c] =
                        PointerGetDatum(construct_array(cols[c], n, types[c], len, byval, align));
                    array_types[c] = get_array_type(types[c]);
                }
                if (SPI_connect() != SPI_OK_CONNECT)
                    elog(ERROR, "querygate: SPI_connect failed");
                if (SPI_execute_with_args(insert_sql, insert_columns, array_types, arrays, nullptr,
                                          false, 0) != SPI_OK_INSERT)
                    elog(ERROR, "querygate: could not insert into querygate.history");
                SPI_finish();
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
    std::vector<history_ring::Record> batch;
    for (int pass = 0; all || pass < batches_per_pass; pass++) {
        history_ring::take(batch, batch_records);
        if (batch.empty())
            return;
        if (insert(batch))
            history_ring::saved(batch.size());
        else
            history_ring::lost(batch.size());
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
                if (table_exists()) {
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
