// libmicrohttpd in external-epoll mode. Two facts of libmicrohttpd 0.9.75 shape this file:
// - a response queued on the first access-handler callback of a request is sent with
//   "Connection: close", so every call would reconnect; the first callback only records the request
//   and the answer is queued on a later one;
// - nothing but MHD_run may consume events from libmicrohttpd's own epoll fd, or the server hangs;
//   the worker only watches that fd for readability.
#include "http/http_server.hpp"
#include "http/file_answer.hpp"
#include "http/framing.hpp"
#include "http/http_server_internal.hpp"
#include "http/own_answers.hpp"

#include <microhttpd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>

// The body of an answer that has none (HttpResponse::length_unknown): never asked for, as
// libmicrohttpd sends no body to a HEAD.
ssize_t HttpServer::Callbacks::no_body(void *, uint64_t, char *, size_t)
{
    return MHD_CONTENT_READER_END_OF_STREAM;
}

// Queues an answer; the connection closes after it when the worker stops (libmicrohttpd
// reads the header). An answer in a file (an export) is sent from the file, which
// libmicrohttpd closes once done. A small answer from a buffer is kept as the server's last
// (HttpServer::last_answer_), the one kept before it let go first.
MHD_Result HttpServer::Callbacks::send(HttpServer *self, MHD_Connection *conn, HttpResponse &resp)
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
        if (r != nullptr &&
            MHD_set_response_options(r, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END) != MHD_YES) {
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
        r = MHD_create_response_from_buffer(resp.body.size(), const_cast<char *>(resp.body.data()),
                                            MHD_RESPMEM_MUST_COPY);
    }
    if (r == nullptr)
        return MHD_NO;
    own_answers::add_headers(r, resp);
    if (self->stopping())
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    const bool queued = own_answers::queue_ours(conn, static_cast<unsigned int>(resp.status), r);
    if (queued && !from_file && !resp.length_unknown && resp.body.size() <= last_answer_most)
        self->last_answer_ = r; // our reference, given up by the next send or at the end
    else
        MHD_destroy_response(r);
    return queued ? MHD_YES : MHD_NO;
}

MHD_Result HttpServer::Callbacks::access(void *cls, MHD_Connection *conn, const char *url,
                                         const char *method, const char *version,
                                         const char *upload_data, size_t *upload_data_size,
                                         void **con_cls)
{
    auto *self = static_cast<HttpServer *>(cls);
    auto *state = static_cast<HttpServer::RequestState *>(*con_cls);
    try {
        if (state == nullptr) { // request_line could not allocate it
            state = new HttpServer::RequestState();
            *con_cls = state;
        }
        if (!state->started)
            return start(self, conn, url, method, version, *state);
        // Resumed by release_held() (the writes it may show are durable) or answer_later().
        if (state->held)
            return send(self, conn, state->response);
        if (*upload_data_size > 0) {
            size_t n = *upload_data_size;
            *upload_data_size = 0;
            take_body(self, *state, upload_data, n);
            return MHD_YES;
        }
        return answer(self, conn, *state);
    } catch (const std::exception &e) {
        self->keep_log(self->log_.faults, e.what());
        return internal_error(self, state, conn);
    } catch (...) {
        return internal_error(self, state, conn);
    }
}

// A request's first access callback: its head is read and checked, and it is answered at once
// when it is refused (for its wait, its head or its framing, or because the worker stops).
MHD_Result HttpServer::Callbacks::start(HttpServer *self, MHD_Connection *conn, const char *url,
                                        const char *method, const char *version,
                                        HttpServer::RequestState &state)
{
    state.started = true;
    HttpRequest &req = state.request;
    req.method = method;
    req.path = url;
    // Refused for its wait: nothing more of it is read than what the log needs.
    if (!self->stopping() && self->shed(conn, state.waited)) {
        state.overloaded = true;
        req.client_address = client_address(conn);
        return MHD_YES;
    }
    read_head(conn, url, method, version, state);
    // A head that is not HTTP as RFC 9112 writes it (message_syntax.hpp), or a framing
    // libmicrohttpd would read otherwise than a proxy (framing.hpp): refused now, before the body;
    // an answer queued on this first call closes the connection after it.
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

// A piece of the request's body: kept, or discarded once the body is too large or the request
// was refused for its wait.
void HttpServer::Callbacks::take_body(HttpServer *self, HttpServer::RequestState &state,
                                      const char *data, size_t size)
{
    if (state.too_large || state.overloaded)
        return; // keep reading and discarding until the body ends
    if (state.request.body.size() + size > self->max_body_size_) {
        state.too_large = true;
        state.request.body.clear();
        state.request.body.shrink_to_fit();
        return;
    }
    state.request.body.append(data, size);
}

// The whole request has arrived: its answer (the handler's, or a refusal) is sent, held for a
// flush, left for answer_later(), or streamed.
MHD_Result HttpServer::Callbacks::answer(HttpServer *self, MHD_Connection *conn,
                                         HttpServer::RequestState &state)
{
    self->request_arrived(conn);
    HttpResponse resp;
    self->answered_++;
    if (state.overloaded)
        self->overload_refusal_(state.request, state.waited, resp);
    else if (state.too_many_args)
        self->refusal_(state.request, 414, resp);
    else if (state.too_large)
        self->refusal_(state.request, 413, resp);
    else
        self->handler_(state.request, resp);
    // Kept with the request from now on, so that it runs however the request ends.
    if (resp.on_done)
        state.on_done = std::move(resp.on_done);
    if (resp.later != 0) {
        self->later_.reserve(self->later_.size() + 1); // no allocation after suspending
        MHD_suspend_connection(conn);
        self->later_.push_back(Later{resp.later, conn, &state});
        return MHD_YES;
    }
    if (resp.stream && state.request.method == "HEAD") {
        // A HEAD never has a body (RFC 9110 9.3.2): the stream is not started, and its head goes
        // alone.
        resp.stream->closed();
        resp.stream.reset();
        resp.length_unknown = true;
    }
    if (resp.stream)
        return self->send_stream(conn, resp) ? MHD_YES : MHD_NO;
    if (self->hold(conn, &state, resp))
        return MHD_YES;
    return send(self, conn, resp);
}

// A request whose handling threw: the documented 500 with a request id, made in a try of its
// own, because nothing may be thrown back into libmicrohttpd (no memory even for that answer:
// the connection is closed without one).
MHD_Result HttpServer::Callbacks::internal_error(HttpServer *self, HttpServer::RequestState *state,
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

// What libmicrohttpd says, kept for the caller to log after run() (take_log).
void HttpServer::Callbacks::log(void *cls, const char *fmt, va_list ap)
{
    auto *self = static_cast<HttpServer *>(cls);
    char buf[512];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = std::strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    self->keep_log(self->log_.library, buf);
}

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
