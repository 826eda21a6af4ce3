// Memory that outlives the server's processes: a file in pg_stat_tmp, mapped shared by the
// postmaster as it makes the shared memory, before it starts any process that uses it (they
// inherit the mapping). What the processes last wrote there is still in it after they end, killed
// or crashed, and when the postmaster starts again; so it can say what their shared memory held
// (the run history's ring positions: shmem/history_ring.hpp). It is never synced: a machine that
// stops loses it, as it loses everything in memory.
//
// The file's blocks are allocated when it is mapped (posix_fallocate), so that a store into the
// mapping never needs a new block: a full disk is found then, and the caller keeps its memory in
// shared memory instead, never a SIGBUS in a process that stores. Only a file truncated under a
// running server could still fault, as any file PostgreSQL maps would; the file is its user's
// alone (mode 0600, in the data directory).
// PostgreSQL-style code, for the postmaster's shmem startup: it never raises an error (a failure is
// a LOG line and nullptr).
#pragma once

#include <cstddef>

namespace surviving_memory {

// What the file held before this mapping (malloc'd, the caller frees it), and how many bytes.
struct Before {
    char *bytes = nullptr;
    std::size_t size = 0;
};

// `size` bytes of pg_stat_tmp/`name` (the server's working directory is its data directory),
// mapped shared, or nullptr when they cannot be. Called again (a crash restart makes the shared
// memory again), the same mapping when the size is the same; `before` then holds what the ended
// processes left in it, and on a first call what the file held.
void *map(const char *name, std::size_t size, Before &before) noexcept;

} // namespace surviving_memory
