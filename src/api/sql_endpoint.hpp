// POST /sql: a statement the caller wrote, run as its policy allows (grant_adhoc). The body is a
// JSON object: "sql", the statement, with :name placeholders; "params", their values; and what a
// saved query's call takes (page, page_size, format, timeout, stream). The statement takes the
// call path of a saved query's call (api/call_path.hpp), and its answer is made as one's
// (api/query_endpoint.hpp): every format, paging, exports, the same errors. Plain C++.
#pragma once

#include "api/call_path.hpp"
#include "api/exchange.hpp"
#include "api/query_endpoint.hpp"

class SqlEndpoint {
  public:
    SqlEndpoint(CallPath &path, QueryEndpoint &answers) : path_(path), answers_(answers) {}

    void handle(Exchange &ex);

  private:
    CallPath &path_;
    QueryEndpoint &answers_;
};
