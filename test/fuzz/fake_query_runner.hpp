// A stand-in for the PostgreSQL side of a call (src/call/query_runner.cpp, src/pg/settings.cpp),
// for the fuzz targets that drive the request handler without a server or a database: what is
// fuzzed is the parsing in front of the runner, not the runner. See fake_query_runner.cpp.
#pragma once

#include "call/query_runner.hpp"

namespace fake_runner {

// The runner every target shares (QueryRunner cannot be copied).
QueryRunner &instance();

// Calls of run() so far, and the last request it was given.
extern int calls;
extern int anonymous; // calls of limit_anonymous()
extern int recorded;  // calls of record(), and the status the last one recorded
extern int last_record_status;
extern int streams; // event streams open (take_stream less give_stream)
extern CallRequest last;
extern const char *metrics_token; // the one token GET /metrics accepts; null: none is set

} // namespace fake_runner
