// Secrets kept in files only the server's owner can read (querygate.jwt_secret_file,
// querygate.metrics_token_file), as PostgreSQL keeps ssl_key_file: never in a setting, which
// pg_read_all_settings (and so pg_monitor) would show, and never in the log. Pure C++: no
// PostgreSQL header, nothing that throws.
//
// The file holds one secret a line; blank lines and lines starting with '#' are skipped, and so is
// the white space that ends a line. More than one secret is how a secret is rotated without a
// stop: the new one is added, the clients move to it, the old one is removed, each step a reload.
#pragma once

#include <string>
#include <vector>

namespace secret_file {

// The most bytes a secret file may hold: a few secrets, not a data file.
constexpr std::size_t max_bytes = 64 * 1024;

// Reads the secrets in path into out (cleared first). The file must be a regular file, owned by
// this process's user with no permission for its group or others (0600 or less), or by root with at
// most u=rw,g=r (0640), as PostgreSQL requires of ssl_key_file; any other file is refused whole.
// False with a reason that names the file and never its content. An empty path is no file: true, no
// secrets.
bool read(const std::string &path, std::vector<std::string> &out, std::string &error);

// A secret file read again only when the settings change: the workers' copy.
class Cached {
  public:
    ~Cached();

    // The secrets in path as of settings generation `generation`: the file is read when either
    // changed since the last call. On a failure the secrets are none (whatever they were) and
    // error says why, once per change; otherwise error is left empty.
    const std::vector<std::string> &get(const char *path, unsigned long generation,
                                        std::string &error);

  private:
    std::string path_;
    unsigned long generation_ = 0;
    std::vector<std::string> secrets_;
};

} // namespace secret_file
