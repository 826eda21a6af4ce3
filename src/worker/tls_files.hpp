// TLS for the HTTP workers (querygate.ssl): the certificate chain and the private key they serve
// with, read from querygate.ssl_cert_file and querygate.ssl_key_file, or PostgreSQL's own
// ssl_cert_file and ssl_key_file when those are empty; relative paths are from the data directory,
// as PostgreSQL reads its own. The key file must not be readable by anyone but its owner (the
// server's user), or also its group when root owns it: PostgreSQL's rule for ssl_key_file.
#pragma once

#include "http/http_server.hpp"

#include <string>

namespace tls_files {

// Fills tls from the files; false with the reason (naming the file, never its contents) when
// either cannot be read or the key's permissions are too open. PostgreSQL-side, no error raised.
bool load(HttpServer::Tls &tls, std::string &problem);

} // namespace tls_files
