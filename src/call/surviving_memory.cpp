// Memory that outlives the server's processes: see surviving_memory.hpp.
#include "call/surviving_memory.hpp"

#include "pg/pg_headers.hpp"

extern "C" {
#include "pgstat.h"
}

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace surviving_memory {

namespace {

// The postmaster's mapping, which its children inherit; one file only.
void *mapping = nullptr;
std::size_t mapped = 0;

// No more than this is read back: the file is a few pages.
constexpr std::size_t most_read = 1 << 20;

char *copy_of(const void *from, std::size_t size)
{
    char *to = static_cast<char *>(std::malloc(size));
    if (to != nullptr)
        std::memcpy(to, from, size);
    return to;
}

void read_back(int fd, Before &before)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || static_cast<std::size_t>(st.st_size) > most_read)
        return;
    const std::size_t size = static_cast<std::size_t>(st.st_size);
    char *bytes = static_cast<char *>(std::malloc(size));
    if (bytes == nullptr)
        return;
    if (pread(fd, bytes, size, 0) != static_cast<ssize_t>(size)) {
        std::free(bytes);
        return;
    }
    before.bytes = bytes;
    before.size = size;
}

} // namespace

void *map(const char *name, std::size_t size, Before &before) noexcept
{
    before = Before{};
    if (mapping != nullptr) {
        // A crash restart: what the ended processes left is in the mapping.
        before.bytes = copy_of(mapping, mapped);
        before.size = before.bytes != nullptr ? mapped : 0;
        if (mapped == size)
            return mapping;
        (void)munmap(mapping, mapped);
        mapping = nullptr;
        mapped = 0;
    }
    char path[MAXPGPATH];
    std::snprintf(path, sizeof(path), "%s/%s", PG_STAT_TMP_DIR, name);
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, S_IRUSR | S_IWUSR);
    if (fd < 0) {
        ereport(LOG,
                (errcode_for_file_access(), errmsg("querygate could not open \"%s\": %m", path)));
        return nullptr;
    }
    if (before.bytes == nullptr)
        read_back(fd, before);
    // Every block allocated now, so that no store into the mapping needs one later.
    int rc = ftruncate(fd, static_cast<off_t>(size));
    if (rc == 0)
        rc = posix_fallocate(fd, 0, static_cast<off_t>(size));
    else
        rc = errno;
    void *p = rc == 0 ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        if (rc != 0)
            errno = rc;
        ereport(LOG, (errcode_for_file_access(), errmsg("querygate could not map \"%s\": %m", path),
                      errdetail("What the run history loses when the server restarts without a "
                                "clean stop is not counted.")));
        close(fd);
        return nullptr;
    }
    close(fd);
    mapping = p;
    mapped = size;
    return p;
}

} // namespace surviving_memory
