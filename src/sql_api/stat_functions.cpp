// The statistics as SQL sees them: querygate.stat_queries(), querygate.stat_workers() and
// querygate.stat_history(), under the views of the same names, and querygate.stat_reset(). They
// read the shared tables (shmem/stat_table.hpp, shmem/worker_load.hpp), which exist only where the
// library was preloaded: elsewhere the functions return no rows.
#include "pg/pg_guard.hpp"
#include "pg/pg_headers.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
}

#include "shmem/history_ring.hpp"
#include "shmem/stat_table.hpp"
#include "common/metrics.hpp"
#include "common/json_text.hpp"
#include "sql_api/catalog_access.hpp"
#include "shmem/worker_load.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace {

constexpr double ms_per_second = 1000.0;

Datum text_datum(const std::string &s)
{
    return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
}

// {"code": calls, ...} for the codes a query's failed calls ended with.
std::string errors_by_code(const metrics::QueryStats &q)
{
    std::string json = "{";
    for (int i = 1; i < metrics::code_slots; i++) {
        if (q.by_code[i] == 0)
            continue;
        if (json.size() > 1)
            json.push_back(',');
        json_text::append_string(json, metrics::slot_code(i));
        json.push_back(':');
        json.append(std::to_string(q.by_code[i]));
    }
    json.push_back('}');
    return json;
}

TimestampTz from_unix_us(int64 unix_us)
{
    return unix_us - static_cast<int64>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

} // namespace

QUERYGATE_SQL_FUNCTION(querygate_stat_queries)
{
    uint64 unrecorded = 0;
    const std::vector<metrics::QueryStats> queries = stat_table::snapshot(unrecorded);
    // Every C++ string is made here, outside the guarded block, which an error leaves by longjmp.
    std::vector<std::string> codes;
    codes.reserve(queries.size());
    for (const metrics::QueryStats &q : queries)
        codes.push_back(errors_by_code(q));
    pg::guard([&] {
        InitMaterializedSRF(fcinfo, 0);
        ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
        for (std::size_t i = 0; i < queries.size(); i++) {
            const metrics::QueryStats &q = queries[i];
            const double calls = static_cast<double>(q.calls);
            Datum values[13];
            bool nulls[13] = {};
            values[0] = CStringGetTextDatum(metrics::kind_name(q.kind));
            // SQL a caller wrote has no name (metrics::CallKind).
            if (q.kind == metrics::CallKind::sql)
                nulls[1] = true;
            else
                values[1] = text_datum(q.query);
            values[2] = text_datum(q.policy);
            values[3] = Int64GetDatum(static_cast<int64>(q.calls));
            values[4] = Int64GetDatum(static_cast<int64>(q.errors()));
            values[5] = DirectFunctionCall1(jsonb_in, CStringGetDatum(codes[i].c_str()));
            values[6] = Int64GetDatum(static_cast<int64>(q.rows));
            values[7] = Int64GetDatum(static_cast<int64>(q.bytes));
            values[8] = Float8GetDatum(q.total_seconds * ms_per_second);
            values[9] = Float8GetDatum(q.min_seconds * ms_per_second);
            values[10] = Float8GetDatum(q.max_seconds * ms_per_second);
            values[11] = Float8GetDatum(q.mean_seconds * ms_per_second);
            // The population's standard deviation, as pg_stat_statements gives it.
            values[12] =
                Float8GetDatum(calls > 0 ? std::sqrt(q.sum_sq_dev / calls) * ms_per_second : 0.0);
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    return (Datum)0;
}

QUERYGATE_SQL_FUNCTION(querygate_stat_workers)
{
    const std::vector<metrics::WorkerStats> workers = worker_load::snapshot();
    pg::guard([&] {
        InitMaterializedSRF(fcinfo, 0);
        ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
        for (const metrics::WorkerStats &w : workers) {
            Datum values[10];
            bool nulls[10] = {};
            values[0] = Int32GetDatum(w.worker);
            values[1] = Int32GetDatum(w.pid);
            values[2] = TimestampTzGetDatum(from_unix_us(w.started_us));
            values[3] = Int64GetDatum(static_cast<int64>(w.connections));
            values[4] = Int64GetDatum(static_cast<int64>(w.in_flight));
            values[5] = Int64GetDatum(static_cast<int64>(w.requests));
            values[6] = Int64GetDatum(static_cast<int64>(w.errors));
            values[7] = Float8GetDatum(static_cast<double>(w.busy_us) / 1000.0);
            values[8] = Int64GetDatum(static_cast<int64>(w.connections_refused));
            values[9] = Int64GetDatum(static_cast<int64>(w.connections_timed_out));
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    return (Datum)0;
}

QUERYGATE_SQL_FUNCTION(querygate_stat_history)
{
    const metrics::HistoryStats h = history_ring::stats();
    Datum result = (Datum)0;
    pg::guard([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "querygate: stat_history must return a record");
        desc = BlessTupleDesc(desc);
        Datum values[5] = {Int64GetDatum(static_cast<int64>(h.buffered)),
                           Int64GetDatum(static_cast<int64>(h.written)),
                           Int64GetDatum(static_cast<int64>(h.dropped)),
                           Int64GetDatum(static_cast<int64>(h.skipped)),
                           Int64GetDatum(static_cast<int64>(h.lost_at_restart))};
        bool nulls[5] = {};
        result = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
    return result;
}

// Forgets every query's statistics (not the workers' totals, which count since each started,
// as a backend's do). Administrators only.
QUERYGATE_SQL_FUNCTION(querygate_stat_reset)
{
    pg::guard([] { require_admin(); });
    stat_table::reset();
    PG_RETURN_VOID();
}
