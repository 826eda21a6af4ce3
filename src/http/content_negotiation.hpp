// Which format a call is answered in (common/answer_format.hpp), from the request: `?format=`
// (or the POST body's "format") wins when given; otherwise the Accept header, read as RFC 9110
// section 12.5.1 says: each format's quality is the q of the most specific media range that
// matches it (text/csv over text/* over */*), a quality of 0 refuses it, and of the formats with
// the highest quality the one whose range comes first in the header is chosen (JSON first among
// those a wildcard allows alike). No Accept, or an empty one: JSON. Media type parameters other
// than q are not compared. Plain C++.
#pragma once

#include "common/answer_format.hpp"

#include <string>

namespace content_negotiation {

// The format for an Accept header's value (null: no header); false when it accepts none of them
// (406 not_acceptable).
bool from_accept(const std::string *accept, AnswerFormat &out);

// The list a 406 names: "application/json, application/x-ndjson, text/csv, ...".
std::string offered();

} // namespace content_negotiation
