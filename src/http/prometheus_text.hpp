// GET /metrics's body: the statistics every worker shares (common/metrics.hpp) in Prometheus's
// text exposition format 0.0.4, as its client libraries write it: a HELP and a TYPE line per
// family, `querygate_` names, `_total` counters, a `_seconds` histogram with cumulative `le`
// buckets, `_sum` and `_count`. Labels are the query's name, the code a call ended with and the
// worker's number: bounded by the catalog and the API, never a key, an address or a parameter.
// Calls are summed over policies (querygate.stat_queries keeps them apart). Plain C++.
#pragma once

#include "common/metrics.hpp"

#include <string>

namespace prometheus_text {

inline constexpr const char *content_type = "text/plain; version=0.0.4; charset=utf-8";

// Appends the exposition of snapshot to out.
void render(const metrics::Snapshot &snapshot, std::string &out);

// A label value as the format quotes it: backslash, double quote and newline escaped.
void append_label_value(std::string &out, const std::string &value);

} // namespace prometheus_text
