// TLS files: see tls_files.hpp.
#include "worker/tls_files.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "miscadmin.h"
#include "utils/guc.h"
}

#include "common/settings.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace tls_files {

namespace {

// A file setting's path: ours, else PostgreSQL's; relative to the data directory.
std::string path_of(const char *ours, const char *postgres_setting)
{
    std::string path = ours != nullptr && *ours != '\0' ? ours : "";
    if (path.empty()) {
        const char *theirs = GetConfigOption(postgres_setting, true, false);
        path = theirs != nullptr ? theirs : "";
    }
    if (!path.empty() && path[0] != '/')
        path = std::string(DataDir) + "/" + path;
    return path;
}

bool read_whole(const std::string &path, std::string &out, std::string &problem)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        problem = "could not open \"" + path + "\": " + std::strerror(errno);
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    out = text.str();
    if (out.empty()) {
        problem = "\"" + path + "\" is empty";
        return false;
    }
    return true;
}

} // namespace

bool load(HttpServer::Tls &tls, std::string &problem)
{
    const std::string cert = path_of(settings::ssl_cert_file, "ssl_cert_file");
    const std::string key = path_of(settings::ssl_key_file, "ssl_key_file");
    if (cert.empty() || key.empty()) {
        problem = "no certificate or key file is set";
        return false;
    }
    struct stat st {};
    if (stat(key.c_str(), &st) != 0) {
        problem = "could not stat \"" + key + "\": " + std::strerror(errno);
        return false;
    }
    const bool too_open = st.st_uid == 0 ? (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0
                                         : (st.st_mode & (S_IRWXG | S_IRWXO)) != 0;
    if (too_open) {
        problem = "\"" + key + "\" has group or world access: it must be u=rw (0600) or less if " +
                  "owned by the server's user, or u=rw,g=r (0640) or less if owned by root";
        return false;
    }
    return read_whole(cert, tls.cert_pem, problem) && read_whole(key, tls.key_pem, problem);
}

} // namespace tls_files
