// GET /metrics's body: the statistics every worker shares (common/metrics.hpp) in Prometheus's
// text exposition format 0.0.4, as its client libraries write it: a HELP and a TYPE line per
// family, `querygate_` names, `_total` counters, a `_seconds` histogram with cumulative `le`
// buckets, `_sum` and `_count`. Labels are the kind of call, the query's name, the code a call
// ended with and the worker's number: bounded by the catalog and the API, never a key, an address,
// a parameter or a statement's text. Calls are summed over policies (querygate.stat_queries keeps
// them apart).
//
// The per-query families count saved queries and SQL callers wrote in one family each, as their
// sum over every label is every call counted (Prometheus's naming guide: split a metric only when
// that sum means nothing). Every sample of such a family has the same labels, kind then query, as
// a client library writes a family (client_golang refuses to register a second description of a
// name with other label names): kind="query" with the query's name, or kind="sql" with query="",
// which Prometheus stores as no query label at all. A selector of a query's name, {query="x"},
// selects what it did before SQL was counted. Plain C++.
#pragma once

#include "common/metrics.hpp"

#include <string>
#include <string_view>

namespace prometheus_text {

inline constexpr const char *content_type = "text/plain; version=0.0.4; charset=utf-8";

// Appends the exposition of snapshot to out.
void render(const metrics::Snapshot &snapshot, std::string &out);

// A label value as the format quotes it: backslash, double quote and newline escaped.
void append_label_value(std::string &out, std::string_view value);

} // namespace prometheus_text
