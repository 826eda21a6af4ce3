// JSON Schema (2020-12, as OpenAPI 3.1 and MCP read it) of what a caller may call
// (common/api_description.hpp): a parameter's schema from its type and rules, a row's from the
// query's columns as the caller's policy serves them, and the parameters of a call as one object.
// Shared by GET /openapi.json and /catalog (http/openapi.hpp) and MCP's tools/list (http/mcp.hpp).
// Plain C++ (jansson), with the small owning wrapper both build their documents with.
#pragma once

#include "common/api_description.hpp"

#include <jansson.h>

#include <initializer_list>
#include <string>

namespace json_schema {

// A JSON value this code owns; released into a container with take(). Every constructor throws
// std::bad_alloc when jansson could not allocate.
struct Owned {
    json_t *v;
    explicit Owned(json_t *value);
    Owned(Owned &&o) noexcept : v(o.v) { o.v = nullptr; }
    Owned(const Owned &) = delete;
    Owned &operator=(const Owned &) = delete;
    ~Owned() { json_decref(v); }
    json_t *take()
    {
        json_t *t = v;
        v = nullptr;
        return t;
    }
};

Owned object();
Owned array();
Owned str(const std::string &s);
Owned integer(long long n);
Owned boolean(bool b);
// A whole number as an integer (1, not 1.0), any other as a real.
Owned number(double d);
void set(Owned &obj, const char *key, Owned value);
void set(Owned &obj, const std::string &key, Owned value);
void append(Owned &arr, Owned value);
// {"type": type, "description": description}
Owned typed(const char *type, const std::string &description);
// {"type": "object", "properties": properties, "required": [...], "additionalProperties": false}:
// an object with these members and no other, those named in `required` always there.
Owned closed_object(Owned properties, std::initializer_list<const char *> required);
// The same with every member always there.
Owned complete_object(Owned properties);
// The document's text: indented by one space a level when `indent`, else compact.
std::string dump(const Owned &doc, bool indent);

// The name of a value's kind as the catalog says it (integer, number, boolean, json, string).
const char *kind_name(api_description::Kind k);
// A column's kind as the caller's policy serves it: "string" for a hashed one, "null" for a nulled
// one, "string" or "null" for a masked one (text or not), else its type's kind_name.
const char *served_kind_name(const api_description::Column &c);
// Whether a call must give the parameter: it has no rule, or a required one without a default.
bool required(const api_description::Param &p);
Owned param_schema(const api_description::Param &p);
// {"type": "object", "properties": {each parameter}, "required": [...], "additionalProperties":
// false}: the parameters of one call.
Owned params_schema(const api_description::Query &q);
// page and page_size, as /q/{name} takes them, added to an object's properties: the arguments of
// an MCP tool that answers rows (no saved query may have a parameter of either name).
void add_paging(Owned &properties);
// One row of the answer: its columns as the caller's policy serves them, every one of them in
// every row and nothing else (required, additionalProperties false); rows_affected for a write
// without RETURNING.
Owned row_schema(const api_description::Query &q);

// Whether a PostgreSQL regular expression (ARE) means the same as an ECMA-262 one: only
// characters, escapes \d \w \s \D \W \S and escaped punctuation, bracket expressions without
// POSIX classes, groups, alternation, the quantifiers * + ? {m} {m,} {m,n}, and ^ $ . are allowed.
bool ecma_compatible(const std::string &pattern);

} // namespace json_schema
