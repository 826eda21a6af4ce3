// How long a connection may take to send a request, on two clocks that bytes arriving do not
// move (a client that sends a byte a second keeps libmicrohttpd's idle timeout,
// querygate.idle_timeout, from ever expiring: a "slowloris"):
//  - its first request, whole (headers and body), within querygate.request_timeout of the
//    connection's opening;
//  - a later one (keep-alive) within request_timeout of its request line, and in any case
//    within idle_timeout + request_timeout of the answer to the previous one. Between requests
//    a connection that sends nothing is closed by the idle timeout alone, so a keep-alive
//    client that pauses longer than request_timeout keeps its connection (as nginx's
//    keepalive_timeout and client_header_timeout do); one that trickles its request line is
//    still bounded.
// While a request runs (the handler, a helper, a flush) nothing is due: statement_timeout
// bounds that.
//
// Each clock is one list in the order its deadlines were set, and each deadline in a list is
// the time it was set plus the list's timeout, so a list's first one is its earliest: setting,
// clearing and finding what is due cost no search. With no request timeout a connection between
// requests is still listed, never due, so that a worker that stops can close every one. (A timeout
// changed by a reload applies to deadlines set from then on; one set before is still met in its
// turn, at most the old timeout late.) Entries live in the caller's per-connection state; nothing
// here allocates. Plain C++.
#pragma once

#include <chrono>

class ConnectionDeadlines {
  public:
    using Clock = std::chrono::steady_clock;
    struct List;

    // One connection's place in a list (in its per-connection state).
    struct Entry {
        int fd = -1;
        Clock::time_point due{};
        Entry *prev = nullptr;
        Entry *next = nullptr;
        List *list = nullptr; // none: nothing is due
        bool listed() const { return list != nullptr; }
    };

    struct List {
        Entry *head = nullptr;
        Entry *tail = nullptr;
        std::chrono::milliseconds timeout{0};
    };

    // querygate.request_timeout and idle_timeout, for deadlines set from now on; a request
    // timeout of zero or less sets none.
    void set_timeouts(std::chrono::milliseconds request, std::chrono::milliseconds idle);

    // The connection has opened: its first request is due request_timeout from now.
    void opened(Entry &e, Clock::time_point now);
    // Its previous request was answered and it stays open: the next one is due idle_timeout +
    // request_timeout from now.
    void answered(Entry &e, Clock::time_point now);
    // A request line has arrived: the request is due request_timeout from now, or earlier if
    // it already was.
    void request_line(Entry &e, Clock::time_point now);
    // Its request has arrived whole, or it is closing: nothing is due for it.
    void done(Entry &e);

    // Takes every connection whose deadline has passed off its list, first due first, and
    // calls expired(fd) for each.
    template <typename Fn> void expire(Clock::time_point now, Fn &&expired)
    {
        for (Entry *e = first(); e != nullptr && e->due <= now; e = first()) {
            done(*e);
            expired(e->fd);
        }
    }

    // Takes every connection off the lists, due or not (a worker stopping).
    template <typename Fn> void expire_all(Fn &&expired)
    {
        expire(Clock::time_point::max(), expired);
    }

    // Milliseconds (rounded up) until the first deadline; -1 when none is set.
    long ms_until_next(Clock::time_point now) const;
    bool empty() const { return first() == nullptr; }

  private:
    void push(List &list, Entry &e, Clock::time_point now);
    Entry *first() const;

    List request_;    // first requests and request lines: request_timeout
    List keep_alive_; // after an answer: idle_timeout + request_timeout
    List untimed_;    // between requests with no request timeout: never due
};
