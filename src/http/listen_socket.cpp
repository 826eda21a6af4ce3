// The shared listening socket: see listen_socket.hpp for why there is exactly one.
#include "http/listen_socket.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace listen_socket {

int shared_fd = -1;

int open(const char *address, int port, std::string &error)
{
    const bool any = address == nullptr || *address == '\0' || std::strcmp(address, "*") == 0;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (any ? AI_PASSIVE : 0);
    std::string service = std::to_string(port);
    addrinfo *found = nullptr;
    int rc = getaddrinfo(any ? nullptr : address, service.c_str(), &hints, &found);
    if (rc != 0) {
        error = std::string("could not resolve \"") + (address ? address : "") +
                "\": " + gai_strerror(rc);
        return -1;
    }
    int fd = -1;
    // For "*", prefer IPv6 with IPv4 mapped (one socket serves both), else the first that binds.
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (addrinfo *ai = found; ai != nullptr; ai = ai->ai_next) {
            if (any && pass == 0 && ai->ai_family != AF_INET6)
                continue;
            fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK, ai->ai_protocol);
            if (fd < 0) {
                error = std::string("could not create socket: ") + std::strerror(errno);
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (ai->ai_family == AF_INET6 && any)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
            if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
                error.clear();
                break;
            }
            error = std::string("could not listen on ") + (address ? address : "*") + ":" +
                    service + ": " + std::strerror(errno);
            ::close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    return fd;
}

} // namespace listen_socket
