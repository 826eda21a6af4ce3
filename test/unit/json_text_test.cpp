// Tests of src/common/json_text.cpp: UTF-8 validation and JSON string escaping (every output valid
// UTF-8, an invalid byte becomes U+FFFD). The round trips parse the output back with
// src/http/json_body.cpp.
#include "http/json_body.hpp"
#include "common/json_text.hpp"
#include "tap.hpp"

#include <random>
#include <string>

namespace {

using tap::is;
using tap::ok;

std::string quoted(std::string_view s)
{
    std::string out;
    json_text::append_string(out, s);
    return out;
}

std::string bytes(std::initializer_list<int> list)
{
    std::string out;
    for (int b : list)
        out.push_back(static_cast<char>(b));
    return out;
}

// Encodes a code point as UTF-8 (test-side, for the exhaustive checks).
std::string utf8(unsigned cp)
{
    if (cp < 0x80)
        return bytes({static_cast<int>(cp)});
    if (cp < 0x800)
        return bytes({static_cast<int>(0xC0 | (cp >> 6)), static_cast<int>(0x80 | (cp & 0x3F))});
    if (cp < 0x10000)
        return bytes({static_cast<int>(0xE0 | (cp >> 12)),
                      static_cast<int>(0x80 | ((cp >> 6) & 0x3F)),
                      static_cast<int>(0x80 | (cp & 0x3F))});
    return bytes({static_cast<int>(0xF0 | (cp >> 18)), static_cast<int>(0x80 | ((cp >> 12) & 0x3F)),
                  static_cast<int>(0x80 | ((cp >> 6) & 0x3F)),
                  static_cast<int>(0x80 | (cp & 0x3F))});
}

void valid_utf8()
{
    using json_text::valid_utf8;
    ok(valid_utf8(""), "valid_utf8: empty");
    ok(valid_utf8("plain ASCII ~"), "valid_utf8: ASCII");
    ok(valid_utf8(std::string("a\0b", 3)), "valid_utf8: a NUL byte is U+0000, valid");
    ok(valid_utf8("\x7F"), "valid_utf8: DEL");
    ok(valid_utf8("\xC2\x80"), "valid_utf8: U+0080, the smallest 2-byte sequence");
    ok(valid_utf8("Zo\xC3\xAB"), "valid_utf8: 2-byte sequence");
    ok(valid_utf8("\xDF\xBF"), "valid_utf8: U+07FF");
    ok(valid_utf8("\xE0\xA0\x80"), "valid_utf8: U+0800, the smallest 3-byte sequence");
    ok(valid_utf8("\xE2\x82\xAC"), "valid_utf8: euro sign");
    ok(valid_utf8("\xED\x9F\xBF"), "valid_utf8: U+D7FF, just below the surrogates");
    ok(valid_utf8("\xEE\x80\x80"), "valid_utf8: U+E000, just above the surrogates");
    ok(valid_utf8("\xEF\xBB\xBF"), "valid_utf8: U+FEFF (a BOM is a character)");
    ok(valid_utf8("\xEF\xBF\xBF"), "valid_utf8: U+FFFF");
    ok(valid_utf8("\xF0\x90\x80\x80"), "valid_utf8: U+10000, the smallest 4-byte sequence");
    ok(valid_utf8("\xF0\x9F\x98\x80"), "valid_utf8: emoji");
    ok(valid_utf8("\xF4\x8F\xBF\xBF"), "valid_utf8: U+10FFFF, the largest code point");

    ok(!valid_utf8("\x80"), "valid_utf8: a lone continuation byte");
    ok(!valid_utf8("a\xBF"), "valid_utf8: a continuation byte after ASCII");
    ok(!valid_utf8("\xC3"), "valid_utf8: a 2-byte sequence cut at the end");
    ok(!valid_utf8("\xC3z"), "valid_utf8: a 2-byte lead before ASCII");
    ok(!valid_utf8("\xE2\x82"), "valid_utf8: a 3-byte sequence cut at the end");
    ok(!valid_utf8("\xF0\x9F\x98"), "valid_utf8: a 4-byte sequence cut at the end");
    ok(!valid_utf8("\xE2\x82\xC3\xAB"), "valid_utf8: a 3-byte sequence cut by another lead");
    ok(!valid_utf8("\xC0\x80"), "valid_utf8: overlong NUL (C0 80)");
    ok(!valid_utf8("\xC0\xAF"), "valid_utf8: overlong '/' (C0 AF)");
    ok(!valid_utf8("\xC1\xBF"), "valid_utf8: overlong U+007F (C1 BF)");
    ok(!valid_utf8("\xE0\x80\xAF"), "valid_utf8: overlong '/' in 3 bytes");
    ok(!valid_utf8("\xE0\x9F\xBF"), "valid_utf8: overlong U+07FF in 3 bytes");
    ok(!valid_utf8("\xF0\x80\x80\xAF"), "valid_utf8: overlong '/' in 4 bytes");
    ok(!valid_utf8("\xF0\x8F\xBF\xBF"), "valid_utf8: overlong U+FFFF in 4 bytes");
    ok(!valid_utf8("\xED\xA0\x80"), "valid_utf8: surrogate U+D800");
    ok(!valid_utf8("\xED\xBF\xBF"), "valid_utf8: surrogate U+DFFF");
    ok(!valid_utf8("\xED\xA0\xBD\xED\xB8\x80"), "valid_utf8: a surrogate pair (CESU-8)");
    ok(!valid_utf8("\xF4\x90\x80\x80"), "valid_utf8: U+110000, above the last code point");
    ok(!valid_utf8("\xF7\xBF\xBF\xBF"), "valid_utf8: F7 BF BF BF");
    ok(!valid_utf8("\xF8\x88\x80\x80\x80"), "valid_utf8: a 5-byte form");
    ok(!valid_utf8("\xFC\x84\x80\x80\x80\x80"), "valid_utf8: a 6-byte form");
    ok(!valid_utf8("\xFE"), "valid_utf8: FE");
    ok(!valid_utf8("\xFF"), "valid_utf8: FF");
    ok(!valid_utf8("\xFF\xFE"), "valid_utf8: a UTF-16 BOM");
    ok(!valid_utf8(std::string(100000, 'a') + "\xC3"),
       "valid_utf8: an invalid byte at the end of 100 kB");

    // Every code point, against the test's own encoder: valid exactly when it is not a surrogate.
    unsigned wrong = 0, first = 0;
    for (unsigned cp = 0; cp <= 0x10FFFF; cp++) {
        bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        if (valid_utf8(utf8(cp)) == surrogate && wrong++ == 0)
            first = cp;
    }
    ok(wrong == 0, "valid_utf8: every code point, valid unless a surrogate",
       std::to_string(wrong) + " wrong, the first U+" + std::to_string(first));
    // Every 2-byte string: valid exactly when it is two ASCII bytes or a lead C2-DF and a
    // continuation.
    wrong = 0;
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            bool expected =
                (a < 0x80 && b < 0x80) || (a >= 0xC2 && a <= 0xDF && (b & 0xC0) == 0x80);
            if (valid_utf8(bytes({a, b})) != expected)
                wrong++;
        }
    is(wrong, 0, "valid_utf8: every 2-byte string");
}

void append_string()
{
    is(quoted(""), "\"\"", "append_string: empty");
    is(quoted("plain"), "\"plain\"", "append_string: plain text");
    is(quoted("say \"hi\""), "\"say \\\"hi\\\"\"", "append_string: quotes escaped");
    is(quoted("a\\b"), "\"a\\\\b\"", "append_string: backslash escaped");
    is(quoted("a/b"), "\"a/b\"", "append_string: slash as it is");
    is(quoted("\n\r\t"), "\"\\n\\r\\t\"", "append_string: newline, return, tab");
    is(quoted("\b\f"), "\"\\u0008\\u000c\"", "append_string: backspace and form feed as \\u");
    is(quoted(std::string("a\0b", 3)), "\"a\\u0000b\"", "append_string: NUL as \\u0000");
    is(quoted("\x01\x1F"), "\"\\u0001\\u001f\"", "append_string: control characters, lower hex");
    is(quoted("\x7F"), "\"\x7F\"", "append_string: DEL as it is");
    is(quoted("Zo\xC3\xAB \xE2\x82\xAC \xF0\x9F\x98\x80"),
       "\"Zo\xC3\xAB \xE2\x82\xAC \xF0\x9F\x98\x80\"",
       "append_string: multibyte characters as they are");
    is(quoted("\xEF\xBF\xBD"), "\"\xEF\xBF\xBD\"", "append_string: U+FFFD itself as it is");
    is(quoted("\xFF"), "\"\\ufffd\"", "append_string: an invalid byte becomes \\ufffd");
    is(quoted("a\x80z"), "\"a\\ufffdz\"", "append_string: a lone continuation byte");
    is(quoted("\xC3"), "\"\\ufffd\"", "append_string: a sequence cut at the end");
    is(quoted("\xE2\x82"), "\"\\ufffd\\ufffd\"",
       "append_string: a cut 3-byte sequence, one \\ufffd per byte");
    is(quoted("\xE2\x82z"), "\"\\ufffd\\ufffdz\"",
       "append_string: a cut 3-byte sequence before ASCII");
    is(quoted("\xC3\xC3\xAB"), "\"\\ufffd\xC3\xAB\"",
       "append_string: a lead byte before a whole sequence");
    is(quoted("\xC0\xAF"), "\"\\ufffd\\ufffd\"", "append_string: an overlong '/'");
    is(quoted("\xED\xA0\x80"), "\"\\ufffd\\ufffd\\ufffd\"", "append_string: a surrogate");
    is(quoted("\xF4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
       "append_string: above U+10FFFF");
    is(quoted("\"\xFF\\"), "\"\\\"\\ufffd\\\\\"", "append_string: escapes around an invalid byte");

    is(json_text::as_read("a\xFF\xC3\xAB"), "a\xEF\xBF\xBD\xC3\xAB",
       "as_read: an invalid byte reads as U+FFFD, valid text as it is");
    is(json_text::as_read("\xA4"), json_text::as_read("\x9B"),
       "as_read: two different invalid bytes read the same");
    is(json_text::as_read("\xA4"), std::string("\xEF\xBF\xBD"),
       "as_read: an invalid byte reads as a real U+FFFD");

    std::string out = "prefix:";
    json_text::append_string(out, "x");
    is(out, "prefix:\"x\"", "append_string: appends to what out holds");
    json_text::append_string(out, "y");
    is(out, "prefix:\"x\"\"y\"", "append_string: appends again");

    std::string big(1 << 20, 'x');
    big[12345] = '"';
    std::string q = quoted(big);
    is(q.size(), (1u << 20) + 3, "append_string: 1 MB with one quote");

    // Every byte value alone: the output is valid UTF-8 and parses back as a JSON string.
    int wrong = 0;
    for (int b = 0; b < 256; b++) {
        std::string one = bytes({b});
        std::string text = quoted(one);
        json_body::Value v;
        std::string error;
        bool parsed = json_body::parse(text, v, error) && v.kind == json_body::Value::Kind::string;
        bool expected_text = b < 0x80 ? v.text == one : v.text == "\xEF\xBF\xBD";
        if (!json_text::valid_utf8(text) || !parsed || !expected_text)
            wrong++;
    }
    is(wrong, 0, "append_string: each single byte round-trips (U+FFFD for 80-FF)");
}

// Random strings: valid UTF-8 round-trips exactly; arbitrary bytes always give valid UTF-8 JSON.
void round_trips()
{
    std::mt19937 rng(20261201);
    std::uniform_int_distribution<int> len(0, 40), byte(0, 255), kind(0, 9);
    std::uniform_int_distribution<unsigned> cp(0, 0x10FFFF);
    int bad_valid = 0, bad_any = 0;
    std::string first_bad;
    for (int i = 0; i < 20000; i++) {
        std::string s;
        for (int n = len(rng); n > 0; n--) {
            int k = kind(rng);
            if (k < 4) {
                s.push_back(static_cast<char>(byte(rng) & 0x7F)); // ASCII, controls included
            } else {
                unsigned c = cp(rng);
                if (c >= 0xD800 && c <= 0xDFFF)
                    c = 0xFFFD;
                s += utf8(c);
            }
        }
        std::string text = quoted(s);
        json_body::Value v;
        std::string error;
        if (!json_body::parse(text, v, error) || v.kind != json_body::Value::Kind::string ||
            v.text != s) {
            if (bad_valid++ == 0)
                first_bad = tap::show(s);
        }
    }
    ok(bad_valid == 0, "round trip: 20000 random valid UTF-8 strings parse back unchanged",
       std::to_string(bad_valid) + " failed, the first " + first_bad);
    for (int i = 0; i < 20000; i++) {
        std::string s;
        for (int n = len(rng); n > 0; n--)
            s.push_back(static_cast<char>(byte(rng)));
        std::string text = quoted(s);
        json_body::Value v;
        std::string error;
        bool good = json_text::valid_utf8(text) && json_body::parse(text, v, error) &&
                    v.kind == json_body::Value::Kind::string && json_text::valid_utf8(v.text);
        // The valid parts survive: where s was valid UTF-8 already, nothing changed.
        if (good && json_text::valid_utf8(s))
            good = v.text == s;
        if (!good && bad_any++ == 0)
            first_bad = tap::show(s);
    }
    ok(bad_any == 0, "round trip: 20000 random byte strings give valid JSON strings",
       std::to_string(bad_any) + " failed, the first " + first_bad);
}

} // namespace

int main()
{
    valid_utf8();
    append_string();
    round_trips();
    return tap::done();
}
