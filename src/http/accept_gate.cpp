#include "http/accept_gate.hpp"

bool AcceptGate::should_accept(unsigned mine, unsigned fewest, Clock::time_point now)
{
    if (mine <= fewest) {
        settled();
        return true;
    }
    // A deferral much older than the grace belongs to a connection someone else took long ago:
    // this wakeup is for a new one, which gets its own grace.
    if (deferring_ && now - deferred_at_ > 2 * grace)
        deferring_ = false;
    if (deferring_ && now - deferred_at_ >= grace) {
        settled();
        return true;
    }
    if (!deferring_) {
        deferring_ = true;
        deferred_at_ = now;
    }
    resume_at_ = deferred_at_ + grace;
    return false;
}

void AcceptGate::out_of_resources(Clock::time_point now)
{
    deferring_ = false;
    resume_at_ = now + shortage_pause;
}

long AcceptGate::ms_until_watching(Clock::time_point now) const
{
    if (now >= resume_at_)
        return 0;
    // Rounded up from nanoseconds: a wait rounded down could end just before watching resumes.
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(resume_at_ - now).count();
    return static_cast<long>((left + 999999) / 1000000);
}
