// The request deadlines of a worker's connections: see connection_deadlines.hpp.
#include "http/connection_deadlines.hpp"

void ConnectionDeadlines::waiting(Entry &e, Clock::time_point now)
{
    done(e);
    if (timeout_.count() <= 0)
        return;
    e.due = now + timeout_;
    e.prev = tail_;
    e.next = nullptr;
    if (tail_ != nullptr)
        tail_->next = &e;
    else
        head_ = &e;
    tail_ = &e;
    e.listed = true;
}

void ConnectionDeadlines::done(Entry &e)
{
    if (!e.listed)
        return;
    if (e.prev != nullptr)
        e.prev->next = e.next;
    else
        head_ = e.next;
    if (e.next != nullptr)
        e.next->prev = e.prev;
    else
        tail_ = e.prev;
    e.prev = e.next = nullptr;
    e.listed = false;
}

long ConnectionDeadlines::ms_until_next(Clock::time_point now) const
{
    if (head_ == nullptr)
        return -1;
    if (head_->due <= now)
        return 0;
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(head_->due - now);
    return static_cast<long>((left.count() + 999) / 1000);
}
