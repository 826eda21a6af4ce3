// A call's page and page_size, as a caller gives them: in the query string (?page=2), as fields
// of a POST body ("page": 2), or among an MCP tool's arguments. Each is a whole number from 1:
// page at most max_page, page_size at most querygate.max_page_size. Anything else is 400
// invalid_paging, naming which. No saved query may have a parameter of either name
// (policy/saved_query_analysis.hpp reserves them), so a tool's arguments can carry them beside
// its parameters. Plain C++.
#pragma once

#include "common/api_error.hpp"
#include "common/call.hpp"
#include "http/json_body.hpp"

#include <string>

namespace paging_args {

// Keeps (page - 1) * page_size far from overflow.
inline constexpr long max_page = 1000000000L;

// Whether an argument's name is page or page_size.
bool is_paging(const std::string &name);

// Sets call.page or call.page_size (by `name`, one of the two) from the text of a query string's
// argument: digits only.
ApiError from_text(const std::string &name, const std::string &text, CallRequest &call);
// The same from a JSON value: a number, whole and in range (2, not 2.0 or "2").
ApiError from_json(const std::string &name, const json_body::Value &value, CallRequest &call);

} // namespace paging_args
