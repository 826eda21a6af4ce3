// How long a connection may take to send a whole request: querygate.request_timeout from its
// opening, or from the answer to its previous request (keep-alive), to the last byte of the
// request's headers and body. A deadline that bytes arriving do not move: a client that sends a
// byte a second keeps libmicrohttpd's idle timeout (querygate.idle_timeout) from ever expiring,
// never this one (a "slowloris"). While a request runs (the handler, a write helper, a flush)
// nothing is due: statement_timeout bounds that.
//
// The deadlines are one list in the order they were set, and each is the time it was set plus
// the same timeout, so the first one is the earliest: setting, clearing and finding what is due
// cost no search. (A timeout changed by a reload applies to deadlines set from then on; one set
// before is still met in its turn, at most the old timeout late.) Entries live in the caller's
// per-connection state; nothing here allocates. Plain C++.
#pragma once

#include <chrono>

class ConnectionDeadlines {
  public:
    using Clock = std::chrono::steady_clock;

    // One connection's place in the list (in its per-connection state).
    struct Entry {
        int fd = -1;
        Clock::time_point due{};
        Entry *prev = nullptr;
        Entry *next = nullptr;
        bool listed = false;
    };

    // The timeout for deadlines set from now on; zero or less: none is set.
    void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

    // The connection waits for a request from `now`: opened, or its previous request answered.
    void waiting(Entry &e, Clock::time_point now);
    // Its request has arrived whole, or it is closing: nothing is due for it.
    void done(Entry &e);

    // Takes every connection whose deadline has passed off the list, first due first, and calls
    // expired(fd) for each.
    template <typename Fn> void expire(Clock::time_point now, Fn &&expired)
    {
        while (head_ != nullptr && head_->due <= now) {
            Entry *e = head_;
            done(*e);
            expired(e->fd);
        }
    }

    // Milliseconds (rounded up) until the first deadline; -1 when none is set.
    long ms_until_next(Clock::time_point now) const;
    bool empty() const { return head_ == nullptr; }

  private:
    Entry *head_ = nullptr;
    Entry *tail_ = nullptr;
    std::chrono::milliseconds timeout_{0};
};
