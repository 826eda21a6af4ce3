// Fuzzes the JSON request-body parser (src/http/json_body) and the JSON text helpers
// (src/common/json_text) with the bytes of a request body, as a caller sends it.
//
// Beyond the sanitizers, the oracles are:
// - json_text::valid_utf8 agrees with a reference validator written from RFC 3629's table;
// - json_text::append_string always writes one valid JSON string literal (parsed back by
//   json_body and by jansson) that decodes to the input, invalid bytes as U+FFFD;
// - json_body::parse and jansson agree: a document jansson accepts (nesting within 64) is
//   accepted, one jansson refuses is refused unless jansson's reason is a number out of its range
//   or a NUL in a member name, and both read the same strings and member names (inputs with a raw
//   NUL byte, where jansson stops reading, must simply be refused);
// - an accepted document, written back with append_string, parses to the same value.
#include "http/json_body.hpp"
#include "common/json_text.hpp"

#include "fuzz_check.hpp"

#include <jansson.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace {

using json_body::Value;
using Kind = json_body::Value::Kind;

// Length of the UTF-8 sequence at s[i] (RFC 3629, section 4), 0 when there is none.
size_t reference_sequence(std::string_view s, size_t i)
{
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c == 0xE0)
        n = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
        n = 3;
    else if (c == 0xED)
        n = 3, hi = 0x9F;
    else if (c == 0xF0)
        n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else if (c == 0xF4)
        n = 4, hi = 0x8F;
    else
        return 0;
    if (i + n > s.size())
        return 0;
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if (c1 < lo || c1 > hi)
        return 0;
    for (size_t k = 2; k < n; k++) {
        unsigned char ck = static_cast<unsigned char>(s[i + k]);
        if (ck < 0x80 || ck > 0xBF)
            return 0;
    }
    return n;
}

bool reference_valid(std::string_view s)
{
    for (size_t i = 0; i < s.size();) {
        size_t n = reference_sequence(s, i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

// s with every byte that starts no valid sequence replaced by U+FFFD.
std::string reference_repaired(std::string_view s)
{
    std::string out;
    for (size_t i = 0; i < s.size();) {
        size_t n = reference_sequence(s, i);
        if (n == 0) {
            out.append("\xEF\xBF\xBD");
            i++;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

struct JsonDeleter {
    void operator()(json_t *j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

JsonPtr jansson_load(std::string_view text, json_error_t &err)
{
    return JsonPtr(json_loadb(text.data(), text.size(),
                              JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err));
}

// The deepest value's level, the document being level 0 (json_body allows 64).
int depth(const json_t *j)
{
    int d = 0;
    if (json_is_object(j)) {
        const char *key;
        json_t *v;
        json_object_foreach(const_cast<json_t *>(j), key, v)
        {
            d = std::max(d, 1 + depth(v));
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            d = std::max(d, 1 + depth(v));
        }
    }
    return d;
}

// The same value as jansson read it: kinds, strings, member names in order.
void same_as_jansson(const Value &v, const json_t *j)
{
    switch (v.kind) {
    case Kind::null:
        FUZZ_CHECK(json_is_null(j));
        break;
    case Kind::boolean:
        FUZZ_CHECK(json_is_boolean(j));
        FUZZ_CHECK(v.text == (json_is_true(j) ? "true" : "false"));
        break;
    case Kind::number:
        FUZZ_CHECK(json_is_number(j));
        break;
    case Kind::string:
        FUZZ_CHECK(json_is_string(j));
        FUZZ_CHECK(v.text == std::string_view(json_string_value(j), json_string_length(j)));
        break;
    case Kind::array:
        FUZZ_CHECK(json_is_array(j));
        break;
    case Kind::object: {
        FUZZ_CHECK(json_is_object(j));
        FUZZ_CHECK(v.members.size() == json_object_size(j));
        void *it = json_object_iter(const_cast<json_t *>(j));
        for (const auto &[name, member] : v.members) {
            FUZZ_CHECK(it != nullptr);
            FUZZ_CHECK(name == json_object_iter_key(it));
            same_as_jansson(member, json_object_iter_value(it));
            it = json_object_iter_next(const_cast<json_t *>(j), it);
        }
        break;
    }
    }
}

// What a parsed value promises: decoded strings and names are valid UTF-8, names are unique.
void well_formed(const Value &v)
{
    if (v.kind == Kind::string)
        FUZZ_CHECK(json_text::valid_utf8(v.text));
    if (v.kind != Kind::object) {
        FUZZ_CHECK(v.members.empty());
        return;
    }
    FUZZ_CHECK(v.text.size() >= 2 && v.text.front() == '{' && v.text.back() == '}');
    for (size_t i = 0; i < v.members.size(); i++) {
        FUZZ_CHECK(json_text::valid_utf8(v.members[i].first));
        for (size_t k = 0; k < i; k++)
            FUZZ_CHECK(v.members[k].first != v.members[i].first);
        well_formed(v.members[i].second);
    }
}

// The value as JSON text: names and strings through append_string, arrays and numbers as sent.
void write(const Value &v, std::string &out)
{
    switch (v.kind) {
    case Kind::null:
        out += "null";
        break;
    case Kind::string:
        json_text::append_string(out, v.text);
        break;
    case Kind::boolean:
    case Kind::number:
    case Kind::array:
        out += v.text;
        break;
    case Kind::object:
        out += '{';
        for (size_t i = 0; i < v.members.size(); i++) {
            if (i > 0)
                out += ',';
            json_text::append_string(out, v.members[i].first);
            out += ':';
            write(v.members[i].second, out);
        }
        out += '}';
        break;
    }
}

bool same(const Value &a, const Value &b)
{
    if (a.kind != b.kind || a.members.size() != b.members.size())
        return false;
    if (a.kind != Kind::object)
        return a.text == b.text;
    for (size_t i = 0; i < a.members.size(); i++)
        if (a.members[i].first != b.members[i].first ||
            !same(a.members[i].second, b.members[i].second))
            return false;
    return true;
}

void check_text_helpers(std::string_view input)
{
    bool valid = json_text::valid_utf8(input);
    FUZZ_CHECK(valid == reference_valid(input));

    std::string literal = "  ";
    json_text::append_string(literal, input);
    std::string_view written = std::string_view(literal).substr(2);
    FUZZ_CHECK(literal.compare(0, 2, "  ") == 0); // appends, keeps what was there
    FUZZ_CHECK(written.size() >= 2 && written.front() == '"' && written.back() == '"');
    FUZZ_CHECK(json_text::valid_utf8(written));
    for (char c : written)
        FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20);

    Value back;
    std::string error;
    FUZZ_CHECK(json_body::parse(written, back, error));
    FUZZ_CHECK(back.kind == Kind::string);
    FUZZ_CHECK(back.text == (valid ? std::string(input) : reference_repaired(input)));

    json_error_t err;
    JsonPtr j = jansson_load(written, err);
    FUZZ_CHECK(j != nullptr && json_is_string(j.get()));
    FUZZ_CHECK(back.text ==
               std::string_view(json_string_value(j.get()), json_string_length(j.get())));
}

void check_parser(std::string_view input)
{
    Value v;
    std::string error;
    bool ok = json_body::parse(input, v, error);
    FUZZ_CHECK(ok == error.empty());

    // A raw NUL is never JSON (in a string it is a control character); jansson stops reading at
    // one, so it is compared only on inputs without.
    bool has_nul = input.find('\0') != std::string_view::npos;
    if (has_nul)
        FUZZ_CHECK(!ok);
    json_error_t err;
    JsonPtr j = has_nul ? nullptr : jansson_load(input, err);
    if (j && depth(j.get()) <= 64)
        FUZZ_CHECK(ok);
    if (!ok)
        return;
    if (!j) {
        // Numbers are kept as written (a parameter's type reads them), so jansson's range is not
        // a limit here; a NUL in a member name reaches the binding, which refuses it.
        FUZZ_CHECK(std::strstr(err.text, "too big") != nullptr ||
                   std::strstr(err.text, "overflow") != nullptr ||
                   std::strstr(err.text, "NUL") != nullptr);
    } else {
        same_as_jansson(v, j.get());
    }
    well_formed(v);

    // The document's own text, without the white space around it.
    size_t first = input.find_first_not_of(" \t\r\n");
    size_t last = input.find_last_not_of(" \t\r\n");
    std::string_view core = input.substr(first, last - first + 1);
    if (v.kind == Kind::object || v.kind == Kind::array || v.kind == Kind::number)
        FUZZ_CHECK(v.text == core);

    std::string rewritten;
    write(v, rewritten);
    Value again;
    FUZZ_CHECK(json_body::parse(rewritten, again, error));
    FUZZ_CHECK(same(v, again));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::string_view input(reinterpret_cast<const char *>(data), size);
    check_text_helpers(input);
    check_parser(input);
    return 0;
}
