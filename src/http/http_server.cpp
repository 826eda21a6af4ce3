// libmicrohttpd in external-epoll mode. Two facts of libmicrohttpd 0.9.75 shape this file:
// - a response queued on the first access-handler callback of a request is sent with
//   "Connection: close", so every call would reconnect; the first callback only records the request
//   and the answer is queued on a later one;
// - nothing but MHD_run may consume events from libmicrohttpd's own epoll fd, or the server hangs;
//   the worker only watches that fd for readability.
#include "http/http_server.hpp"
#include "common/api_error.hpp"
#include "http/file_answer.hpp"
#include "http/framing.hpp"
#include "http/message_syntax.hpp"
#include "http/own_answers.hpp"

#include <microhttpd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <new>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

// Per-connection state, made when libmicrohttpd starts the connection and deleted when it closes:
// its request deadline and its place in the worker's connection counts.
struct HttpServer::ConnectionState {
    ConnectionDeadlines::Entry deadline;
    std::uintptr_t slot = 0;
    bool fresh = true; // no request read yet: it may have waited to be accepted
};

namespace {
// A connection's state, or null when there was no memory to follow it.
HttpServer::ConnectionState *connection_state(MHD_Connection *conn)
{
    const MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != nullptr ? static_cast<HttpServer::ConnectionState *>(info->socket_context)
                           : nullptr;
}
} // namespace

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

namespace {

std::string lowercase(const char *s, size_t n)
{
    std::string out(s, n);
    for (char &c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// libmicrohttpd 0.9.75 keeps a record (about 56 bytes) per query-string argument in the
// connection's memory pool (32 kB), which also holds what has been read of the request, and when
// the pool runs out while parsing the request line it queues its 431 page and then goes on
// waiting for header lines in a buffer it has just emptied: the caller gets no answer until the
// connection times out (a line of 700 '&' was enough, and so were 60 arguments in a query string
// of 29 kB). The request line is seen here first (libmicrohttpd's URI log callback, called before
// it parses the arguments, on the buffer it parses them from): a query string of more than
// max_query_parameters arguments or longer than max_query_string bytes is cut to nothing there,
// in place, and the request is refused with 414 once it has been read. The two bounds leave the
// records and the string under two thirds of the pool, the rest for the headers. Returns whether it
// was cut.
bool cut_query_string(const char *uri)
{
    if (uri == nullptr)
        return false;
    const char *query = std::strchr(uri, '?');
    if (query == nullptr)
        return false;
    // The buffer is libmicrohttpd's own and writable (it writes NULs into it itself); it is
    // given to us const only so that we do not change the URI it logs.
    const auto cut = [query] {
        const_cast<char *>(query)[1] = '\0';
        return true;
    };
    std::size_t arguments = 1;
    const char *c = query + 1;
    for (; *c != '\0'; c++)
        if (*c == '&' && ++arguments > max_query_parameters)
            return cut();
    return static_cast<std::size_t>(c - (query + 1)) > max_query_string ? cut() : false;
}

// The two iterations below are called from inside libmicrohttpd (MHD_get_connection_values_n),
// whose C frames an exception may not unwind through: when memory runs out they stop the
// iteration and say so, and the caller throws once libmicrohttpd has returned.
struct CollectedArgs {
    HttpRequest &request;
    bool out_of_memory = false;
};

MHD_Result collect_arg(void *cls, enum MHD_ValueKind, const char *key, size_t key_size,
                       const char *value, size_t value_size)
{
    auto *args = static_cast<CollectedArgs *>(cls);
    try {
        args->request.args.emplace_back(std::string(key, key_size),
                                        value ? std::string(value, value_size) : std::string());
        return MHD_YES;
    } catch (...) {
        args->out_of_memory = true;
        return MHD_NO;
    }
}

// The field lines, in order: each is checked where libmicrohttpd left it (HeadLayout), and kept
// with its name lower-cased and its value without the whitespace around it (RFC 9112 5: it is
// not part of the value; libmicrohttpd 0.9.75 drops only what precedes it).
struct CollectedHead {
    HttpRequest &request;
    message_syntax::HeadLayout &layout;
    bool out_of_memory = false;
};

MHD_Result collect_header(void *cls, enum MHD_ValueKind, const char *key, size_t key_size,
                          const char *value, size_t value_size)
{
    auto *head = static_cast<CollectedHead *>(cls);
    head->layout.field(key, key_size, value, value_size);
    if (value == nullptr)
        value_size = 0;
    while (value_size > 0 && (value[value_size - 1] == ' ' || value[value_size - 1] == '\t'))
        value_size--;
    try {
        head->request.headers.emplace_back(lowercase(key, key_size),
                                           value ? std::string(value, value_size) : std::string());
        return MHD_YES;
    } catch (...) {
        head->out_of_memory = true;
        return MHD_NO;
    }
}

std::string client_address(MHD_Connection *conn)
{
    const MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == nullptr || info->client_addr == nullptr)
        return std::string();
    char buf[INET6_ADDRSTRLEN] = {0};
    const sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(sa)->sin_addr, buf, sizeof(buf));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr, buf,
                  sizeof(buf));
    return buf;
}

} // namespace

struct HttpServer::Callbacks {
    // The body of an answer that has none (HttpResponse::length_unknown): never asked for, as
    // libmicrohttpd sends no body to a HEAD.
    static ssize_t no_body(void *, uint64_t, char *, size_t)
    {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }

    // Queues an answer; the connection closes after it when the worker stops (libmicrohttpd
    // reads the header). An answer in a file (an export) is sent from the file, which
    // libmicrohttpd closes once done. A small answer from a buffer is kept as the server's last
    // (HttpServer::last_answer_), the one kept before it let go first.
    static MHD_Result send(HttpServer *self, MHD_Connection *conn, HttpResponse &resp)
    {
        self->let_go_last_answer();
        const bool from_file = resp.file.present();
        MHD_Response *r = nullptr;
        if (resp.length_unknown) {
            // A HEAD of what a GET sends as it is made: a head with neither Content-Length (its
            // body is not empty, only unsent) nor Transfer-Encoding. libmicrohttpd 0.9.75 ends a
            // chunked answer with its last chunk ("0\r\n\r\n") even to a HEAD, which the next
            // answer on the connection would be read after; an answer of unknown length that is
            // not chunked (HTTP/1.0's way) has no such end, and its connection closes after it.
            r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, &no_body, nullptr, nullptr);
            if (r != nullptr && MHD_set_response_options(r, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT,
                                                         MHD_RO_END) != MHD_YES) {
                MHD_destroy_response(r);
                r = nullptr;
            }
        } else if (from_file) {
            const std::uint64_t size = resp.file.size();
            r = file_answer::make(resp.file.release(), size);
            // The reader's pace is judged as libmicrohttpd asks for more (file_answer.hpp): with
            // the kernel's send buffer bounded, a slow reader is asked about every megabyte or so,
            // not every few (loopback's grows to 4 MB), which still covers a fast link's round
            // trip.
            if (const MHD_ConnectionInfo *info =
                    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD)) {
                const int sndbuf = 512 * 1024; // the kernel doubles it
                (void)setsockopt(info->connect_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
            }
        } else {
            r = MHD_create_response_from_buffer(
                resp.body.size(), const_cast<char *>(resp.body.data()), MHD_RESPMEM_MUST_COPY);
        }
        if (r == nullptr)
            return MHD_NO;
        own_answers::add_headers(r, resp);
        if (self->stopping())
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
        const bool queued =
            own_answers::queue_ours(conn, static_cast<unsigned int>(resp.status), r);
        if (queued && !from_file && !resp.length_unknown && resp.body.size() <= last_answer_most)
            self->last_answer_ = r; // our reference, given up by the next send or at the end
        else
            MHD_destroy_response(r);
        return queued ? MHD_YES : MHD_NO;
    }

    static MHD_Result access(void *cls, MHD_Connection *conn, const char *url, const char *method,
                             const char *version, const char *upload_data, size_t *upload_data_size,
                             void **con_cls)
    {
        auto *self = static_cast<HttpServer *>(cls);
        auto *state = static_cast<HttpServer::RequestState *>(*con_cls);
        try {
            if (state == nullptr) { // request_line could not allocate it
                state = new HttpServer::RequestState();
                *con_cls = state;
            }
            if (!state->started) {
                state->started = true;
                HttpRequest &req = state->request;
                req.method = method;
                req.path = url;
                // Refused for its wait: nothing more of it is read than what the log needs.
                if (!self->stopping() && self->shed(conn, state->waited)) {
                    state->overloaded = true;
                    req.client_address = client_address(conn);
                    return MHD_YES;
                }
                CollectedArgs args{req};
                MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
                if (args.out_of_memory)
                    throw std::bad_alloc();
                check_head(conn, url, method, version, *state);
                req.client_address = client_address(conn);
                if (const MHD_ConnectionInfo *fd =
                        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD))
                    req.socket_fd = fd->connect_fd;
                // A head that is not HTTP as RFC 9112 writes it (message_syntax.hpp), or a
                // framing libmicrohttpd would read otherwise than a proxy (framing.hpp): refused
                // now, before the body; an answer queued on this first call closes the
                // connection after it.
                // A request that arrives while the worker stops is refused the same way.
                const int status = self->stopping()           ? 503
                                   : req.malformed != nullptr ? 400
                                                              : framing::refusal(req);
                if (status != 0) {
                    self->request_arrived(conn);
                    HttpResponse resp;
                    self->answered_++;
                    self->refusal_(req, status, resp);
                    return send(self, conn, resp);
                }
                return MHD_YES;
            }
            // Resumed by release_held() (the writes it may show are durable) or answer_later().
            if (state->held)
                return send(self, conn, state->response);
            if (*upload_data_size > 0) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                if (state->too_large || state->overloaded)
                    return MHD_YES; // keep reading and discarding until the body ends
                if (state->request.body.size() + n > self->max_body_size_) {
                    state->too_large = true;
                    state->request.body.clear();
                    state->request.body.shrink_to_fit();
                    return MHD_YES;
                }
                state->request.body.append(upload_data, n);
                return MHD_YES;
            }
            self->request_arrived(conn);
            HttpResponse resp;
            self->answered_++;
            if (state->overloaded)
                self->overload_refusal_(state->request, state->waited, resp);
            else if (state->too_many_args)
                self->refusal_(state->request, 414, resp);
            else if (state->too_large)
                self->refusal_(state->request, 413, resp);
            else
                self->handler_(state->request, resp);
            // Kept with the request from now on, so that it runs however the request ends.
            if (resp.on_done)
                state->on_done = std::move(resp.on_done);
            if (resp.later != 0) {
                self->later_.reserve(self->later_.size() + 1); // no allocation after suspending
                MHD_suspend_connection(conn);
                self->later_.push_back(Later{resp.later, conn, state});
                return MHD_YES;
            }
            if (resp.stream && state->request.method == "HEAD") {
                // A HEAD never has a body (RFC 9110 9.3.2): the stream is not started, and its
                // head goes alone.
                resp.stream->closed();
                resp.stream.reset();
                resp.length_unknown = true;
            }
            if (resp.stream)
                return self->send_stream(conn, resp) ? MHD_YES : MHD_NO;
            if (self->hold(conn, state, resp))
                return MHD_YES;
            return send(self, conn, resp);
        } catch (const std::exception &e) {
            self->keep_log(self->log_.faults, e.what());
            return internal_error(self, state, conn);
        } catch (...) {
            return internal_error(self, state, conn);
        }
    }

    // The checks of the request's head (message_syntax.hpp), on the first access callback, where
    // libmicrohttpd has parsed the head and read nothing of the body: the form and characters of
    // the target (seen whole by request_line), where each line lies in libmicrohttpd's read
    // buffer, then the method, the field lines and Host as parsed. Collects the field lines into
    // the request; the first problem found goes in its `malformed`. Its path becomes the path of
    // an absolute-form target.
    static void check_head(MHD_Connection *conn, const char *url, const char *method,
                           const char *version, HttpServer::RequestState &state)
    {
        HttpRequest &req = state.request;
        const MHD_ConnectionInfo *size =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        // Only when the URI log callback saw this very target (it always does, unless it had no
        // memory for the request's state): else the head is not taken on trust.
        const bool target_seen = state.target != nullptr && state.target == url;
        message_syntax::HeadLayout layout(method, target_seen ? url : nullptr, state.target_size,
                                          state.target_query, version,
                                          size != nullptr ? method + size->header_size : nullptr);
        CollectedHead head{req, layout};
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, collect_header, &head);
        if (head.out_of_memory)
            throw std::bad_alloc();
        if (req.malformed == nullptr)
            req.malformed = layout.finish();
        if (req.malformed == nullptr)
            req.malformed = message_syntax::request(req, state.form, version);
        if (req.malformed == nullptr && state.form == message_syntax::TargetForm::absolute)
            req.path = std::string(message_syntax::origin_path(req.path));
    }

    // A request whose handling threw: the documented 500 with a request id, made in a try of its
    // own, because nothing may be thrown back into libmicrohttpd (no memory even for that answer:
    // the connection is closed without one).
    static MHD_Result internal_error(HttpServer *self, HttpServer::RequestState *state,
                                     MHD_Connection *conn)
    {
        try {
            HttpResponse resp;
            self->refusal_(state != nullptr ? state->request : HttpRequest(), 500, resp);
            return send(self, conn, resp);
        } catch (...) {
            return MHD_NO;
        }
    }

    // The request line has arrived (libmicrohttpd's URI log callback): the request's state
    // starts here, so a query string too long for libmicrohttpd's memory can be cut first.
    static void *request_line(void *cls, const char *uri, MHD_Connection *conn)
    {
        if (HttpServer::ConnectionState *c = connection_state(conn))
            static_cast<HttpServer *>(cls)->deadlines_.request_line(
                c->deadline, ConnectionDeadlines::Clock::now());
        try {
            auto *state = new HttpServer::RequestState();
            // Seen as sent, before libmicrohttpd splits it at '?' and decodes it (a %00 would
            // end its decoded path) and before a long query string is cut.
            state->target = uri;
            state->target_size = uri != nullptr ? std::strlen(uri) : 0;
            state->target_query =
                uri != nullptr && std::memchr(uri, '?', state->target_size) != nullptr;
            state->request.malformed = message_syntax::target(
                std::string_view(uri != nullptr ? uri : "", state->target_size), state->form);
            state->too_many_args = cut_query_string(uri);
            return state;
        } catch (...) {
            return nullptr; // the access callback tries again
        }
    }

    static void completed(void *cls, MHD_Connection *conn, void **con_cls,
                          enum MHD_RequestTerminationCode toe)
    {
        delete static_cast<HttpServer::RequestState *>(*con_cls);
        *con_cls = nullptr;
        // Answered, and kept alive: the bound on the next request starts now. (Any other end
        // closes the connection.)
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
            if (HttpServer::ConnectionState *c = connection_state(conn))
                static_cast<HttpServer *>(cls)->deadlines_.answered(
                    c->deadline, ConnectionDeadlines::Clock::now());
        }
    }

    // A connection starts (inside MHD_add_connection, from accept_one) or closes.
    static void connection(void *cls, MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
    {
        auto *self = static_cast<HttpServer *>(cls);
        if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
            self->adding_taken_ = true;
            auto *state = new (std::nothrow) HttpServer::ConnectionState();
            if (state == nullptr) {
                // No memory to follow it: it is not counted (no deadline but the idle timeout).
                if (self->adding_slot_ != 0 && self->admission_.release)
                    self->admission_.release(self->adding_slot_);
                *socket_context = nullptr;
                return;
            }
            state->slot = self->adding_slot_;
            const MHD_ConnectionInfo *fd =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            state->deadline.fd = fd != nullptr ? fd->connect_fd : -1;
            if (state->deadline.fd >= 0)
                self->deadlines_.opened(state->deadline, ConnectionDeadlines::Clock::now());
            MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, self->idle_timeout_s_);
            *socket_context = state;
            return;
        }
        auto *state = static_cast<HttpServer::ConnectionState *>(*socket_context);
        if (state == nullptr)
            return;
        self->deadlines_.done(state->deadline);
        if (state->slot != 0 && self->admission_.release)
            self->admission_.release(state->slot);
        delete state;
        *socket_context = nullptr;
    }

    // libmicrohttpd asks a stream for bytes whenever its connection can send: none yet parks the
    // connection (suspended: no timeout, no wake-up) until wake_streams() finds it ready. Room in
    // `parked_` for every stream was made when it was queued, so nothing here allocates.
    static ssize_t stream_read(void *cls, uint64_t, char *buf, size_t max)
    {
        auto *s = static_cast<HttpServer::StreamState *>(cls);
        if (s->hung_up)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        long n = StreamBody::aborted;
        try {
            n = s->body->read(buf, max);
        } catch (...) {
        }
        if (n > 0)
            return static_cast<ssize_t>(n);
        if (n == StreamBody::ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (n != StreamBody::nothing_yet)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        s->parked = true;
        s->server->parked_.push_back(s);
        MHD_suspend_connection(s->conn);
        return 0;
    }

    // libmicrohttpd is done with a stream: sent whole, or its connection closed.
    static void stream_free(void *cls)
    {
        auto *s = static_cast<HttpServer::StreamState *>(cls);
        if (s->parked) { // only when the daemon stops with it parked
            auto &parked = s->server->parked_;
            parked.erase(std::remove(parked.begin(), parked.end(), s), parked.end());
        }
        s->server->streams_--;
        s->body->closed();
        delete s;
    }

    static void log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)))
    {
        auto *self = static_cast<HttpServer *>(cls);
        char buf[512];
        vsnprintf(buf, sizeof(buf), fmt, ap);
        size_t n = std::strlen(buf);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            buf[--n] = '\0';
        self->keep_log(self->log_.library, buf);
    }
};

HttpServer::HttpServer(int listen_fd, Handler handler, Refusal refusal, const Tls *tls)
    : listen_fd_(listen_fd), handler_(std::move(handler)), refusal_(std::move(refusal)),
      tls_(tls != nullptr)
{
    log_.library.reserve(max_log_lines);
    log_.faults.reserve(max_log_lines);
    // Requests libmicrohttpd refuses by itself get the refusal's JSON too (own_answers.hpp).
    own_answers::set_maker([this](int status, HttpResponse &resp) {
        answered_++;
        refusal_(HttpRequest(), status, resp);
    });
    unsigned int flags = MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG |
                         MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME;
    // With TLS, GnuTLS reads the key and the chain as the daemon starts, and keeps its own copies.
    // TLS 1.2 and 1.3 only: what RFC 8996 and today's clients leave.
    MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, tls ? const_cast<char *>(tls->key_pem.c_str()) : nullptr},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, tls ? const_cast<char *>(tls->cert_pem.c_str()) : nullptr},
        {MHD_OPTION_HTTPS_PRIORITIES, 0,
         const_cast<char *>("NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2")},
        {MHD_OPTION_END, 0, nullptr}};
    MHD_OptionItem no_options[] = {{MHD_OPTION_END, 0, nullptr}};
    if (tls != nullptr)
        flags |= MHD_USE_TLS;
    daemon_ = MHD_start_daemon(
        flags, 0, nullptr, nullptr, &Callbacks::access, this, MHD_OPTION_EXTERNAL_LOGGER,
        &Callbacks::log, this, MHD_OPTION_NOTIFY_COMPLETED, &Callbacks::completed, this,
        MHD_OPTION_NOTIFY_CONNECTION, &Callbacks::connection, this, MHD_OPTION_URI_LOG_CALLBACK,
        &Callbacks::request_line, this, MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout_s_,
        // The worker bounds connections (Admission); libmicrohttpd's own bound only stops what
        // the descriptors would not hold anyway.
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)1000000,
        // The worker ignores SIGPIPE (http_worker.cpp), so libmicrohttpd may send an export's
        // file with sendfile, which has no MSG_NOSIGNAL: without this it reads the file 4 kB at a
        // time and sends each piece (97 MB took 0.25 s instead of a few hundredths).
        MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
        // How strictly libmicrohttpd reads a request, stated rather than left to its default: 0.
        // In 0.9.75, 1 refuses an HTTP/1.1 request without Host (400, as RFC 9112 3.2 says) but
        // closes one with a space in its target without any answer, and -1 ("as tolerant as
        // possible") refuses whitespace before a field's colon and nothing more. Neither does the
        // rest (two Host lines, a NUL, a folded line, ...): message_syntax.hpp checks all of it
        // right after libmicrohttpd has parsed the head, before the body, with a stable code and a
        // sentence for each (docs/http-conformance.md).
        MHD_OPTION_STRICT_FOR_CLIENT, 0, MHD_OPTION_ARRAY, tls ? tls_options : no_options,
        MHD_OPTION_END);
    if (daemon_ == nullptr)
        start_error_ = tls != nullptr ? "libmicrohttpd could not start with TLS (is the key the "
                                        "certificate's, and are both PEM?)"
                                      : "libmicrohttpd could not start on the shared listening "
                                        "socket";
}

HttpServer::~HttpServer()
{
    // libmicrohttpd may not be stopped with suspended connections.
    // Calls still with a helper get the 503 of a server stopping (or, with no memory for it, a
    // closed connection).
    for (const Later &later : later_) {
        later.state->held = true; // resumed, it is answered, never handled again
        later.state->response.status = 503;
        try {
            HttpResponse resp;
            refusal_(later.state->request, 503, resp);
            later.state->response = std::move(resp);
        } catch (...) {
        }
        MHD_resume_connection(later.connection);
    }
    later_.clear();
    // Parked streams: resumed, so that stopping closes them; their bodies are not asked again.
    for (StreamState *stream : parked_) {
        stream->parked = false;
        MHD_resume_connection(stream->conn);
    }
    parked_.clear();
    release_held(UINT64_MAX);
    if (daemon_ != nullptr)
        MHD_stop_daemon(daemon_);
    let_go_last_answer();
}

void HttpServer::let_go_last_answer() noexcept
{
    if (last_answer_ != nullptr) {
        MHD_destroy_response(last_answer_); // freed here unless a connection still sends it
        last_answer_ = nullptr;
    }
}

bool HttpServer::hold(MHD_Connection *conn, RequestState *state, HttpResponse &resp)
{
    const std::uint64_t mark = hold_ ? hold_() : 0;
    if (mark == 0)
        return false;
    held_.reserve(held_.size() + 1); // no allocation after suspending
    state->response = std::move(resp);
    state->held = true;
    MHD_suspend_connection(conn);
    held_.emplace_back(mark, conn);
    return true;
}

bool HttpServer::send_stream(MHD_Connection *conn, HttpResponse &resp)
{
    // Room to park every stream, made now: parking happens inside libmicrohttpd's callback.
    parked_.reserve(streams_ + 1);
    auto *state = new StreamState{this, conn, std::move(resp.stream)};
    if (const MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD))
        state->fd = fd->connect_fd;
    // Unknown size: sent chunked (HTTP/1.1), each read a chunk.
    MHD_Response *r = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 4096, &Callbacks::stream_read, state, &Callbacks::stream_free);
    if (r == nullptr) {
        delete state;
        return false;
    }
    streams_++; // stream_free counts it out, whatever becomes of the answer from here
    own_answers::add_headers(r, resp);
    const bool queued = own_answers::queue_ours(conn, static_cast<unsigned int>(resp.status), r);
    MHD_destroy_response(r);
    return queued;
}

std::size_t HttpServer::close_hung_up()
{
    // One poll() for every parked socket: readable with nothing to read but its end (POLLRDHUP),
    // or broken. A stream's client sends nothing after its request, so any of these is its end.
    if (parked_.empty())
        return 0;
    hangup_fds_.resize(parked_.size());
    for (std::size_t i = 0; i < parked_.size(); i++)
        hangup_fds_[i] = pollfd{parked_[i]->fd, POLLRDHUP, 0};
    if (::poll(hangup_fds_.data(), hangup_fds_.size(), 0) <= 0)
        return 0;
    std::size_t gone = 0;
    for (std::size_t i = 0; i < parked_.size(); i++)
        if (hangup_fds_[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
            parked_[i]->hung_up = true;
            gone++;
        }
    return gone;
}

std::size_t HttpServer::wake_streams()
{
    std::size_t kept = 0, woken = 0;
    for (StreamState *stream : parked_) {
        if (stream->hung_up || stream->body->ready()) {
            stream->parked = false;
            MHD_resume_connection(stream->conn);
            woken++;
        } else {
            parked_[kept++] = stream;
        }
    }
    parked_.resize(kept);
    return woken;
}

bool HttpServer::answer_later(std::uint64_t token, HttpResponse &&response)
{
    const auto it = std::find_if(later_.begin(), later_.end(),
                                 [token](const Later &l) { return l.token == token; });
    if (it == later_.end())
        return false;
    held_.reserve(held_.size() + 1); // may throw: before anything changed
    const Later later = *it;
    later_.erase(it);
    // The connection is suspended already: held, it stays so; otherwise it is resumed to send.
    const std::uint64_t mark = hold_ ? hold_() : 0;
    // As for an answer made at once: it runs however the request ends (an export's place).
    if (response.on_done)
        later.state->on_done = std::move(response.on_done);
    later.state->response = std::move(response);
    later.state->held = true;
    if (mark != 0) {
        held_.emplace_back(mark, later.connection);
        return true;
    }
    MHD_resume_connection(later.connection);
    return true;
}

bool HttpServer::release_held(std::uint64_t upto)
{
    // Marks only rise (a later answer never needs an earlier flush), so this releases the oldest;
    // the rest keep their order either way.
    std::size_t kept = 0;
    for (const auto &held : held_) {
        if (held.first <= upto)
            MHD_resume_connection(held.second);
        else
            held_[kept++] = held;
    }
    const bool released = kept < held_.size();
    held_.resize(kept);
    return released;
}

void HttpServer::keep_log(std::vector<std::string> &lines, const char *message) noexcept
{
    try {
        if (lines.size() < max_log_lines) {
            lines.emplace_back(message);
            return;
        }
    } catch (...) { // no memory for the line: counted with the rest
    }
    log_.left_out++;
}

bool HttpServer::take_log(LogLines &out)
{
    out.library.clear();
    out.faults.clear();
    out.left_out = 0;
    if (log_.library.empty() && log_.faults.empty() && log_.left_out == 0)
        return false;
    std::swap(out, log_);
    return true;
}

int HttpServer::epoll_fd() const
{
    const MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

long HttpServer::timeout_ms() const
{
    const long deadline = deadlines_.ms_until_next(ConnectionDeadlines::Clock::now());
    MHD_UNSIGNED_LONG_LONG t = 0;
    if (MHD_get_timeout(daemon_, &t) != MHD_YES)
        return deadline;
    const long own = static_cast<long>(std::min<MHD_UNSIGNED_LONG_LONG>(t, 60000));
    return deadline < 0 ? own : std::min(own, deadline);
}

void HttpServer::set_overload(std::chrono::microseconds target, std::chrono::microseconds interval,
                              OverloadRefusal refusal)
{
    overload_.set(refusal ? target : std::chrono::microseconds(0), interval);
    overload_refusal_ = std::move(refusal);
}

bool HttpServer::shed(MHD_Connection *conn, std::chrono::microseconds &waited)
{
    using std::chrono::microseconds;
    if (overload_.target().count() <= 0)
        return false;
    const auto now = ConnectionDeadlines::Clock::now();
    waited = std::chrono::duration_cast<microseconds>(now - previous_run_began_);
    ConnectionState *c = connection_state(conn);
    const bool fresh = c == nullptr || c->fresh;
    if (c != nullptr)
        c->fresh = false;
    if (fresh || overload_.worth_measuring(waited)) {
        const MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct tcp_info info {};
        socklen_t len = sizeof(info);
        if (fd != nullptr && getsockopt(fd->connect_fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0)
            waited = std::chrono::milliseconds(info.tcpi_last_data_recv);
        else if (fresh)
            waited = microseconds(0); // not known: its wait is not held against it
    }
    if (overload_.admit(now, waited))
        return false;
    overloaded_refusals_++;
    return true;
}

void HttpServer::run()
{
    previous_run_began_ = run_began_;
    run_began_ = ConnectionDeadlines::Clock::now();
    // What has arrived is read first, so a request that came whole while the worker was busy
    // meets its deadline. A connection still past it is shut down, not closed: libmicrohttpd
    // reads the end of the stream in the next run (its epoll fd is readable at once) and closes
    // it itself; the descriptor stays its own.
    MHD_run(daemon_);
    deadlines_.expire(ConnectionDeadlines::Clock::now(), [this](int fd) {
        ::shutdown(fd, SHUT_RDWR);
        timed_out_connections_++;
    });
}

void HttpServer::close_waiting()
{
    deadlines_.expire_all([](int fd) { ::shutdown(fd, SHUT_RDWR); });
}

void HttpServer::set_timeouts(long request_timeout_ms, unsigned idle_timeout_s)
{
    idle_timeout_s_ = std::max(1u, idle_timeout_s);
    deadlines_.set_timeouts(std::chrono::milliseconds(std::max(0L, request_timeout_ms)),
                            std::chrono::seconds(idle_timeout_s_));
}

void HttpServer::request_arrived(MHD_Connection *conn)
{
    if (ConnectionState *c = connection_state(conn))
        deadlines_.done(c->deadline);
}

void HttpServer::refuse_connection(int fd, int refused)
{
    refused_connections_++;
    // Over TLS an answer needs a handshake first: the connection is closed without one.
    if (tls_) {
        ::close(fd);
        return;
    }
    try {
        HttpResponse resp;
        if (admission_.refusal)
            admission_.refusal(refused, resp);
        std::string raw = "HTTP/1.1 " + std::to_string(resp.status) +
                          (resp.status == 503 ? " Service Unavailable" : " Error") +
                          "\r\nContent-Type: " + resp.content_type +
                          "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                          "\r\nConnection: close\r\n";
        for (const auto &h : resp.headers)
            raw.append(h.name).append(": ").append(h.value).append("\r\n");
        raw += "\r\n";
        raw += resp.body;
        // Once, without waiting: a caller who cannot take these few hundred bytes at once
        // loses the answer, not the worker's time.
        (void)::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    } catch (...) { // no memory for the answer: closed without one
    }
    ::close(fd);
}

HttpServer::Accepted HttpServer::accept_one()
{
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&addr), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        accept_error_ = errno;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            return Accepted::out_of_resources;
        // EAGAIN: another worker took it; ECONNABORTED, EINTR and the like: the client is gone
        // or the next wakeup retries.
        return Accepted::none;
    }
    std::uintptr_t slot = 0;
    if (admission_.admit) {
        if (const int refused = admission_.admit(reinterpret_cast<sockaddr *>(&addr), len, slot)) {
            refuse_connection(fd, refused);
            return Accepted::one;
        }
    }
    // libmicrohttpd owns the socket from here, and closes it even when it refuses it; what it
    // starts, its "started" notice takes the slot of (Callbacks::connection).
    adding_slot_ = slot;
    adding_taken_ = false;
    MHD_add_connection(daemon_, fd, reinterpret_cast<sockaddr *>(&addr), len);
    if (!adding_taken_ && slot != 0 && admission_.release)
        admission_.release(slot);
    adding_slot_ = 0;
    return Accepted::one;
}

unsigned HttpServer::connections() const
{
    const MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}
