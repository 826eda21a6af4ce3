// The request deadlines of a worker's connections: see connection_deadlines.hpp.
#include "http/connection_deadlines.hpp"

#include <algorithm>

void ConnectionDeadlines::set_timeouts(std::chrono::milliseconds request,
                                       std::chrono::milliseconds idle)
{
    using std::chrono::milliseconds;
    request_.timeout = request.count() > 0 ? request : milliseconds(0);
    keep_alive_.timeout =
        request.count() > 0 ? request + std::max(idle, milliseconds(0)) : milliseconds(0);
}

void ConnectionDeadlines::opened(Entry &e, Clock::time_point now)
{
    done(e);
    push(request_, e, now);
}

void ConnectionDeadlines::answered(Entry &e, Clock::time_point now)
{
    done(e);
    push(keep_alive_, e, now);
}

void ConnectionDeadlines::request_line(Entry &e, Clock::time_point now)
{
    if (e.list == &request_ || e.list == &untimed_ || request_.timeout.count() <= 0)
        return; // a first request: due from the opening, which is earlier (or no timeout)
    if (e.list != nullptr && e.due <= now + request_.timeout)
        return; // trickled past the idle timeout: the bound from the answer comes first
    done(e);
    push(request_, e, now);
}

void ConnectionDeadlines::push(List &timed, Entry &e, Clock::time_point now)
{
    const bool never = timed.timeout.count() <= 0;
    List &list = never ? untimed_ : timed;
    e.due = never ? Clock::time_point::max() : now + timed.timeout;
    e.prev = list.tail;
    e.next = nullptr;
    if (list.tail != nullptr)
        list.tail->next = &e;
    else
        list.head = &e;
    list.tail = &e;
    e.list = &list;
}

void ConnectionDeadlines::done(Entry &e)
{
    List *list = e.list;
    if (list == nullptr)
        return;
    if (e.prev != nullptr)
        e.prev->next = e.next;
    else
        list->head = e.next;
    if (e.next != nullptr)
        e.next->prev = e.prev;
    else
        list->tail = e.prev;
    e.prev = e.next = nullptr;
    e.list = nullptr;
}

ConnectionDeadlines::Entry *ConnectionDeadlines::first() const
{
    Entry *earliest = nullptr;
    for (Entry *e : {request_.head, keep_alive_.head, untimed_.head})
        if (e != nullptr && (earliest == nullptr || e->due < earliest->due))
            earliest = e;
    return earliest;
}

long ConnectionDeadlines::ms_until_next(Clock::time_point now) const
{
    const Entry *e = first();
    if (e == nullptr || e->due == Clock::time_point::max())
        return -1;
    if (e->due <= now)
        return 0;
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(e->due - now);
    return static_cast<long>((left.count() + 999) / 1000);
}
