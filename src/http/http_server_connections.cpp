// HttpServer's connections (http_server_internal.hpp): accepted one at a time and admitted or
// refused, counted while libmicrohttpd holds them, bounded by their deadlines, and a request
// refused for how long it waited (overload_gate.hpp).
#include "http/http_server_internal.hpp"

#include <microhttpd.h>

#include <algorithm>
#include <cerrno>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <new>
#include <sys/socket.h>
#include <unistd.h>

// A connection starts (inside MHD_add_connection, from accept_one) or closes.
void HttpServer::Callbacks::connection(void *cls, MHD_Connection *conn, void **socket_context,
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

// libmicrohttpd is done with a request, however it ended: its state goes (and the answer's
// on_done runs).
void HttpServer::Callbacks::completed(void *cls, MHD_Connection *conn, void **con_cls,
                                      enum MHD_RequestTerminationCode toe)
{
    delete static_cast<HttpServer::RequestState *>(*con_cls);
    *con_cls = nullptr;
    // Answered, and kept alive: the bound on the next request starts now. (Any other end
    // closes the connection.)
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        if (HttpServer::ConnectionState *c = connection_state(conn))
            static_cast<HttpServer *>(cls)->deadlines_.answered(c->deadline,
                                                                ConnectionDeadlines::Clock::now());
    }
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

unsigned HttpServer::connections() const
{
    const MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

void HttpServer::set_timeouts(long request_timeout_ms, unsigned idle_timeout_s)
{
    idle_timeout_s_ = std::max(1u, idle_timeout_s);
    deadlines_.set_timeouts(std::chrono::milliseconds(std::max(0L, request_timeout_ms)),
                            std::chrono::seconds(idle_timeout_s_));
}

void HttpServer::request_arrived(MHD_Connection *conn)
{
    if (ConnectionState *c = Callbacks::connection_state(conn))
        deadlines_.done(c->deadline);
}

void HttpServer::close_waiting()
{
    deadlines_.expire_all([](int fd) { ::shutdown(fd, SHUT_RDWR); });
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
    ConnectionState *c = Callbacks::connection_state(conn);
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
