// The shared listening socket: see listen_socket.hpp for why there is exactly one, and why it may
// be bound after the server has started.
#include "http/listen_socket.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace listen_socket {

int shared_fd = -1;

namespace {

constexpr int backlog = 1024;

// The address a waiting socket is to be bound to, set in the postmaster with shared_fd, inherited
// by the workers with it.
sockaddr_storage pending_address{};
socklen_t pending_length = 0;
std::string pending_name;

std::string failure(const std::string &name, int error_number)
{
    return "could not listen on " + name + ": " + std::strerror(error_number);
}

} // namespace

Opened open(const char *address, int port, std::string &error)
{
    const bool any = address == nullptr || *address == '\0' || std::strcmp(address, "*") == 0;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (any ? AI_PASSIVE : 0);
    const std::string service = std::to_string(port);
    const std::string name = std::string(any ? "*" : address) + ":" + service;
    addrinfo *found = nullptr;
    int rc = getaddrinfo(any ? nullptr : address, service.c_str(), &hints, &found);
    if (rc != 0) {
        error = std::string("could not resolve \"") + (address ? address : "") +
                "\": " + gai_strerror(rc);
        return Opened::failed;
    }
    int fd = -1;
    // The first socket whose address was in use: kept, unbound, in case no other address binds.
    int in_use = -1;
    // For "*", prefer IPv6 with IPv4 mapped (one socket serves both), else the first that binds.
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (addrinfo *ai = found; ai != nullptr; ai = ai->ai_next) {
            if (any && pass == 0 && ai->ai_family != AF_INET6)
                continue;
            int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK, ai->ai_protocol);
            if (s < 0) {
                error = std::string("could not create socket: ") + std::strerror(errno);
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (ai->ai_family == AF_INET6 && any)
                setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
            if (::bind(s, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(s, backlog) == 0) {
                fd = s;
                break;
            }
            const int why = errno;
            error = failure(name, why);
            if (why == EADDRINUSE && in_use < 0 && ai->ai_addrlen <= sizeof(pending_address)) {
                in_use = s;
                std::memcpy(&pending_address, ai->ai_addr, ai->ai_addrlen);
                pending_length = ai->ai_addrlen;
                continue;
            }
            ::close(s);
        }
    }
    freeaddrinfo(found);
    if (fd >= 0) {
        if (in_use >= 0)
            ::close(in_use);
        error.clear();
        shared_fd = fd;
        return Opened::listening;
    }
    if (in_use >= 0) {
        pending_name = name;
        error = failure(name, EADDRINUSE);
        shared_fd = in_use;
        return Opened::waiting;
    }
    return Opened::failed;
}

bool listen_when_free(std::string &error)
{
    if (shared_fd < 0) {
        error = "there is no listening socket";
        return false;
    }
    error.clear();
    int accepting = 0;
    socklen_t length = sizeof(accepting);
    if (getsockopt(shared_fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 && accepting)
        return true;
    // EINVAL: already bound, by another worker between its bind and its listen.
    if (::bind(shared_fd, reinterpret_cast<const sockaddr *>(&pending_address), pending_length) !=
            0 &&
        errno != EINVAL) {
        if (errno != EADDRINUSE)
            error = failure(pending_name, errno);
        return false;
    }
    // EADDRINUSE here too: a bind with SO_REUSEADDR succeeds beside a socket that is only bound,
    // and the listen finds the other one listening; the next try binds (EINVAL) and listens again.
    if (::listen(shared_fd, backlog) != 0) {
        if (errno != EADDRINUSE)
            error = failure(pending_name, errno);
        return false;
    }
    return true;
}

} // namespace listen_socket
