// Secrets kept in files: see secret_file.hpp.
#include "auth/secret_file.hpp"

#include "auth/secrets.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

namespace secret_file {

namespace {

bool fail(std::string &error, const std::string &path, const char *why)
{
    error = "secret file \"" + path + "\" " + why;
    return false;
}

bool fail_errno(std::string &error, const std::string &path, const char *doing)
{
    error = "could not " + std::string(doing) + " secret file \"" + path +
            "\": " + std::strerror(errno);
    return false;
}

// Splits the file's text into its secrets: one a line, ending white space and '#' lines skipped.
void split_lines(const std::string &text, std::vector<std::string> &out)
{
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::size_t last = end;
        while (last > start &&
               (text[last - 1] == ' ' || text[last - 1] == '\t' || text[last - 1] == '\r'))
            --last;
        if (last > start && text[start] != '#')
            out.emplace_back(text, start, last - start);
        start = end + 1;
    }
}

} // namespace

bool read(const std::string &path, std::vector<std::string> &out, std::string &error)
{
    secrets::wipe(out);
    if (path.empty())
        return true;
    // O_NOFOLLOW: the checks below are of the file itself, not of a link someone else may point.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return fail_errno(error, path, "open");
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        int saved = errno;
        ::close(fd);
        errno = saved;
        return fail_errno(error, path, "stat");
    }
    bool ok = false;
    if (!S_ISREG(st.st_mode))
        fail(error, path, "is not a regular file");
    else if (st.st_uid != ::geteuid() && st.st_uid != 0)
        fail(error, path, "is not owned by the server's user or root");
    // PostgreSQL's rule for ssl_key_file: 0600 or less when the server's user owns it, 0640 or
    // less when root does (so that a group of root's choosing can read it).
    else if (st.st_uid == ::geteuid() && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
        fail(error, path,
             "has permissions for its group or others (it must be u=rw (0600) or less)");
    else if (st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0)
        fail(error, path, "is owned by root and has permissions beyond u=rw,g=r (0640)");
    else if (static_cast<std::size_t>(st.st_size) > max_bytes)
        fail(error, path, "is larger than 64 kB");
    else
        ok = true;
    if (!ok) {
        ::close(fd);
        return false;
    }
    std::string text(max_bytes + 1, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        ssize_t n = ::read(fd, &text[got], text.size() - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            ::close(fd);
            OPENSSL_cleanse(&text[0], text.size());
            errno = saved;
            return fail_errno(error, path, "read");
        }
        if (n == 0)
            break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (got > max_bytes) {
        OPENSSL_cleanse(&text[0], text.size());
        return fail(error, path, "is larger than 64 kB");
    }
    text.resize(got);
    split_lines(text, out);
    OPENSSL_cleanse(&text[0], text.size());
    return true;
}

Cached::~Cached()
{
    secrets::wipe(secrets_);
}

const std::vector<std::string> &Cached::get(const char *path, unsigned long generation,
                                            std::string &error)
{
    error.clear();
    std::string now = path != nullptr ? path : "";
    if (generation == generation_ && now == path_)
        return secrets_;
    generation_ = generation;
    path_ = now;
    if (!read(path_, secrets_, error))
        secrets::wipe(secrets_);
    return secrets_;
}

} // namespace secret_file
