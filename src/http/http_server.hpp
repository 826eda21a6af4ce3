// libmicrohttpd, driven from outside: no thread of its own, its epoll fd is watched by the worker's
// WaitEventSet, and run() processes whatever is ready. Every callback, and so every handler call,
// happens on the calling thread. Pure C++: no PostgreSQL header.
//
// Connections are accepted here, one per call of accept_one, not by libmicrohttpd: left to itself
// it accepts every pending connection at once, and keep-alive then pins them all to one worker (the
// benchmark saw 8/0 and 62/2 splits on two workers). The worker decides when to accept
// (src/http/accept_gate.hpp), so connections go to the least loaded worker.
#pragma once

#include "http/connection_deadlines.hpp"
#include "http/overload_gate.hpp"
#include "http/http_types.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

class HttpServer {
  public:
    // The handler fills the response. It is called once per request, after the whole body arrived.
    using Handler = std::function<void(const HttpRequest &, HttpResponse &)>;
    // Answers a request refused before the handler runs (body too large); the handler's shape.
    using Refusal = std::function<void(const HttpRequest &, int status, HttpResponse &)>;
    // Asked after every response is made: a nonzero mark means hold it until release_held() is
    // called with a mark at least as high (group commit: a WAL position).
    using HoldCheck = std::function<std::uint64_t()>;

    // TLS (querygate.ssl): the certificate chain and private key, in PEM, or null for plain HTTP.
    // libmicrohttpd (GnuTLS) speaks TLS 1.2 and 1.3 on every connection; a client that does not
    // is not served.
    struct Tls {
        std::string cert_pem;
        std::string key_pem;
    };
    // The process must ignore SIGPIPE (libmicrohttpd is told it does, and sends files with
    // sendfile, which cannot ask for no signal).
    HttpServer(int listen_fd, Handler handler, Refusal refusal, const Tls *tls = nullptr);
    ~HttpServer();
    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    bool started() const { return daemon_ != nullptr; }
    const std::string &start_error() const { return start_error_; }

    // libmicrohttpd's epoll fd: readable when run() has work.
    int epoll_fd() const;
    // How long the caller may wait before run() must be called, in ms; -1 for no limit.
    long timeout_ms() const;
    // Processes every ready connection; never blocks except inside the handler.
    void run();
    // Requests answered (or refused) so far: whether a run() served anything.
    std::uint64_t answered() const { return answered_; }
    enum class Accepted {
        one,             // handed to libmicrohttpd
        none,            // nothing pending (another worker took it) or a transient error
        out_of_resources // no descriptor or memory left: the connection is still pending
    };
    // Accepts at most one connection from the shared listening socket and hands it to
    // libmicrohttpd (or, when the admission hook refuses it, answers it 503 and closes it).
    Accepted accept_one();

    // Who may connect (querygate.max_connections_per_ip, querygate.max_connections: counted by
    // the worker, in shared memory). admit() counts a new connection from that address and gives
    // the slot release() gives back when it closes, or refuses it: nonzero, and refusal() makes
    // the answer it gets before it is closed. Without hooks every connection is taken.
    struct Admission {
        std::function<int(const sockaddr *, socklen_t, std::uintptr_t &slot)> admit;
        std::function<void(std::uintptr_t slot)> release;
        std::function<void(int refused, HttpResponse &)> refusal;
    };
    void set_admission(Admission admission) { admission_ = std::move(admission); }
    // Connections refused at accept, and closed for taking longer than the request timeout.
    std::uint64_t refused_connections() const { return refused_connections_; }
    std::uint64_t timed_out_connections() const { return timed_out_connections_; }

    // querygate.request_timeout (ms: a whole request, from the connection's opening or a later
    // request's line; 0: none) and querygate.idle_timeout (s: nothing sent), for connections
    // from now on. See connection_deadlines.hpp.
    void set_timeouts(long request_timeout_ms, unsigned idle_timeout_s);
    // Shedding by waiting time (overload_gate.hpp): a request that has waited too long for this
    // worker is refused before its headers are read, with what `refusal` makes (503
    // overloaded); a target of zero turns it off. A request's wait is known to be at most the
    // time since the previous run() began (it would have been read then); only when that could
    // matter, or for a connection's first request (which may have waited to be accepted), is it
    // asked of the kernel (TCP_INFO: how long ago the connection's last bytes came).
    using OverloadRefusal =
        std::function<void(const HttpRequest &, std::chrono::microseconds waited, HttpResponse &)>;
    void set_overload(std::chrono::microseconds target, std::chrono::microseconds interval,
                      OverloadRefusal refusal);
    std::uint64_t overloaded_refusals() const { return overloaded_refusals_; }

    // Stopping (`asked` says when the worker has been asked to, src/call/stop_request.hpp):
    // from then on every request is refused with 503 before its body is read, every answer
    // closes its connection (Connection: close), and close_waiting() shuts down every connection
    // that is not being answered (idle, or sending a request), as its deadline would. Asked from
    // the callbacks, so an answer made in the round the request came is already the last.
    void set_stop_request(std::function<bool()> asked) { stop_asked_ = std::move(asked); }
    bool stopping() const { return stop_asked_ && stop_asked_(); }
    void close_waiting();
    // errno of the last failed accept.
    int accept_error() const { return accept_error_; }
    // Connections libmicrohttpd holds open.
    unsigned connections() const;
    int listen_fd() const { return listen_fd_; }

    // What to log, kept for the caller to log after run(): nothing is logged from inside
    // libmicrohttpd's callbacks, where an error raised by the logging would unwind through its C
    // frames. `library` is what libmicrohttpd said (a malformed request, a caller that hung up:
    // caller-caused, see log_throttle.hpp), `faults` what a callback of ours caught (a bug). At
    // most max_log_lines of each are kept between two calls; `left_out` counts the rest.
    struct LogLines {
        std::vector<std::string> library;
        std::vector<std::string> faults;
        std::uint64_t left_out = 0;
    };
    static constexpr std::size_t max_log_lines = 32;
    // Moves what was kept into `out` (emptied first); false when there was nothing.
    bool take_log(LogLines &out);

    // Held responses (group commit, src/worker/group_commit.hpp): a response for which hold() gives
    // a mark is kept, its connection suspended, until release_held() reaches that mark (the writes
    // it may show are durable); the next run() sends it. Returns whether any was released.
    void set_hold(HoldCheck hold) { hold_ = std::move(hold); }
    bool holding() const { return !held_.empty(); }
    std::size_t held() const { return held_.size(); }
    bool release_held(std::uint64_t upto);

    // Answers made later (a write run by a helper, src/worker/call_helpers.hpp): a response
    // the handler marked `later` is not sent; its connection is suspended until answer_later()
    // gives the answer under the same token (held for a flush like any other, if hold() says so);
    // the next run() sends it. False when no request waits under that token.
    bool answer_later(std::uint64_t token, HttpResponse &&response);
    std::size_t waiting_later() const { return later_.size(); }

    // Answers made as they are sent (HttpResponse::stream: GET /events). A connection whose body
    // has nothing to say is parked, suspended; wake_streams() resumes every parked one whose body
    // is ready() (the next run() sends), and returns how many. Streams still open when the server
    // is destroyed are closed.
    std::size_t wake_streams();
    // Marks the parked streams whose clients have gone (one poll() of their sockets), so that the
    // next wake_streams() closes them; how many. Without it a client that leaves is found only
    // when its stream next sends.
    std::size_t close_hung_up();
    std::size_t streams() const { return streams_; }

    void set_max_body_size(std::size_t bytes) { max_body_size_ = bytes; }
    std::size_t max_body_size() const { return max_body_size_; }

    // Used by the libmicrohttpd callbacks (http_server_internal.hpp); not part of the interface.
    struct Callbacks;
    struct RequestState;
    struct ConnectionState;
    struct StreamState;

  private:
    struct Later {
        std::uint64_t token;
        MHD_Connection *connection;
        RequestState *state;
    };
    // Queues a stream's answer (resp.stream); false when it could not be.
    bool send_stream(MHD_Connection *conn, HttpResponse &resp);
    std::vector<StreamState *> parked_;
    std::vector<struct pollfd> hangup_fds_; // reused by close_hung_up()
    std::size_t streams_ = 0;
    // Holds a made response until `mark` is flushed (suspended), or false when no hold applies.
    bool hold(MHD_Connection *conn, RequestState *state, HttpResponse &resp);
    // A connection's whole request has arrived: its deadline is met.
    void request_arrived(MHD_Connection *conn);
    // Answers a refused connection on its socket, and closes it.
    void refuse_connection(int fd, int refused);

    void keep_log(std::vector<std::string> &lines, const char *message) noexcept;
    void let_go_last_answer() noexcept;

    // The answer sent last, one reference to it kept until the next answer is made (or the server
    // ends): its blocks (libmicrohttpd's copy of the body, and three for every header) are then
    // freed just before the next answer's are allocated, and glibc hands the same blocks back from
    // its quick per-thread lists. Freed as soon as it is sent, they would wait in glibc's fast bins
    // until the next query's first large allocation (btbeginscan's ~27 kB palloc, every lookup)
    // sweeps them into the ordinary bins, from which every block of the next answer is then made
    // the slow way: ~0.3 us a lookup in malloc's own code (perf: malloc_consolidate, unlink_chunk,
    // _int_malloc). Only an answer from a buffer of at most last_answer_most bytes is kept: the
    // memory it holds stays small, and an export's file is closed when it is sent, not later.
    static constexpr std::size_t last_answer_most = 16 * 1024;
    MHD_Response *last_answer_ = nullptr;

    MHD_Daemon *daemon_ = nullptr;
    int listen_fd_ = -1;
    Handler handler_;
    Refusal refusal_;
    bool tls_ = false; // connections speak TLS: nothing is written to them but by libmicrohttpd
    LogLines log_;
    HoldCheck hold_;
    std::vector<std::pair<std::uint64_t, MHD_Connection *>> held_; // (mark, connection)
    std::vector<Later> later_;
    std::size_t max_body_size_ = 1024 * 1024;
    std::uint64_t answered_ = 0;
    std::string start_error_;
    int accept_error_ = 0;
    Admission admission_;
    // The slot of the connection being handed to libmicrohttpd, for its "started" notice.
    std::uintptr_t adding_slot_ = 0;
    bool adding_taken_ = false;
    ConnectionDeadlines deadlines_;
    unsigned idle_timeout_s_ = 60;
    std::function<bool()> stop_asked_;
    OverloadGate overload_;
    OverloadRefusal overload_refusal_;
    std::uint64_t overloaded_refusals_ = 0;
    // When the running and the previous run() began: a request read now arrived after the latter.
    ConnectionDeadlines::Clock::time_point run_began_{}, previous_run_began_{};
    // Whether the request being read waited too long (and for how long): see set_overload.
    bool shed(MHD_Connection *conn, std::chrono::microseconds &waited);
    std::uint64_t refused_connections_ = 0;
    std::uint64_t timed_out_connections_ = 0;
};
