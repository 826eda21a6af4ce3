// The Prometheus text format: see prometheus_text.hpp.
#include "http/prometheus_text.hpp"

#include "common/version.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>

namespace prometheus_text {

namespace {

// A query's calls, or SQL's, summed over the policies that made them.
struct QueryTotals {
    metrics::CallKind kind = metrics::CallKind::query;
    const std::string *query = nullptr; // empty for SQL
    uint64_t by_code[metrics::code_slots] = {};
    uint64_t buckets[metrics::duration_buckets] = {};
    uint64_t calls = 0;
    uint64_t rows = 0;
    uint64_t bytes = 0;
    double seconds = 0;
};

void append_number(std::string &out, double v)
{
    // The shortest decimal that reads back, never in exponent form: bucket bounds read as
    // Prometheus's own clients write them (le="0.0001"), the same in every scrape. Room for the
    // longest: a double's fixed form has at most 309 digits before the point.
    char buf[400];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
    out.append(buf, r.ec == std::errc() ? static_cast<size_t>(r.ptr - buf) : 0);
}

void append_number(std::string &out, uint64_t v)
{
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
}

void family(std::string &out, const char *name, const char *type, const char *help)
{
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

struct Label {
    const char *name;
    std::string_view value;
};

// name{label="value",...} — the sample's start, up to its value.
void sample(std::string &out, const char *name, std::initializer_list<Label> labels)
{
    out.append(name).push_back('{');
    const char *comma = "";
    for (const Label &l : labels) {
        out.append(comma).append(l.name).append("=\"");
        append_label_value(out, l.value);
        out.push_back('"');
        comma = ",";
    }
    out.append("} ");
}

// A per-query family's sample: its kind and query first, then one more label if any.
void query_sample(std::string &out, const char *name, const QueryTotals &t,
                  const char *label = nullptr, const std::string *value = nullptr)
{
    const char *kind = metrics::kind_name(t.kind);
    if (label == nullptr)
        sample(out, name, {{"kind", kind}, {"query", *t.query}});
    else
        sample(out, name, {{"kind", kind}, {"query", *t.query}, {label, *value}});
}

std::vector<QueryTotals> by_query(const std::vector<metrics::QueryStats> &queries)
{
    std::vector<QueryTotals> totals;
    for (const metrics::QueryStats &q : queries) {
        // The snapshot is sorted by kind, query, then policy: a query's entries are neighbours.
        if (totals.empty() || totals.back().kind != q.kind || *totals.back().query != q.query) {
            totals.emplace_back();
            totals.back().kind = q.kind;
            totals.back().query = &q.query;
        }
        QueryTotals &t = totals.back();
        for (int i = 0; i < metrics::code_slots; i++)
            t.by_code[i] += q.by_code[i];
        for (int i = 0; i < metrics::duration_buckets; i++)
            t.buckets[i] += q.buckets[i];
        t.calls += q.calls;
        t.rows += q.rows;
        t.bytes += q.bytes;
        t.seconds += q.total_seconds;
    }
    return totals;
}

// A family of one sample without labels.
void single(std::string &out, const char *name, const char *type, const char *help, uint64_t v)
{
    family(out, name, type, help);
    out.append(name).push_back(' ');
    append_number(out, v);
    out.push_back('\n');
}

// A counter family with one sample per query.
void query_counter(std::string &out, const std::vector<QueryTotals> &totals,
                   uint64_t QueryTotals::*member, const char *name, const char *help)
{
    family(out, name, "counter", help);
    for (const QueryTotals &t : totals) {
        query_sample(out, name, t);
        append_number(out, t.*member);
        out.push_back('\n');
    }
}

void render_queries(const std::vector<QueryTotals> &totals, std::string &out)
{
    family(out, "querygate_calls_total", "counter",
           "Calls by callers allowed to make them: of saved queries (kind query, by query) and of "
           "SQL the callers wrote (kind sql, query empty), by the code they ended with (ok for "
           "success).");
    for (const QueryTotals &t : totals)
        for (int i = 0; i < metrics::code_slots; i++)
            if (i == 0 || t.by_code[i] != 0) {
                const std::string code = metrics::slot_code(i);
                query_sample(out, "querygate_calls_total", t, "code", &code);
                append_number(out, t.by_code[i]);
                out.push_back('\n');
            }

    family(out, "querygate_call_duration_seconds", "histogram",
           "Time from a call's start to its result, in the process that ran it.");
    for (const QueryTotals &t : totals) {
        uint64_t cumulative = 0;
        for (int i = 0; i < metrics::duration_buckets; i++) {
            cumulative += t.buckets[i];
            std::string le;
            if (i < metrics::duration_buckets - 1)
                append_number(le, metrics::duration_bounds[i]);
            else
                le = "+Inf";
            query_sample(out, "querygate_call_duration_seconds_bucket", t, "le", &le);
            append_number(out, cumulative);
            out.push_back('\n');
        }
        query_sample(out, "querygate_call_duration_seconds_sum", t);
        append_number(out, t.seconds);
        out.push_back('\n');
        query_sample(out, "querygate_call_duration_seconds_count", t);
        append_number(out, t.calls);
        out.push_back('\n');
    }

    query_counter(out, totals, &QueryTotals::rows, "querygate_call_rows_total",
                  "Rows answered by successful calls (rows changed, for writes that return none).");
    query_counter(out, totals, &QueryTotals::bytes, "querygate_call_response_bytes_total",
                  "Bytes of the JSON bodies of successful calls.");
}

void render_workers(const std::vector<metrics::WorkerStats> &workers, std::string &out)
{
    struct Column {
        const char *name;
        const char *type;
        const char *help;
        double (*value)(const metrics::WorkerStats &);
    };
    static const Column columns[] = {
        {"querygate_worker_connections", "gauge", "HTTP connections the worker holds open.",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.connections); }},
        {"querygate_worker_in_flight", "gauge",
         "Calls the worker has handed to a helper or holds for a WAL flush.",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.in_flight); }},
        {"querygate_worker_requests_total", "counter",
         "Requests the worker answered since it started, probes and refusals included.",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.requests); }},
        {"querygate_worker_request_errors_total", "counter",
         "Requests the worker answered with a status of 400 or more since it started.",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.errors); }},
        {"querygate_worker_busy_seconds_total", "counter",
         "Time the worker spent serving rather than waiting for events, since it started.",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.busy_us) / 1e6; }},
        {"querygate_worker_connections_refused_total", "counter",
         "Connections the worker refused as it accepted them (503 too_many_connections).",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.connections_refused); }},
        {"querygate_worker_connections_timed_out_total", "counter",
         "Connections the worker closed for not sending a whole request within "
         "querygate.request_timeout.",
         [](const metrics::WorkerStats &w) {
             return static_cast<double>(w.connections_timed_out);
         }},
        {"querygate_worker_start_time_seconds", "gauge",
         "When the worker started, in seconds since the Unix epoch.",
         [](const metrics::WorkerStats &w) { return static_cast<double>(w.started_us) / 1e6; }},
    };
    for (const Column &c : columns) {
        family(out, c.name, c.type, c.help);
        for (const metrics::WorkerStats &w : workers) {
            sample(out, c.name, {{"worker", std::to_string(w.worker)}});
            append_number(out, c.value(w));
            out.push_back('\n');
        }
    }
}

} // namespace

void append_label_value(std::string &out, std::string_view value)
{
    for (char c : value) {
        if (c == '\\')
            out.append("\\\\");
        else if (c == '"')
            out.append("\\\"");
        else if (c == '\n')
            out.append("\\n");
        else
            out.push_back(c);
    }
}

void render(const metrics::Snapshot &snapshot, std::string &out)
{
    family(out, "querygate_build_info", "gauge", "querygate's version, as a label; always 1.");
    sample(out, "querygate_build_info", {{"version", QUERYGATE_VERSION_TEXT}});
    out.append("1\n");
    single(out, "querygate_statistics_enabled", "gauge",
           "1 while querygate.statistics counts calls, else 0.", snapshot.statistics ? 1 : 0);
    render_queries(by_query(snapshot.queries), out);
    single(out, "querygate_calls_unrecorded_total", "counter",
           "Calls not counted by query because the statistics table was full "
           "(querygate.stat_entries), since the last querygate.stat_reset().",
           snapshot.unrecorded);
    const metrics::HistoryStats &h = snapshot.history;
    single(out, "querygate_history_buffered", "gauge",
           "Run history records waiting in the shared ring for the writer.", h.buffered);
    single(out, "querygate_history_written_total", "counter",
           "Run history records saved to querygate.history.", h.written);
    single(out, "querygate_history_dropped_total", "counter",
           "Run history records lost: the ring was full, or the writer could not save them.",
           h.dropped);
    single(out, "querygate_history_skipped_total", "counter",
           "Successful calls left out of the run history by querygate.history_sample_rate.",
           h.skipped);
    single(out, "querygate_history_lost_at_restart", "gauge",
           "Run history records the rings held when the server last stopped without a clean stop "
           "(a crash, an immediate stop), lost with them.",
           h.lost_at_restart);
    render_workers(snapshot.workers, out);
}

} // namespace prometheus_text
