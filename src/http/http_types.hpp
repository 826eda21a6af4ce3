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

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string error_code; // the error's code (write_error), for the access log; empty on success
    // Nonzero: no answer yet; it comes later under this token (HttpServer::answer_later), and the
    // connection waits suspended until then.
    std::uint64_t later = 0;
    // An export: the body is this file, sent from it; `body` is then empty.
    FileBody file;
    // A body made as it is sent (content_type and headers are the answer's; `body` is unused).
    std::shared_ptr<StreamBody> stream;
    // Called once when the answer is done with, however it ends (sent, or the connection gone):
    // what an export holds (its place among querygate.max_exports) is given back.
    std::function<void()> on_done;

    void add_header(std::string name, std::string value)
    {
        // Room for an answer's usual headers at once (request id, Cache-Control, Vary, the three
        // of a page, ETag, the three of a rate limit): grown from nothing, the list was
        // reallocated and moved three times a call; at 8, once more for a key with limits.
        if (headers.capacity() == 0)
            headers.reserve(12);
        headers.emplace_back(std::move(name), std::move(value));
    }
};
