// Every querygate.* setting, defined in one place (settings.cpp). The C variables hold the current
// values; PostgreSQL updates the reloadable ones on SIGHUP (the worker calls ProcessConfigFile).
#pragma once

namespace settings {

extern char *database;         // querygate.database (restart)
extern char *listen_addresses; // querygate.listen_addresses (restart)
extern int port;               // querygate.port (restart)
extern int workers;            // querygate.workers (restart)
extern int statement_timeout;  // querygate.statement_timeout, ms, 0 = none (reload)
extern int max_page_size;      // querygate.max_page_size (reload)
extern int max_body_size;      // querygate.max_body_size, bytes (reload)

// The page size used when a request names none: 100, or max_page_size if that is smaller.
constexpr int default_page_size = 100;

void define();

} // namespace settings
