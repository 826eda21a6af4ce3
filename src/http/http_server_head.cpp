// Reading a request's head for HttpServer (http_server_internal.hpp): the request line as it
// arrives, before libmicrohttpd parses its arguments, and then, on the request's first access
// callback, its arguments and field lines, each checked where libmicrohttpd left it
// (message_syntax.hpp).
#include "http/http_server_internal.hpp"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <cctype>
#include <cstring>
#include <netinet/in.h>
#include <new>
#include <sys/socket.h>

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

} // namespace

// The request line has arrived (libmicrohttpd's URI log callback): the request's state
// starts here, so a query string too long for libmicrohttpd's memory can be cut first.
void *HttpServer::Callbacks::request_line(void *cls, const char *uri, MHD_Connection *conn)
{
    if (HttpServer::ConnectionState *c = connection_state(conn))
        static_cast<HttpServer *>(cls)->deadlines_.request_line(c->deadline,
                                                                ConnectionDeadlines::Clock::now());
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

// The rest of the request's head, on its first access callback: the arguments of its query
// string, its field lines (check_head), the client's address and the connection's socket.
void HttpServer::Callbacks::read_head(MHD_Connection *conn, const char *url, const char *method,
                                      const char *version, HttpServer::RequestState &state)
{
    HttpRequest &req = state.request;
    CollectedArgs args{req};
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
    if (args.out_of_memory)
        throw std::bad_alloc();
    check_head(conn, url, method, version, state);
    req.client_address = client_address(conn);
    if (const MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD))
        req.socket_fd = fd->connect_fd;
}

// The checks of the request's head (message_syntax.hpp), on the first access callback, where
// libmicrohttpd has parsed the head and read nothing of the body: the form and characters of
// the target (seen whole by request_line), where each line lies in libmicrohttpd's read
// buffer, then the method, the field lines and Host as parsed. Collects the field lines into
// the request; the first problem found goes in its `malformed`. Its path becomes the path of
// an absolute-form target.
void HttpServer::Callbacks::check_head(MHD_Connection *conn, const char *url, const char *method,
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

std::string HttpServer::Callbacks::client_address(MHD_Connection *conn)
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
