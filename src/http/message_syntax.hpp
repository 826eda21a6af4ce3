// Whether a request is HTTP/1.1 as RFC 9112 writes it (sections 2, 3 and 5: the request line, the
// request-target, the field lines), checked before anything acts on it. Pure C++. The body's
// framing (section 6) is framing.hpp's; docs/http-conformance.md lists every rule, its section
// and where it is checked.
//
// libmicrohttpd 0.9.75 is lenient where the RFC says to refuse, and some of its leniency changes
// what a request means: it ends a path or a field value at a NUL (`GET /q/account%00evil` was
// served as `account`), keeps whitespace before a field's colon in the field's name, joins an
// obsolete folded line onto the previous field's name without a space, takes an HTTP/1.1 request
// without Host or with two, and takes a space or a tab inside the request-target. A proxy in front
// that reads the same bytes otherwise would route, authorize or frame the request otherwise. Each
// is refused here with 400 and a stable code: invalid_path when the path itself is the problem,
// invalid_request for the rest (the code libmicrohttpd's own refusals get, own_answers.hpp).
//
// Three checks, at the three places the request is seen (http_server.cpp):
// - target(): the request-target as sent, before libmicrohttpd splits and decodes it (its
//   URI log callback): it is then still whole, and every %00 still visible;
// - request(): the parsed request (method, field lines, version), before the body is read;
// - HeadLayout: where libmicrohttpd left the request line and the field lines in its read buffer,
//   which shows what its C strings hide (a NUL inside a value or the target, a folded line).
#pragma once

#include "http/http_types.hpp"

#include <cstddef>
#include <string_view>

namespace message_syntax {

// Why a request is refused (400); null when it is not. Constants, never freed.
using Problem = HttpRequest::Malformed;

// The request-target's form (RFC 9112 3.2): origin-form ("/q/x?a=1"), absolute-form
// ("http://host/q/x", which a server must accept; its authority a valid host without '%'),
// asterisk-form ("*", OPTIONS only), or anything else (authority-form is CONNECT's).
enum class TargetForm { origin, absolute, asterisk, other };

// The request-target as the client sent it (RFC 9112 3.2, RFC 3986): no control character, space,
// DEL or '#'; every '%' followed by two hex digits; and in the path (before '?'), no control
// character or DEL once decoded either (invalid_path). Says its form in `form`.
const Problem *target(std::string_view raw, TargetForm &form);

// The request's parsed head: a method that is a token (RFC 9112 3.1); a request-target whose form
// suits the method (3.2); field names that are tokens (5.1: whitespace before the colon stays in
// libmicrohttpd's name); field values without CR, LF or NUL (RFC 9110 5.5); exactly one Host in
// HTTP/1.1 and at most one in HTTP/1.0, with a valid value (3.2); no Transfer-Encoding in an
// HTTP/1.0 request (6.1). `version` is the request's ("HTTP/1.1").
const Problem *request(const HttpRequest &request, TargetForm form, std::string_view version);

// The origin-form path of an absolute-form target ("http://host:8080/q/x" -> "/q/x", "/" when
// it has no path): RFC 9112 3.2.2 says a server must accept that form. Other paths as they are.
std::string_view origin_path(std::string_view path);

// The head as libmicrohttpd 0.9.75 leaves it in a connection's read buffer, checked field by
// field, without allocating: the request line "METHOD\0target\0HTTP/1.1" with its terminator
// (CRLF or LF) zeroed, then each field line "name\0 value" with its colon and terminator zeroed,
// then the empty line, in one run of bytes from `method` to `end` (the method plus
// MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE). Every pointer is one libmicrohttpd gave (the access
// callback's method, url and version; each field's name and value), and every byte read lies
// between two of them. Whatever does not sit where a well-formed request would leave it is a
// problem: a name elsewhere in memory is a folded line joined onto it; bytes after a value's end
// are a value cut at a NUL; a target shorter than the span before the version was cut at a NUL.
class HeadLayout {
  public:
    // `target_size`: the target's length as the URI log callback saw it (strlen), before
    // libmicrohttpd cut it at '?' and decoded it in place; `target_query`: whether it then had a
    // '?' (libmicrohttpd has since replaced it by a NUL).
    HeadLayout(const char *method, const char *target, std::size_t target_size, bool target_query,
               const char *version, const char *end);
    // The next field line, in the order received; false once a problem was found.
    bool field(const char *name, std::size_t name_size, const char *value, std::size_t value_size);
    // After the last field: the problem, or null.
    const Problem *finish();

  private:
    bool fail(const Problem &problem);
    const char *end_;
    const char *next_; // where the next line must start (after one zeroed terminator)
    const Problem *problem_ = nullptr;
};

// The problems, for tests and for what refuses them.
extern const Problem control_in_path;
extern const Problem invalid_target;
extern const Problem invalid_method;
extern const Problem invalid_field_name;
extern const Problem invalid_field_value;
extern const Problem folded_field;
extern const Problem missing_host;
extern const Problem several_hosts;
extern const Problem invalid_host;
extern const Problem transfer_encoding_in_http10;
extern const Problem malformed_head;

} // namespace message_syntax
