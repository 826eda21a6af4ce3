// querygate's shared memory: every table of this folder asks for its room and sets it up through
// PostgreSQL's hooks, here and nowhere else, so that adding a table is one line in each list.
// PostgreSQL side; postmaster only, from _PG_init under shared_preload_libraries.
#pragma once

namespace shared_memory {

// Chains the request and startup hooks: the workers' load, the WAL flusher's state, the limit
// counts, the export places, the catalog's changes, the statistics, the run history's ring, the
// run events and the connection counts.
void install_hooks();

} // namespace shared_memory
