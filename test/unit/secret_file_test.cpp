// Tests of src/auth/secret_file.cpp: which files are read (owner and permissions as PostgreSQL
// asks of ssl_key_file, regular files only, no symbolic link, at most 64 kB), how lines become
// secrets, that an error names the file and never its content, and that Cached reads the file
// again only when the settings' generation or the path changes.
#include "auth/secret_file.hpp"
#include "tap.hpp"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using tap::is;
using tap::ok;

std::string dir;

std::string write_file(const std::string &name, const std::string &text, mode_t mode)
{
    std::string path = dir + "/" + name;
    unlink(path.c_str());
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        std::perror(path.c_str());
        std::exit(2);
    }
    close(fd);
    chmod(path.c_str(), mode);
    return path;
}

void lines()
{
    std::vector<std::string> got;
    std::string error;
    std::string path =
        write_file("keys", "# rotated in December\nfirst-key  \r\n\n\t\nsecond key\nlast", 0600);
    ok(secret_file::read(path, got, error), "read: a 0600 file", error);
    is(got.size(), std::size_t(3), "read: three secrets (comments, blank lines skipped)");
    if (got.size() == 3) {
        is(got[0], std::string("first-key"), "read: ending white space and CR dropped");
        is(got[1], std::string("second key"), "read: inner white space kept");
        is(got[2], std::string("last"), "read: a last line without a newline");
    }
    path = write_file("empty", "", 0400);
    ok(secret_file::read(path, got, error) && got.empty(), "read: an empty 0400 file, no secrets");
    ok(secret_file::read("", got, error) && got.empty(), "read: no path, no secrets");
}

void refused()
{
    std::vector<std::string> got = {"stale"};
    std::string error;
    std::string path = write_file("open", "the-secret-itself\n", 0640);
    // Owned by this process's user, even when that is root: 0600 or less.
    ok(!secret_file::read(path, got, error), "refused: group may read (0640)");
    ok(got.empty(), "refused: nothing is kept");
    ok(error.find(path) != std::string::npos && error.find("0600") != std::string::npos,
       "refused: the error names the file and the mode", error);
    ok(error.find("the-secret-itself") == std::string::npos,
       "refused: the error never holds the content");
    path = write_file("world", "the-secret-itself\n", 0604);
    ok(!secret_file::read(path, got, error), "refused: others may read (0604)");
    ok(error.find("the-secret-itself") == std::string::npos,
       "refused: the error never holds the content");
    ok(!secret_file::read(dir + "/missing", got, error) &&
           error.find("could not open") != std::string::npos,
       "refused: a missing file", error);
    ok(!secret_file::read(dir, got, error) && !error.empty(), "refused: a directory", error);
    std::string link = dir + "/link";
    symlink((dir + "/keys").c_str(), link.c_str());
    ok(!secret_file::read(link, got, error), "refused: a symbolic link", error);
    path = write_file("big", std::string(secret_file::max_bytes + 1, 'x'), 0600);
    ok(!secret_file::read(path, got, error) && error.find("64 kB") != std::string::npos,
       "refused: larger than 64 kB", error);
}

void cached()
{
    std::string path = write_file("cached", "one\n", 0600);
    secret_file::Cached c;
    std::string error;
    const std::vector<std::string> *got = &c.get(path.c_str(), 1, error);
    ok(error.empty() && got->size() == 1 && (*got)[0] == "one", "cached: first read", error);
    write_file("cached", "two\n", 0600);
    got = &c.get(path.c_str(), 1, error);
    ok(got->size() == 1 && (*got)[0] == "one", "cached: the same generation reads nothing");
    got = &c.get(path.c_str(), 2, error);
    ok(got->size() == 1 && (*got)[0] == "two", "cached: a reload reads the file again");
    chmod(path.c_str(), 0644);
    got = &c.get(path.c_str(), 3, error);
    ok(got->empty() && !error.empty(),
       "cached: a file turned readable gives no secrets and a reason");
    got = &c.get(path.c_str(), 3, error);
    ok(got->empty() && error.empty(), "cached: the reason is given once");
    got = &c.get(nullptr, 4, error);
    ok(got->empty() && error.empty(), "cached: no path, no secrets, no error");
}

} // namespace

int main()
{
    char tmpl[] = "/tmp/querygate-secret-file.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        std::perror("mkdtemp");
        return 2;
    }
    dir = tmpl;
    lines();
    refused();
    cached();
    std::string cleanup = "rm -rf '" + dir + "'";
    if (std::system(cleanup.c_str()) != 0)
        tap::diag("could not remove " + dir);
    return tap::done();
}
