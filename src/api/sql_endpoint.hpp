// POST /sql: a statement the caller wrote, run as its policy allows (grant_adhoc). The body is a
// JSON object: "sql", the statement, with :name placeholders; "params", their values; and what a
// saved query's call takes (page, page_size, format, timeout, stream). The statement takes the
// call path of a saved query's call (api/call_path.hpp), and its answer is made as one's
// (api/query_endpoint.hpp): every format, paging, exports, the same errors. Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/query_endpoint.hpp"

// The statement as the run history keeps it (querygate.history_sql): a text may hold literal
// values the caller typed, which the hash, by default, does not show.
std::string sql_as_history_keeps(const std::string &sql);
// Notes in the request's trace that it is a call of SQL the caller wrote (POST /sql, MCP's
// execute_sql), so that the history and the run events record it as such.
void note_sql_call(Exchange &ex, const std::string &sql);

class SqlEndpoint {
  public:
    SqlEndpoint(CallPath &path, QueryEndpoint &answers) : path_(path), answers_(answers) {}

    void handle(Exchange &ex);

  private:
    CallPath &path_;
    QueryEndpoint &answers_;
};
