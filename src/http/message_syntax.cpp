// The request line and field lines as RFC 9112 writes them: see message_syntax.hpp.
#include "http/message_syntax.hpp"

#include "common/api_error.hpp"
#include "common/chars.hpp"

#include <cstdint>
#include <cstring>

namespace message_syntax {

const Problem control_in_path{
    error_code::invalid_path.code,
    "the path holds a control character (raw or percent-encoded, %00 to %1F or %7F): no path or "
    "query name has one, and a path is never cut at one"};
const Problem invalid_target{
    error_code::invalid_request,
    "the request-target is not a path or an absolute http(s) URI without spaces or control "
    "characters, with every '%' followed by two hex digits (RFC 9112 3.2)"};
const Problem invalid_method{
    error_code::invalid_request,
    "the request line is not a method (a token), one space, the request-target, one space and "
    "the HTTP version (RFC 9112 3)"};
const Problem invalid_field_name{
    error_code::invalid_request,
    "a header field name is not a token: no whitespace may stand between a field name and its "
    "colon (RFC 9112 5.1)"};
const Problem invalid_field_value{error_code::invalid_request,
                                  "a header field value holds a NUL, CR or LF (RFC 9110 5.5)"};
const Problem folded_field{
    error_code::invalid_request,
    "a header field line is continued on the next line (obsolete line folding, RFC 9112 5.2)"};
const Problem missing_host{error_code::invalid_request,
                           "an HTTP/1.1 request must have a Host header field (RFC 9112 3.2)"};
const Problem several_hosts{error_code::invalid_request,
                            "a request may have only one Host header field (RFC 9112 3.2)"};
const Problem invalid_host{
    error_code::invalid_request,
    "the Host header field is not a host name or address with an optional port (RFC 9112 3.2)"};
const Problem transfer_encoding_in_http10{
    error_code::invalid_request,
    "an HTTP/1.0 request cannot be framed by Transfer-Encoding (RFC 9112 6.1)"};
const Problem malformed_head{error_code::invalid_request,
                             "the request's head is not well-formed HTTP/1.1 (RFC 9112 2.2)"};

namespace {

bool is_hex(char c)
{
    return chars::is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_value(char c)
{
    if (chars::is_digit(c))
        return c - '0';
    return chars::to_lower(c) - 'a' + 10;
}

// A control character (RFC 5234 CTL): %x00-1F and DEL.
bool is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

// tchar (RFC 9110 5.6.2), a table: every field name of every request is checked.
struct TcharTable {
    bool of[256] = {};
    constexpr TcharTable()
    {
        for (int c = 0; c < 256; c++)
            of[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        for (const char *p = "!#$%&'*+-.^_`|~"; *p != '\0'; p++)
            of[static_cast<unsigned char>(*p)] = true;
    }
};
constexpr TcharTable tchars;

bool is_tchar(char c)
{
    return tchars.of[static_cast<unsigned char>(c)];
}

bool is_token(std::string_view s)
{
    if (s.empty())
        return false;
    for (char c : s)
        if (!is_tchar(c))
            return false;
    return true;
}

bool is_unreserved(char c)
{
    return chars::is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

bool is_sub_delim(char c)
{
    return c != '\0' && std::strchr("!$&'()*+,;=", c) != nullptr;
}

// The length of "http://" or "https://" at the start of `s` (any case), or 0.
std::size_t scheme_length(std::string_view s)
{
    if (chars::istarts_with(s, "http://"))
        return 7;
    if (chars::istarts_with(s, "https://"))
        return 8;
    return 0;
}

// uri-host [ ":" port ] (RFC 9110 7.2, RFC 3986 3.2.2): an IP literal in brackets, or a reg-name
// (an IPv4 address is one), which may be empty; a port of digits.
bool valid_host(std::string_view v, bool pct_allowed)
{
    std::size_t i = 0;
    if (!v.empty() && v[0] == '[') {
        const std::size_t close = v.find(']');
        if (close == std::string_view::npos || close == 1)
            return false;
        // IPv6address or IPvFuture: hex digits, colons, dots, and IPvFuture's characters.
        for (i = 1; i < close; i++)
            if (!(is_unreserved(v[i]) || is_sub_delim(v[i]) || v[i] == ':'))
                return false;
        i = close + 1;
    } else {
        for (; i < v.size() && v[i] != ':'; i++) {
            if (v[i] == '%' && pct_allowed && i + 2 < v.size() && is_hex(v[i + 1]) &&
                is_hex(v[i + 2])) {
                i += 2;
                continue;
            }
            if (!(is_unreserved(v[i]) || is_sub_delim(v[i])))
                return false;
        }
    }
    if (i == v.size())
        return true;
    if (v[i] != ':')
        return false;
    for (i++; i < v.size(); i++)
        if (!chars::is_digit(v[i]))
            return false;
    return true;
}

} // namespace

const Problem *target(std::string_view raw, TargetForm &form)
{
    form = TargetForm::other;
    if (!raw.empty() && raw[0] == '/') {
        form = TargetForm::origin;
    } else if (raw == "*") {
        form = TargetForm::asterisk;
    } else if (const std::size_t scheme = scheme_length(raw); scheme != 0) {
        std::string_view authority = raw.substr(scheme);
        authority = authority.substr(0, authority.find_first_of("/?"));
        // Without '%': its decoded form is then the same, and origin_path() finds the path after
        // it in the decoded target.
        if (!authority.empty() && valid_host(authority, false))
            form = TargetForm::absolute;
    }
    bool in_query = false;
    for (std::size_t i = 0; i < raw.size(); i++) {
        const unsigned char c = static_cast<unsigned char>(raw[i]);
        if (c == '?')
            in_query = true;
        if (is_control(c))
            return in_query ? &invalid_target : &control_in_path;
        if (c == ' ' || c == '#') // a fragment is never sent (RFC 9112 3.2's grammar has none)
            return &invalid_target;
        if (c != '%')
            continue;
        if (i + 2 >= raw.size() || !is_hex(raw[i + 1]) || !is_hex(raw[i + 2]))
            return &invalid_target;
        const int decoded = hex_value(raw[i + 1]) * 16 + hex_value(raw[i + 2]);
        if (!in_query && is_control(static_cast<unsigned char>(decoded)))
            return &control_in_path;
        i += 2;
    }
    return nullptr;
}

const Problem *request(const HttpRequest &r, TargetForm form, std::string_view version)
{
    if (!is_token(r.method))
        return &invalid_method;
    // Nothing here serves CONNECT: its authority-form is routed, and not found.
    if ((form == TargetForm::asterisk && r.method != "OPTIONS") ||
        (form == TargetForm::other && r.method != "CONNECT"))
        return &invalid_target;
    int hosts = 0, encodings = 0;
    const std::string *host = nullptr;
    for (const auto &h : r.headers) {
        if (!is_token(h.first))
            return &invalid_field_name;
        if (h.second.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
            return &invalid_field_value;
        if (h.first == "host") {
            hosts++;
            host = &h.second;
        } else if (h.first == "transfer-encoding") {
            encodings++;
        }
    }
    const bool http10 = version == "HTTP/1.0";
    if (hosts > 1)
        return &several_hosts;
    if (hosts == 0 && !http10)
        return &missing_host;
    if (host != nullptr && !valid_host(*host, true))
        return &invalid_host;
    if (http10 && encodings > 0)
        return &transfer_encoding_in_http10;
    return nullptr;
}

std::string_view origin_path(std::string_view path)
{
    const std::size_t scheme = scheme_length(path);
    if (scheme == 0)
        return path;
    const std::size_t slash = path.find('/', scheme);
    return slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
}

namespace {

using Address = std::uintptr_t;

Address at(const char *p)
{
    return reinterpret_cast<Address>(p);
}

// Whether every byte of [from, to) is zero (libmicrohttpd's zeroed colons and line ends).
bool zeros(const char *from, const char *to)
{
    for (const char *p = from; p < to; p++)
        if (*p != '\0')
            return false;
    return true;
}

} // namespace

HeadLayout::HeadLayout(const char *method, const char *target, std::size_t target_size,
                       bool target_query, const char *version, const char *end)
    : end_(end), next_(end)
{
    if (method == nullptr || target == nullptr || version == nullptr || end == nullptr ||
        at(method) >= at(end) || at(target) <= at(method) || at(version) <= at(target) ||
        at(version) >= at(end)) {
        fail(malformed_head);
        return;
    }
    // "METHOD SP": the method is NUL-ended where its space was; one space, then the target.
    if (at(target) != at(method) + std::strlen(method) + 1) {
        fail(invalid_method);
        return;
    }
    // "target SP version": a target that ends before the span does was cut at a NUL.
    if (at(target) + target_size + 1 != at(version)) {
        fail(target_query ? invalid_target : control_in_path);
        return;
    }
    const std::size_t version_size = std::strlen(version);
    if (at(version) + version_size >= at(end)) {
        fail(malformed_head);
        return;
    }
    next_ = version + version_size;
}

bool HeadLayout::fail(const Problem &problem)
{
    if (problem_ == nullptr)
        problem_ = &problem;
    return false;
}

bool HeadLayout::field(const char *name, std::size_t name_size, const char *value,
                       std::size_t value_size)
{
    if (problem_ != nullptr)
        return false;
    if (name == nullptr || value == nullptr)
        return fail(malformed_head);
    // Elsewhere than after the previous line: libmicrohttpd 0.9.75 moved the name to join a
    // folded line onto it (it appends the continuation to the name, without a space).
    if (at(name) <= at(next_) || at(name) + name_size >= at(end_) ||
        at(value) <= at(name) + name_size || at(value) + value_size >= at(end_))
        return fail(folded_field);
    // The previous line's end: CRLF or LF, zeroed. More bytes: its value (or the request line)
    // went on past a NUL.
    const std::size_t gap = at(name) - at(next_);
    if (gap > 2 || !zeros(next_, name))
        return fail(invalid_field_value);
    // "name:" then optional whitespace: the colon zeroed, the whitespace left as it was.
    if (name[name_size] != '\0')
        return fail(invalid_field_name);
    for (const char *p = name + name_size + 1; p < value; p++)
        if (*p != ' ' && *p != '\t')
            return fail(malformed_head);
    next_ = value + value_size;
    return true;
}

const Problem *HeadLayout::finish()
{
    if (problem_ == nullptr) {
        // The last line's end and the empty line: two to four zeroed bytes, up to the end.
        const std::size_t rest = at(end_) - at(next_);
        if (rest < 2 || rest > 4 || !zeros(next_, end_))
            fail(invalid_field_value);
    }
    return problem_;
}

} // namespace message_syntax
