// HttpServer's answers made as they are sent (HttpResponse::stream, GET /events;
// http_server_internal.hpp): queued, read by libmicrohttpd as its connection can send, parked while
// they have nothing to say, woken, and closed when their client has gone.
#include "http/http_server_internal.hpp"
#include "http/own_answers.hpp"

#include <microhttpd.h>

#include <algorithm>
#include <poll.h>

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

// libmicrohttpd asks a stream for bytes whenever its connection can send: none yet parks the
// connection (suspended: no timeout, no wake-up) until wake_streams() finds it ready. Room in
// `parked_` for every stream was made when it was queued, so nothing here allocates.
ssize_t HttpServer::Callbacks::stream_read(void *cls, uint64_t, char *buf, size_t max)
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
void HttpServer::Callbacks::stream_free(void *cls)
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
