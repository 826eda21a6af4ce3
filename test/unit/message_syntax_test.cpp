// Tests of src/http/message_syntax.hpp: the request line and field lines RFC 9112 refuses, checked
// on the target as sent, on the parsed head, and where libmicrohttpd 0.9.75 leaves the head in its
// read buffer (simulated here as it does it: line ends, the spaces of the request line and each
// colon zeroed, strings ending at the first NUL).
#include "http/message_syntax.hpp"
#include "tap.hpp"

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using namespace std::string_view_literals;
using message_syntax::Problem;
using message_syntax::TargetForm;
using tap::is;
using tap::ok;

const char *name_of(const Problem *p)
{
    using namespace message_syntax;
    if (p == nullptr)
        return "none";
    const std::pair<const Problem *, const char *> all[] = {
        {&control_in_path, "control_in_path"},
        {&invalid_target, "invalid_target"},
        {&invalid_method, "invalid_method"},
        {&invalid_field_name, "invalid_field_name"},
        {&invalid_field_value, "invalid_field_value"},
        {&folded_field, "folded_field"},
        {&missing_host, "missing_host"},
        {&several_hosts, "several_hosts"},
        {&invalid_host, "invalid_host"},
        {&transfer_encoding_in_http10, "transfer_encoding_in_http10"},
        {&malformed_head, "malformed_head"}};
    for (const auto &a : all)
        if (a.first == p)
            return a.second;
    return "another";
}

std::string target(std::string_view raw, TargetForm *form_out = nullptr)
{
    TargetForm form;
    const Problem *p = message_syntax::target(raw, form);
    if (form_out != nullptr)
        *form_out = form;
    return name_of(p);
}

void targets()
{
    TargetForm form;
    is(target("/q/account", &form), std::string("none"), "a path");
    ok(form == TargetForm::origin, "a path: origin-form");
    is(target("/q/account?id=1&x=%41"), std::string("none"), "a path and a query string");
    is(target("/q/account%00evil"), std::string("control_in_path"), "%00 in the path");
    is(target("/q/a%1Fb"), std::string("control_in_path"), "%1F in the path");
    is(target("/q/a%7f"), std::string("control_in_path"), "%7F (DEL) in the path");
    is(target("/q/a%0d%0aX-Injected:%20y"), std::string("control_in_path"), "CR LF in the path");
    is(target("/q/a\x01"), std::string("control_in_path"), "a raw control character in the path");
    is(target("/q/a\tb"), std::string("control_in_path"), "a raw tab in the path");
    is(target("/q/a%20b"), std::string("none"), "%20 in the path is a space, not a control");
    is(target("/q/caf%C3%A9"), std::string("none"), "percent-encoded UTF-8 in the path");
    is(target("/q/a?id=%00"), std::string("none"), "%00 in the query string: a value's business");
    is(target("/q/a?id=\x01"), std::string("invalid_target"),
       "a raw control character in the query string");
    is(target("/q/a b"), std::string("invalid_target"), "a space in the target");
    is(target("/q/a#frag"), std::string("invalid_target"), "a fragment in the target");
    is(target("/q/%zz"), std::string("invalid_target"), "'%' and no hex digits");
    is(target("/q/a?id=%4"), std::string("invalid_target"), "'%' and one hex digit at the end");
    is(target("/q/a%"), std::string("invalid_target"), "'%' at the end");
    is(target("*", &form), std::string("none"), "*");
    ok(form == TargetForm::asterisk, "*: asterisk-form");
    is(target("http://example.com:8080/q/x?id=1", &form), std::string("none"), "absolute URI");
    ok(form == TargetForm::absolute, "absolute-form");
    target("HTTPS://[::1]/health", &form);
    ok(form == TargetForm::absolute, "absolute-form: the scheme in any case, an IPv6 literal");
    target("http://a%2Fb/q/x", &form);
    ok(form == TargetForm::other, "absolute URI with '%' in its authority: not taken");
    target("http:///q/x", &form);
    ok(form == TargetForm::other, "absolute URI without an authority: not taken");
    target("ftp://h/q/x", &form);
    ok(form == TargetForm::other, "another scheme");
    target("q/x", &form);
    ok(form == TargetForm::other, "a path without its leading slash");
    target("", &form);
    ok(form == TargetForm::other, "no target");
}

HttpRequest with(const char *method, std::vector<std::pair<std::string, std::string>> headers)
{
    HttpRequest r;
    r.method = method;
    r.path = "/health";
    r.headers = std::move(headers);
    return r;
}

std::string check(const HttpRequest &r, TargetForm form = TargetForm::origin,
                  std::string_view version = "HTTP/1.1")
{
    return name_of(message_syntax::request(r, form, version));
}

void requests()
{
    is(check(with("GET", {{"host", "x"}})), std::string("none"), "a plain GET");
    is(check(with("G(T", {{"host", "x"}})), std::string("invalid_method"),
       "a method that is not a token");
    is(check(with("", {{"host", "x"}})), std::string("invalid_method"), "no method");
    is(check(with("get", {{"host", "x"}})), std::string("none"),
       "a method in lower case is a token (and not GET: 405)");
    is(check(with("GET", {{"host", "x"}, {"transfer-encoding ", "chunked"}})),
       std::string("invalid_field_name"), "whitespace between a field name and its colon");
    is(check(with("GET", {{"host", "x"}, {"x-a\t", "b"}})), std::string("invalid_field_name"),
       "a tab between a field name and its colon");
    is(check(with("GET", {{"host", "x"}, {" x-a", "b"}})), std::string("invalid_field_name"),
       "whitespace before a field name");
    is(check(with("GET", {{"host", "x"}, {"", "b"}})), std::string("invalid_field_name"),
       "an empty field name");
    is(check(with("GET", {{"host", "x"}, {"x-a", "b\rc"}})), std::string("invalid_field_value"),
       "a bare CR in a field value");
    is(check(with("GET", {{"host", "x"}, {"x-a", std::string("b\0c", 3)}})),
       std::string("invalid_field_value"), "a NUL in a field value");
    is(check(with("GET", {{"host", "x"}, {"x-a", "tab\tinside and spaces"}})), std::string("none"),
       "tabs and spaces inside a value");
    is(check(with("GET", {})), std::string("missing_host"), "HTTP/1.1 without Host");
    is(check(with("GET", {}), TargetForm::origin, "HTTP/1.0"), std::string("none"),
       "HTTP/1.0 without Host");
    is(check(with("GET", {{"host", "x"}, {"host", "x"}})), std::string("several_hosts"),
       "two Host lines, even equal");
    is(check(with("GET", {{"host", "x"}, {"host", "y"}}), TargetForm::origin, "HTTP/1.0"),
       std::string("several_hosts"), "two Host lines in HTTP/1.0");
    const char *good_hosts[] = {"",      "x",          "example.com",  "example.com:8080",
                                "[::1]", "[::1]:8080", "127.0.0.1:80", "a-b.c_d~e",
                                "a%41b", "localhost:"};
    for (const char *h : good_hosts)
        is(check(with("GET", {{"host", h}})), std::string("none"),
           std::string("a valid Host: ") + tap::show(std::string_view(h)));
    const char *bad_hosts[] = {"a b", "x:8a", "[::1", "[]", "a/b", "a@b", "x:1:2", "a%4", "[::1]x"};
    for (const char *h : bad_hosts)
        is(check(with("GET", {{"host", h}})), std::string("invalid_host"),
           std::string("an invalid Host: ") + tap::show(std::string_view(h)));
    is(check(with("POST", {{"host", "x"}, {"transfer-encoding", "chunked"}}), TargetForm::origin,
             "HTTP/1.0"),
       std::string("transfer_encoding_in_http10"), "Transfer-Encoding in HTTP/1.0");
    is(check(with("POST", {{"host", "x"}, {"transfer-encoding", "chunked"}})), std::string("none"),
       "Transfer-Encoding in HTTP/1.1");
    is(check(with("GET", {{"host", "x"}}), TargetForm::asterisk), std::string("invalid_target"),
       "GET *");
    is(check(with("OPTIONS", {{"host", "x"}}), TargetForm::asterisk), std::string("none"),
       "OPTIONS *");
    is(check(with("GET", {{"host", "x"}}), TargetForm::other), std::string("invalid_target"),
       "GET of a target in no form");
    is(check(with("CONNECT", {{"host", "x"}}), TargetForm::other), std::string("none"),
       "CONNECT host:port (authority-form): routed, and not found");
    is(check(with("GET", {{"host", "x"}}), TargetForm::absolute), std::string("none"),
       "GET of an absolute URI");
}

void origin_paths()
{
    using message_syntax::origin_path;
    is(std::string(origin_path("http://h/q/x")), std::string("/q/x"), "absolute: its path");
    is(std::string(origin_path("HTTPS://h:8080/health")), std::string("/health"),
       "absolute with a port");
    is(std::string(origin_path("http://h")), std::string("/"), "absolute without a path: /");
    is(std::string(origin_path("/q/x")), std::string("/q/x"), "origin-form: as it is");
}

// A head as libmicrohttpd 0.9.75 leaves it: `raw` up to and including its empty line.
struct Simulated {
    std::string buf;
    const char *method = nullptr;
    const char *target = nullptr;
    std::size_t target_size = 0;
    bool target_query = false;
    const char *version = nullptr;
    const char *end = nullptr;
    struct Field {
        const char *name;
        std::size_t name_size;
        const char *value;
        std::size_t value_size;
    };
    std::vector<Field> fields;
};

void simulate(std::string_view raw, Simulated &s)
{
    s.buf.assign(raw);
    char *b = s.buf.data();
    const std::size_t n = s.buf.size();
    std::vector<std::pair<std::size_t, std::size_t>> lines; // start, length
    std::size_t pos = 0;
    while (pos < n) {
        std::size_t e = pos;
        while (e < n && b[e] != '\n' && !(b[e] == '\r' && e + 1 < n && b[e + 1] == '\n'))
            e++;
        lines.emplace_back(pos, e - pos);
        if (e < n && b[e] == '\r') {
            b[e] = b[e + 1] = '\0';
            e += 2;
        } else if (e < n) {
            b[e] = '\0';
            e++;
        }
        pos = e;
        if (lines.back().second == 0)
            break;
    }
    s.end = b + pos;
    // The request line: the method ends at the first space, the version starts after the last;
    // spaces after the method are skipped.
    char *line = b + lines[0].first;
    const std::size_t len = lines[0].second;
    char *space = static_cast<char *>(std::memchr(line, ' ', len));
    *space = '\0';
    s.method = line;
    char *t = space + 1;
    while (*t == ' ')
        t++;
    char *last = line + len - 1;
    while (*last != ' ')
        last--;
    *last = '\0';
    s.version = last + 1;
    s.target = t;
    s.target_size = std::strlen(t);
    // The URI log callback has seen it; libmicrohttpd then ends the path at '?'.
    if (char *q = static_cast<char *>(std::memchr(t, '?', s.target_size))) {
        s.target_query = true;
        *q = '\0';
    }
    for (std::size_t i = 1; i < lines.size() && lines[i].second > 0; i++) {
        char *name = b + lines[i].first;
        char *colon = std::strchr(name, ':');
        *colon = '\0';
        char *value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        s.fields.push_back({name, std::strlen(name), value, std::strlen(value)});
    }
}

std::string layout(std::string_view raw)
{
    Simulated s;
    simulate(raw, s);
    message_syntax::HeadLayout l(s.method, s.target, s.target_size, s.target_query, s.version,
                                 s.end);
    for (const auto &f : s.fields)
        l.field(f.name, f.name_size, f.value, f.value_size);
    return name_of(l.finish());
}

void layouts()
{
    is(layout("GET /q/a?id=1 HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\n\r\n"), std::string("none"),
       "a well-formed head");
    is(layout("GET /q/a HTTP/1.1\nHost: x\nX-A: v\n\n"), std::string("none"),
       "lines ended by LF alone");
    is(layout("GET /health HTTP/1.0\r\n\r\n"), std::string("none"), "no field at all");
    is(layout("GET /q/a HTTP/1.1\r\nHost: x\r\nX-A:\r\nX-B: \t v \t\r\n\r\n"), std::string("none"),
       "an empty value, and one with whitespace around it");
    is(layout("GET /q/a HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\n"), std::string("none"),
       "the empty line ended by LF alone");
    is(layout("GET /q/account\0evil HTTP/1.1\r\nHost: x\r\n\r\n"sv), std::string("control_in_path"),
       "a raw NUL in the path");
    is(layout("GET /q/account?id=1\0x HTTP/1.1\r\nHost: x\r\n\r\n"sv),
       std::string("invalid_target"), "a raw NUL in the query string");
    is(layout("GET  /q/a HTTP/1.1\r\nHost: x\r\n\r\n"), std::string("invalid_method"),
       "two spaces after the method");
    is(layout("GE\0T /q/a HTTP/1.1\r\nHost: x\r\n\r\n"sv), std::string("invalid_method"),
       "a NUL in the method");
    is(layout("GET /q/a HTTP/1.1\r\nX-API-Key: k\0junk\r\nHost: x\r\n\r\n"sv),
       std::string("invalid_field_value"), "a NUL inside a value");
    is(layout("GET /q/a HTTP/1.1\r\nX-API-Key: k\0\r\nHost: x\r\n\r\n"sv),
       std::string("invalid_field_value"), "a NUL at the end of a value");
    is(layout("GET /q/a HTTP/1.1\r\nX-API-Key: k\r\nHost: x\0y\r\n\r\n"sv),
       std::string("invalid_field_value"), "a NUL inside the last value");
    is(layout("GET /q/a HTTP/1.1\r\nHost: x\0\r\n\r\n"sv), std::string("invalid_field_value"),
       "a NUL at the end of the last value");

    // A folded line: libmicrohttpd 0.9.75 copies the name elsewhere to append the next line to it.
    Simulated s;
    simulate("GET /q/a HTTP/1.1\r\nHost: x\r\nX-A: foo\r\nX-B: c\r\n\r\n", s);
    std::string moved = "X-Abar";
    message_syntax::HeadLayout l(s.method, s.target, s.target_size, false, s.version, s.end);
    l.field(s.fields[0].name, s.fields[0].name_size, s.fields[0].value, s.fields[0].value_size);
    ok(!l.field(moved.c_str(), moved.size(), s.fields[1].value, s.fields[1].value_size),
       "a name elsewhere in memory: refused");
    is(std::string(name_of(l.finish())), std::string("folded_field"), "a folded line");

    Simulated t;
    simulate("GET /q/a HTTP/1.1\r\nHost: x\r\n\r\n", t);
    message_syntax::HeadLayout unseen(t.method, nullptr, 0, false, t.version, t.end);
    is(std::string(name_of(unseen.finish())), std::string("malformed_head"),
       "a target the URI log callback did not see: not taken on trust");
    message_syntax::HeadLayout no_end(t.method, t.target, t.target_size, false, t.version, nullptr);
    is(std::string(name_of(no_end.finish())), std::string("malformed_head"),
       "no header size: not taken on trust");
}

} // namespace

int main()
{
    targets();
    requests();
    origin_paths();
    layouts();
    return tap::done();
}
