// The JSON of a request body, parsed for binding: numbers keep their exact text (a 40-digit numeric
// or an out-of-range integer reaches the parameter's input function as written, which then names
// the parameter), strings are decoded (\u0000 included, so the NUL is refused as that parameter's
// problem), and objects and arrays keep their raw text for json and jsonb parameters. Strict:
// RFC 8259 grammar, valid UTF-8, no duplicate member names (unless the caller keeps them),
// nesting at most 64 deep, nothing after the value. Pure C++: no PostgreSQL header.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace json_body {

struct Value {
    enum class Kind { null, boolean, number, string, object, array };
    Kind kind = Kind::null;
    // string: decoded text; number: the lexeme; boolean: "true" or "false";
    // object and array: their JSON text as sent.
    std::string text;
    std::vector<std::pair<std::string, Value>> members; // object only, in order
};

// What to do with an object that names a member twice. RFC 8259 leaves the meaning open, so by
// default it is refused; a caller that reports repeated names itself, in its own words (a request
// body's parameters: "is given more than once"), keeps them all, in order.
enum class Duplicates { refuse, keep };

// False with a short reason for anything that is not one well-formed JSON value.
bool parse(std::string_view input, Value &out, std::string &error,
           Duplicates duplicates = Duplicates::refuse);

} // namespace json_body
