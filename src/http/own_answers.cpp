// libmicrohttpd's own answers, replaced by ours: see own_answers.hpp.
#include "http/own_answers.hpp"
#include "http/http_types.hpp"

#include <microhttpd.h>

#include <cstdint>
#include <dlfcn.h>
#include <string>
#include <sys/socket.h>

namespace {

using QueueResponse = MHD_Result (*)(MHD_Connection *, unsigned int, MHD_Response *);

// libmicrohttpd's own MHD_queue_response: the next definition after this library's.
QueueResponse libmicrohttpd_queue_response()
{
    static const QueueResponse real =
        reinterpret_cast<QueueResponse>(dlsym(RTLD_NEXT, "MHD_queue_response"));
    return real;
}

// The worker serves one request at a time on one thread; thread_local keeps it right regardless.
thread_local bool queuing_ours = false;
own_answers::Maker maker;

// Whether libmicrohttpd is refusing the request's Content-Length: present (the first line, as it
// reads it), no Transfer-Encoding, and not a decimal number of at most 64 bits.
bool refusing_content_length(MHD_Connection *connection, unsigned int status)
{
    if (status != MHD_HTTP_BAD_REQUEST && status != MHD_HTTP_CONTENT_TOO_LARGE)
        return false;
    if (MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_TRANSFER_ENCODING) != nullptr)
        return false;
    const char *length =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length == nullptr)
        return false;
    if (*length == '\0')
        return true;
    std::uint64_t value = 0;
    for (const char *c = length; *c != '\0'; c++) {
        if (*c < '0' || *c > '9')
            return true;
        const unsigned digit = static_cast<unsigned>(*c - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return true;
        value = value * 10 + digit;
    }
    return false;
}

// libmicrohttpd 0.9.75 refuses a Content-Length it cannot read (400, or 413 when too large for
// it) while it parses the header: it queues its answer and builds the answer's head, and then its
// state machine carries on as if the header had been fine and builds the head a second time, so
// the caller would read two heads (MHD_connection_handle_idle sets HEADERS_PROCESSED over the
// error's state; libmicrohttpd 1.0 no longer does). For that refusal only, the whole answer is
// written to the socket here, where nothing has been written for this request yet (the previous
// answer on the connection was sent before this request was read), the write side is shut, and
// libmicrohttpd is told nothing could be queued, so it closes the connection and writes nothing.
// Without TLS only: the socket carries the bytes as they are (issue 17 must revisit this).
MHD_Result answer_on_socket(MHD_Connection *connection, const HttpResponse &ours)
{
    const MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == nullptr)
        return MHD_NO;
    const int fd = info->connect_fd;
    const char *reason = MHD_get_reason_phrase_for(static_cast<unsigned int>(ours.status));
    std::string wire = "HTTP/1.1 " + std::to_string(ours.status) + " " + reason +
                       "\r\nConnection: close\r\nContent-Type: " + ours.content_type + "\r\n";
    for (const auto &h : ours.headers)
        wire.append(h.name).append(": ").append(h.value).append("\r\n");
    wire += "Content-Length: " + std::to_string(ours.body.size()) + "\r\n\r\n" + ours.body;
    // A new connection's send buffer is empty: the few hundred bytes go at once. What does not
    // (a peer that stopped reading) is lost with the connection, never waited for.
    for (std::size_t sent = 0; sent < wire.size();) {
        const ssize_t n =
            ::send(fd, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0)
            break;
        sent += static_cast<std::size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    // What the caller sent and nobody read would make the close a reset, which may destroy the
    // answer before the caller reads it: read what has arrived (bounded, without waiting).
    char sink[4096];
    for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++) {
    }
    return MHD_NO;
}

MHD_Result replace(MHD_Connection *connection, unsigned int status)
{
    const QueueResponse real = libmicrohttpd_queue_response();
    if (real == nullptr)
        return MHD_NO; // cannot answer at all: libmicrohttpd closes the connection
    try {
        HttpResponse ours;
        ours.status = static_cast<int>(status);
        if (maker)
            maker(static_cast<int>(status), ours);
        if (refusing_content_length(connection, status))
            return answer_on_socket(connection, ours);
        MHD_Response *r = MHD_create_response_from_buffer(
            ours.body.size(), const_cast<char *>(ours.body.data()), MHD_RESPMEM_MUST_COPY);
        if (r == nullptr)
            return MHD_NO;
        own_answers::add_headers(r, ours);
        const MHD_Result rc = real(connection, static_cast<unsigned int>(ours.status), r);
        MHD_destroy_response(r);
        return rc;
    } catch (...) {
        return MHD_NO;
    }
}

} // namespace

namespace own_answers {

void set_maker(Maker m)
{
    maker = std::move(m);
}

void add_headers(MHD_Response *response, const HttpResponse &answer)
{
    if (!answer.content_type.empty())
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                                answer.content_type.c_str());
    for (const auto &h : answer.headers)
        MHD_add_response_header(response, h.name, h.value.c_str());
}

bool queue_ours(MHD_Connection *connection, unsigned int status, MHD_Response *response)
{
    queuing_ours = true;
    const MHD_Result rc = MHD_queue_response(connection, status, response);
    queuing_ours = false;
    return rc == MHD_YES;
}

} // namespace own_answers

// Every response queued in the process comes through here (own_answers.hpp says why).
extern "C" MHD_Result MHD_queue_response(MHD_Connection *connection, unsigned int status_code,
                                         MHD_Response *response)
{
    if (queuing_ours) {
        const QueueResponse real = libmicrohttpd_queue_response();
        return real != nullptr ? real(connection, status_code, response) : MHD_NO;
    }
    return replace(connection, status_code);
}
