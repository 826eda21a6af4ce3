// A request and a response as the rest of querygate sees them: plain C++ values, independent of
// libmicrohttpd and of PostgreSQL.
#pragma once

#include "common/file_body.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// The most arguments a query string may have, and its longest; more is refused with 414
// uri_too_long before libmicrohttpd parses it (http_server.cpp says why).
inline constexpr std::size_t max_query_parameters = 128;
// The longest query string, in bytes: with the records of 128 arguments (7 kB), well under the 32
// kB a connection holds, so that a header read with it still fits.
inline constexpr std::size_t max_query_string = 12 * 1024;

struct HttpRequest {
    std::string method;
    std::string path; // decoded path, without the query string
    // Query-string arguments in order, decoded; values may contain any byte, NUL included.
    std::vector<std::pair<std::string, std::string>> args;
    std::vector<std::pair<std::string, std::string>> headers; // names lower-cased
    std::string body;
    std::string client_address;
    int socket_fd = -1; // the connection's socket, watched while its call runs (-1: none)

    // Why the request is not HTTP as RFC 9112 writes it (src/http/message_syntax.hpp), when the
    // server found it so: it is refused with 400, this code and this sentence. Null otherwise.
    struct Malformed {
        const char *code;
        const char *message;
    };
    const Malformed *malformed = nullptr;

    // The first header of that (lower-case) name, or nullptr.
    const std::string *header(const char *lower_name) const;
    // Every line of that name joined with ", " in order, false when there is none: several lines
    // of a list header are one list (RFC 9110 5.3), so a later line a proxy appended is not lost.
    bool header_list(const char *lower_name, std::string &out) const;
};

// An answer whose body is made while it is sent, for as long as it lasts (GET /events): its bytes
// are asked for whenever the connection can take more. Between bytes the connection waits
// suspended (it holds no worker), until HttpServer::wake_streams() finds the body ready().
class StreamBody {
  public:
    virtual ~StreamBody() = default;
    static constexpr long nothing_yet = 0;
    static constexpr long ended = -1;   // the body is whole: the chunked answer ends
    static constexpr long aborted = -2; // the connection is closed at once
    // Copies up to `max` bytes of what is ready into `buf`: how many, or one of the above.
    virtual long read(char *buf, std::size_t max) = 0;
    // Whether read() has something to say (bytes, or its end) now.
    virtual bool ready() const = 0;
    // The server is done with it: the connection closed, or the end was sent.
    virtual void closed() = 0;
};

// A response header's name: always a literal, so a header never copies its name (a name longer
// than std::string's 15 inline bytes, "RateLimit-Remaining" among them, was a heap copy a call).
// Made only from a constant character array: neither a pointer of unknown lifetime nor a buffer
// filled at run time converts.
struct HeaderName {
    template <std::size_t N>
    constexpr HeaderName(const char (&literal)[N]) : text(literal) // NOLINT: a literal converts
    {
    }
    template <std::size_t N> HeaderName(char (&)[N]) = delete;
    const char *text;
};

struct ResponseHeader {
    const char *name; // a literal (HeaderName)
    std::string value;
};

struct HttpResponse {
    // Room for an answer's usual headers at once: its request id, Cache-Control, Vary, the three
    // of a page, ETag, the three of a rate limit, one more. Made with this room before the first
    // header: grown from 8 by a key's rate-limit headers, the list was moved into a block of 16
    // pairs of strings (1 kB: past malloc's per-thread cache, and a "large" request, for which
    // glibc first sweeps its fast bins, malloc_consolidate), on every limited call.
    static constexpr std::size_t usual_headers = 12;

    int status = 200;
    std::string content_type = "application/json"; // empty: none (a 304)
    std::string body;
    std::vector<ResponseHeader> headers;
    std::string error_code; // the error's code (write_error), for the access log; empty on success
    // Nonzero: no answer yet; it comes later under this token (HttpServer::answer_later), and the
    // connection waits suspended until then.
    std::uint64_t later = 0;
    // An export: the body is this file, sent from it; `body` is then empty.
    FileBody file;
    // A body made as it is sent (content_type and headers are the answer's; `body` is unused).
    // Never for a HEAD: the server answers it as length_unknown, without starting the stream.
    std::shared_ptr<StreamBody> stream;
    // The answer to a HEAD of what a GET sends as it is made (a stream): its head says no length
    // (a Content-Length: 0 would say the GET's body is empty), and its connection closes after it
    // (http_server.cpp says why). Only for a HEAD; `body` is unused.
    bool length_unknown = false;
    // Called once when the answer is done with, however it ends (sent, or the connection gone):
    // what an export holds (its place among querygate.max_exports) is given back.
    std::function<void()> on_done;

    void add_header(HeaderName name, std::string value)
    {
        if (headers.capacity() == 0)
            headers.reserve(usual_headers);
        headers.push_back(ResponseHeader{name.text, std::move(value)});
    }
};
