// Export files: see export_file.hpp.
#include "call/export_file.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/fd.h"
}

#include "call/row_output.hpp"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace export_file {

int create()
{
    const std::string dir = std::string(DataDir) + "/base/" PG_TEMP_FILES_DIR;
    // PostgreSQL makes the directory the first time it needs a temporary file.
    if (mkdir(dir.c_str(), S_IRWXU) != 0 && errno != EEXIST)
        return -1;
    int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, S_IRUSR | S_IWUSR);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    std::string path = dir + "/querygate_export_XXXXXX";
    fd = mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0)
        (void)unlink(path.c_str());
    return fd;
}

int open_for(const std::string &path)
{
    return path.empty() ? create() : open(path.c_str(), O_WRONLY | O_CLOEXEC);
}

void append(int fd, StringInfo buf, uint64 &written, uint64 limit)
{
    if (limit > 0 && written + static_cast<uint64>(buf->len) > limit)
        ereport(ERROR,
                (errcode(response_too_large_sqlstate),
                 errmsg("querygate: the export would be larger than querygate.max_export_size "
                        "(" UINT64_FORMAT " bytes)",
                        limit)));
    const char *at = buf->data;
    int left = buf->len;
    while (left > 0) {
        const ssize_t n = write(fd, at, static_cast<size_t>(left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            ereport(ERROR, (errcode_for_file_access(),
                            errmsg("querygate: could not write an export's file: %m")));
        at += n;
        left -= static_cast<int>(n);
    }
    written += static_cast<uint64>(buf->len);
    resetStringInfo(buf);
}

} // namespace export_file
