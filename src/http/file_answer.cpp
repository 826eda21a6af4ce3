// An answer from a file, paced: see file_answer.hpp.
#include "http/file_answer.hpp"

#include "common/settings.hpp"

#include <microhttpd.h>

#include <cerrno>
#include <new>
#include <unistd.h>

namespace file_answer {

Pace::Pace(std::uint64_t bytes_per_second, Clock::duration window, Clock::time_point start)
    : bytes_per_second_(bytes_per_second), window_(window), window_start_(start)
{
}

bool Pace::keeps_up(std::uint64_t sent, Clock::time_point now)
{
    if (bytes_per_second_ == 0 || window_ <= Clock::duration::zero() ||
        now - window_start_ < window_)
        return true;
    const double seconds = std::chrono::duration<double>(now - window_start_).count();
    const bool kept = static_cast<double>(sent - window_sent_) >=
                      static_cast<double>(bytes_per_second_) * seconds;
    window_start_ = now;
    window_sent_ = sent;
    return kept;
}

namespace {

struct Reader {
    int fd;
    Pace pace;
};

// libmicrohttpd asks for the bytes from `pos` as the connection takes them: the pace is judged
// there (a reader that takes nothing is never asked about: the idle timeout closes it).
ssize_t read_block(void *cls, std::uint64_t pos, char *buf, std::size_t max)
{
    Reader *r = static_cast<Reader *>(cls);
    if (!r->pace.keeps_up(pos, Pace::Clock::now()))
        return MHD_CONTENT_READER_END_WITH_ERROR; // the connection closes: too slow
    for (;;) {
        const ssize_t n = ::pread(r->fd, buf, max, static_cast<off_t>(pos));
        if (n > 0)
            return n;
        if (n < 0 && errno == EINTR)
            continue;
        return MHD_CONTENT_READER_END_WITH_ERROR; // the file is shorter than said, or unreadable
    }
}

void done(void *cls)
{
    Reader *r = static_cast<Reader *>(cls);
    ::close(r->fd);
    delete r;
}

} // namespace

MHD_Response *make(int fd, std::uint64_t size)
{
    const auto window = std::chrono::seconds(settings::export_rate_window);
    Reader *r = new (std::nothrow)
        Reader{fd, Pace(static_cast<std::uint64_t>(settings::export_min_rate) * 1024, window,
                        Pace::Clock::now())};
    if (r == nullptr) {
        ::close(fd);
        return nullptr;
    }
    MHD_Response *response =
        MHD_create_response_from_callback(size, 64 * 1024, &read_block, r, &done);
    if (response == nullptr)
        done(r);
    return response;
}

} // namespace file_answer
