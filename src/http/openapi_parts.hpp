// The parts of GET /openapi.json that its saved queries' paths (http/openapi.cpp) and the paths of
// SQL a caller writes (http/openapi_sql.cpp) are both made of, so that /sql's answers read as
// /q/{name}'s do. For those two files only. Plain C++ (jansson).
#pragma once

#include "common/api_description.hpp"
#include "http/json_schema.hpp"

#include <string>

namespace openapi {

// {"$ref": to}
json_schema::Owned reference(const std::string &to);
// {"application/json": {"schema": schema}}: a body's or an answer's content.
json_schema::Owned json_content(json_schema::Owned schema);
// A response header of that type, described.
json_schema::Owned header(const char *type, const char *description);
// A call's 200 answer in each format: `json`, the JSON format's schema; the text formats' rows
// are as row_ref says.
json_schema::Owned answer_content(json_schema::Owned json, const std::string &row_ref);
// The headers a call's 200 answer has (its id, its page, its tag, the caller's limit).
json_schema::Owned answer_headers();
// An operation's responses, with every error answer a call can have added.
json_schema::Owned error_responses(json_schema::Owned responses);

// POST /sql and GET /schema for a caller whose policy takes SQL of its own (api.adhoc): their
// paths, the schemas they refer to, and their tag.
void add_sql_paths(json_schema::Owned &paths, json_schema::Owned &schemas,
                   json_schema::Owned &tags);

} // namespace openapi
