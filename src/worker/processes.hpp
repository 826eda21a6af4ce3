// querygate's background processes, registered with the postmaster: the HTTP workers, the WAL
// flusher and the writer (helpers are started by their worker, when needed: call_helpers.hpp).
// PostgreSQL side; postmaster only, from _PG_init under shared_preload_libraries.
#pragma once

namespace processes {

// Opens the shared listening socket every worker accepts on (http/listen_socket.hpp). False when
// HTTP is off (the address cannot be used; the log says why): nothing else is started then, and
// the server starts without HTTP.
bool listen();

// Registers querygate.workers HTTP workers, the WAL flusher and the writer.
void register_all();

} // namespace processes
