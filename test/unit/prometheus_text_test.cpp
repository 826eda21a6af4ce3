// prometheus_text::render: the families in order, each announced once by HELP and TYPE; a query's
// calls summed over its policies, and SQL's apart from them under kind="sql" with an empty query;
// cumulative buckets ending in +Inf equal to _count; label values escaped as the format says;
// numbers that read back.
#include "http/prometheus_text.hpp"

#include "common/version.hpp"

#include "tap.hpp"

#include <string>
#include <vector>

namespace {

std::vector<std::string> lines_of(const std::string &text)
{
    std::vector<std::string> out;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

bool has_line(const std::vector<std::string> &lines, const std::string &line)
{
    for (const std::string &l : lines)
        if (l == line)
            return true;
    return false;
}

} // namespace

int main()
{
    metrics::Snapshot s;
    metrics::QueryStats a;
    a.query = "orders";
    a.policy = "p1";
    a.calls = 3;
    a.by_code[0] = 2;
    a.by_code[metrics::code_slot("param_invalid")] = 1;
    a.buckets[0] = 1; // <= 0.0001
    a.buckets[3] = 2; // <= 0.001
    a.rows = 5;
    a.bytes = 70;
    a.total_seconds = 0.0021;
    metrics::QueryStats b = a;
    b.policy = "p2";
    b.calls = 1;
    b.by_code[0] = 1;
    b.by_code[metrics::code_slot("param_invalid")] = 0;
    b.buckets[0] = 0;
    b.buckets[3] = 0;
    b.buckets[metrics::duration_buckets - 1] = 1; // over 10 s
    b.rows = 1;
    b.bytes = 10;
    b.total_seconds = 12.5;
    metrics::QueryStats odd;
    odd.query = "a\"b\\c\nd";
    odd.policy = "p1";
    // SQL of two policies, after the saved queries as the snapshot sorts them.
    metrics::QueryStats sql1;
    sql1.kind = metrics::CallKind::sql;
    sql1.policy = "p1";
    sql1.calls = 2;
    sql1.by_code[0] = 1;
    sql1.by_code[metrics::code_slot("name_not_allowed")] = 1;
    sql1.buckets[1] = 2; // <= 0.00025
    sql1.rows = 3;
    sql1.bytes = 40;
    sql1.total_seconds = 0.0004;
    metrics::QueryStats sql2 = sql1;
    sql2.policy = "p2";
    sql2.calls = 1;
    sql2.by_code[metrics::code_slot("name_not_allowed")] = 0;
    sql2.buckets[1] = 1;
    s.queries = {a, b, odd, sql1, sql2};
    metrics::WorkerStats w;
    w.worker = 2;
    w.connections = 4;
    w.requests = 9;
    w.busy_us = 1500000;
    s.workers = {w};
    s.unrecorded = 7;
    s.history.lost_at_restart = 31;

    std::string out;
    prometheus_text::render(s, out);
    const std::vector<std::string> lines = lines_of(out);

    tap::ok(!out.empty() && out.back() == '\n', "the body ends with a newline");
    tap::ok(has_line(lines, "querygate_build_info{version=\"" QUERYGATE_VERSION_TEXT "\"} 1"),
            "build_info");
    tap::ok(has_line(lines, "# TYPE querygate_calls_total counter"), "calls: a counter");
    tap::ok(has_line(lines, "querygate_calls_total{kind=\"query\",query=\"orders\",code=\"ok\"} 3"),
            "calls summed over policies (2 + 1)");
    tap::ok(
        has_line(lines,
                 "querygate_calls_total{kind=\"query\",query=\"orders\",code=\"param_invalid\"} 1"),
        "calls by code");
    tap::ok(
        !has_line(lines,
                  "querygate_calls_total{kind=\"query\",query=\"orders\",code=\"query_failed\"} 0"),
        "codes no call ended with are left out");
    tap::ok(
        has_line(lines,
                 "querygate_calls_total{kind=\"query\",query=\"a\\\"b\\\\c\\nd\",code=\"ok\"} 0"),
        "a label value is escaped, and ok is there even when 0");
    tap::ok(has_line(lines, "# TYPE querygate_call_duration_seconds histogram"),
            "duration: a histogram");
    tap::ok(has_line(lines, "querygate_call_duration_seconds_bucket{kind=\"query\",query="
                            "\"orders\",le=\"0.0001\"} 1"),
            "the first bucket");
    tap::ok(has_line(lines, "querygate_call_duration_seconds_bucket{kind=\"query\",query="
                            "\"orders\",le=\"0.0005\"} 1"),
            "buckets are cumulative (nothing new at 0.0005)");
    tap::ok(has_line(lines, "querygate_call_duration_seconds_bucket{kind=\"query\",query="
                            "\"orders\",le=\"0.001\"} 3"),
            "buckets are cumulative (two more at 0.001)");
    tap::ok(
        has_line(
            lines,
            "querygate_call_duration_seconds_bucket{kind=\"query\",query=\"orders\",le=\"10\"} 3"),
        "the last finite bucket");
    tap::ok(has_line(lines, "querygate_call_duration_seconds_bucket{kind=\"query\",query="
                            "\"orders\",le=\"+Inf\"} 4"),
            "+Inf holds every call");
    tap::ok(
        has_line(lines, "querygate_call_duration_seconds_count{kind=\"query\",query=\"orders\"} 4"),
        "_count");
    tap::ok(
        has_line(lines,
                 "querygate_call_duration_seconds_sum{kind=\"query\",query=\"orders\"} 12.5021"),
        "_sum, the shortest number that reads back");
    tap::ok(has_line(lines, "querygate_call_rows_total{kind=\"query\",query=\"orders\"} 6"),
            "rows");
    tap::ok(
        has_line(lines, "querygate_call_response_bytes_total{kind=\"query\",query=\"orders\"} 80"),
        "bytes");
    tap::ok(has_line(lines, "querygate_calls_total{kind=\"sql\",query=\"\",code=\"ok\"} 2"),
            "SQL's calls summed over policies (1 + 1), under its kind, its query empty");
    tap::ok(has_line(lines,
                     "querygate_calls_total{kind=\"sql\",query=\"\",code=\"name_not_allowed\"} 1"),
            "SQL's calls by code");
    tap::ok(has_line(lines, "querygate_call_duration_seconds_bucket{kind=\"sql\",query=\"\","
                            "le=\"0.00025\"} 3"),
            "SQL's histogram");
    tap::ok(has_line(lines, "querygate_call_duration_seconds_count{kind=\"sql\",query=\"\"} 3"),
            "SQL's _count");
    tap::ok(has_line(lines, "querygate_call_rows_total{kind=\"sql\",query=\"\"} 6"), "SQL's rows");
    tap::ok(has_line(lines, "querygate_call_response_bytes_total{kind=\"sql\",query=\"\"} 80"),
            "SQL's bytes");
    int unkinded = 0;
    for (const std::string &l : lines)
        if (l.compare(0, 15, "querygate_call_") == 0 ||
            l.compare(0, 22, "querygate_calls_total{") == 0)
            unkinded += l.find("{kind=\"") == std::string::npos;
    tap::ok(unkinded == 0, "every sample of the per-query families names its kind first",
            std::to_string(unkinded) + " do not");
    tap::ok(has_line(lines, "querygate_calls_unrecorded_total 7"), "unrecorded");
    tap::ok(has_line(lines, "# TYPE querygate_history_lost_at_restart gauge") &&
                has_line(lines, "querygate_history_lost_at_restart 31"),
            "history records lost at the last restart without a clean stop: a gauge");
    tap::ok(has_line(lines, "querygate_worker_connections{worker=\"2\"} 4"), "worker connections");
    tap::ok(has_line(lines, "querygate_worker_requests_total{worker=\"2\"} 9"), "worker requests");
    tap::ok(has_line(lines, "querygate_worker_busy_seconds_total{worker=\"2\"} 1.5"),
            "worker busy time in seconds");

    // Every sample follows its family's TYPE line, and each family is announced once.
    std::string family;
    int bad = 0, types = 0, helps = 0;
    for (const std::string &l : lines) {
        if (l.compare(0, 7, "# TYPE ") == 0) {
            family = l.substr(7, l.find(' ', 7) - 7);
            types++;
            bad += out.find("# TYPE " + family + " ") != out.rfind("# TYPE " + family + " ");
        } else if (l.compare(0, 7, "# HELP ") == 0) {
            helps++;
        } else if (l.compare(0, family.size(), family) != 0 || family.empty()) {
            bad++;
        }
    }
    tap::ok(bad == 0, "every sample is in the family announced before it",
            std::to_string(bad) + " lines out of place");
    tap::ok(types == helps && types == 20, "20 families, each with HELP and TYPE",
            std::to_string(types) + " TYPE, " + std::to_string(helps) + " HELP");
    tap::ok(out.find("p1") == std::string::npos && out.find("p2") == std::string::npos,
            "no policy is a label");
    return tap::done();
}
