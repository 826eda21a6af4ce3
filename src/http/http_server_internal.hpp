// The pieces of HttpServer (http_server.hpp) that its files share, not part of its interface: the
// state kept for libmicrohttpd per connection, per request and per streamed answer, and the
// callbacks libmicrohttpd calls, each defined in the file of its concern:
// - http_server.cpp: the daemon, a request from its first callback to its answer, and the answer
//   made, sent, held for a flush or made later;
// - http_server_head.cpp: the request line and the head, read and checked where libmicrohttpd
//   left them;
// - http_server_connections.cpp: connections accepted, admitted, counted, timed and shed;
// - http_server_streams.cpp: answers made as they are sent.
#pragma once

#include "http/http_server.hpp"
#include "http/message_syntax.hpp"

#include <microhttpd.h>

#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

// Per-connection state, made when libmicrohttpd starts the connection and deleted when it closes:
// its request deadline and its place in the worker's connection counts.
struct HttpServer::ConnectionState {
    ConnectionDeadlines::Entry deadline;
    std::uintptr_t slot = 0;
    bool fresh = true; // no request read yet: it may have waited to be accepted
};

// Per-request state between libmicrohttpd callbacks, made when the request line arrives.
struct HttpServer::RequestState {
    HttpRequest request;
    // The request-target as libmicrohttpd gave it to the URI log callback, and its length then:
    // the pointer is the access callback's url, whose bytes libmicrohttpd then cut and decoded in
    // place (message_syntax::HeadLayout). Null when the request line was not seen here.
    const char *target = nullptr;
    std::size_t target_size = 0;
    bool target_query = false; // it had a '?' then
    message_syntax::TargetForm form = message_syntax::TargetForm::other;
    bool started = false;       // the first access callback ran
    bool too_many_args = false; // the query string was cut (cut_query_string)
    bool too_large = false;
    bool held = false;       // the response waits in `response`; the connection was resumed for it
    bool overloaded = false; // refused for its wait (shed): only its body is left to discard
    std::chrono::microseconds waited{0};
    HttpResponse response;
    // The answer's on_done, run when libmicrohttpd is done with the request however it ended.
    std::function<void()> on_done;
    ~RequestState()
    {
        if (on_done)
            on_done();
    }
};

// An answer made as it is sent (HttpResponse::stream), between libmicrohttpd's calls for its
// bytes: the body, and the connection, parked while the body has nothing to say.
struct HttpServer::StreamState {
    HttpServer *server;
    MHD_Connection *conn;
    std::shared_ptr<StreamBody> body;
    int fd = -1; // the connection's socket, watched for a hang-up while parked
    bool parked = false;
    bool hung_up = false; // the client went while it was parked: closed at its next read
};

struct HttpServer::Callbacks {
    // A connection's state, or null when there was no memory to follow it.
    static HttpServer::ConnectionState *connection_state(MHD_Connection *conn)
    {
        const MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return info != nullptr ? static_cast<HttpServer::ConnectionState *>(info->socket_context)
                               : nullptr;
    }

    // http_server.cpp
    static ssize_t no_body(void *, uint64_t, char *, size_t);
    static MHD_Result send(HttpServer *self, MHD_Connection *conn, HttpResponse &resp);
    static MHD_Result access(void *cls, MHD_Connection *conn, const char *url, const char *method,
                             const char *version, const char *upload_data, size_t *upload_data_size,
                             void **con_cls);
    static MHD_Result start(HttpServer *self, MHD_Connection *conn, const char *url,
                            const char *method, const char *version,
                            HttpServer::RequestState &state);
    static void take_body(HttpServer *self, HttpServer::RequestState &state, const char *data,
                          size_t size);
    static MHD_Result answer(HttpServer *self, MHD_Connection *conn,
                             HttpServer::RequestState &state);
    static MHD_Result internal_error(HttpServer *self, HttpServer::RequestState *state,
                                     MHD_Connection *conn);
    static void log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

    // http_server_head.cpp
    static void *request_line(void *cls, const char *uri, MHD_Connection *conn);
    static void read_head(MHD_Connection *conn, const char *url, const char *method,
                          const char *version, HttpServer::RequestState &state);
    static void check_head(MHD_Connection *conn, const char *url, const char *method,
                           const char *version, HttpServer::RequestState &state);
    static std::string client_address(MHD_Connection *conn);

    // http_server_connections.cpp
    static void connection(void *cls, MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe);
    static void completed(void *cls, MHD_Connection *conn, void **con_cls,
                          enum MHD_RequestTerminationCode toe);

    // http_server_streams.cpp
    static ssize_t stream_read(void *cls, uint64_t, char *buf, size_t max);
    static void stream_free(void *cls);
};
