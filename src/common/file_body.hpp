// An answer's body held in a file rather than in memory (an export: src/call/export_file.hpp),
// owned by whoever holds this: closed when it goes, unless handed on with release() (to
// libmicrohttpd, which sends it from the file and closes it once sent). Move-only. Plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <unistd.h>
#include <utility>

class FileBody {
  public:
    FileBody() = default;
    FileBody(int fd, std::uint64_t size) : fd_(fd), size_(size) {}
    FileBody(FileBody &&other) noexcept
        : fd_(std::exchange(other.fd_, -1)), size_(std::exchange(other.size_, 0))
    {
    }
    FileBody &operator=(FileBody &&other) noexcept
    {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    FileBody(const FileBody &) = delete;
    FileBody &operator=(const FileBody &) = delete;
    ~FileBody() { reset(); }

    bool present() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    std::uint64_t size() const { return size_; }
    // How another process of this server, running as the same user, opens this file while this
    // one holds it (a helper writing an export: worker/call_helpers.hpp): through /proc, which
    // reaches a file that has no name. Empty when none is held.
    std::string path_for_others() const
    {
        return fd_ < 0 ? std::string()
                       : "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
    }
    // The descriptor, now the caller's to close.
    int release() { return std::exchange(fd_, -1); }
    void reset()
    {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
        size_ = 0;
    }

  private:
    int fd_ = -1;
    std::uint64_t size_ = 0;
};
