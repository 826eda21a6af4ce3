// GET /openapi.json and GET /catalog: what a caller may call (common/api_description.hpp), as an
// OpenAPI 3.1 document and as plain JSON. Plain C++ (jansson).
//
// OpenAPI: a path /q/{name} per query, GET with its parameters in the query string and POST with
// them in a JSON body; each parameter's schema from its type and rules (enum, minimum, maximum,
// minLength, maxLength, default, and pattern when the PostgreSQL regular expression means the same
// in ECMA-262, else the expression under x-postgresql-pattern); the answer's schema from the
// query's columns as the caller's policy serves them (a hashed column 64 hex digits, a masked one
// text or null, a nulled one null, a dropped one absent), in each format; the options every call
// takes (page, page_size, format, timeout, stream); both security schemes; and every error
// answer with the error body's schema. For a caller whose policy takes SQL of its own, POST /sql
// and GET /schema too (http/openapi_sql.cpp).
#pragma once

#include "common/api_description.hpp"

#include <string>

namespace openapi {

std::string document(const api_description::Api &api);

// {"queries": [{name, description, version, writes, parameters: [{name, type, postgres_type,
// required, rules...}], columns: [{name, type, postgres_type, mask}], formats}]}
std::string catalog(const api_description::Api &api);

} // namespace openapi
