// JSON text for values that come from callers or from code (error bodies, parameter names):
// escaped, and always valid UTF-8 (an invalid byte becomes U+FFFD). Pure C++.
#pragma once

#include <string>
#include <string_view>

namespace json_text {

// Appends s as a JSON string literal, quotes included.
void append_string(std::string &out, std::string_view s);

// The string a JSON reader gets back from append_string(s): s with each invalid byte replaced
// by U+FFFD. Two names with one reading are one member name in a JSON object.
std::string as_read(std::string_view s);

// True when s is valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s);

} // namespace json_text
