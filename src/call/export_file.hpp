// Exports (?stream=true): every row of a call written to a file at the database's own speed, so
// that the call's transaction ends before the caller has read a byte; the worker's event loop then
// sends the file while it serves other calls. A slow reader holds a file, never a worker, and the
// worker's memory holds one batch of rows at a time, whatever the answer's size.
//
// The file has no name: opened with O_TMPFILE in the data directory's base/pgsql_tmp (where
// PostgreSQL keeps its own temporary files), or made there and unlinked at once where the file
// system cannot, so nothing of it outlives its descriptor, not even across a crash. Its size is
// bounded by querygate.max_export_size, and the exports being written or sent at once, counting
// every worker, by querygate.max_exports (worker_load.hpp).
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "lib/stringinfo.h"
}

#include <string>

namespace export_file {

// Rows fetched from the cursor at a time, and the bytes gathered before they are written out.
constexpr long batch_rows = 1000;
constexpr int flush_bytes = 256 * 1024;

// A new, nameless file open for reading and writing; -1 (errno set) when none can be made.
int create();

// The file an export's rows are written to: a new one (create) when `path` is empty, else the
// one another process holds, opened for writing by the path it gave (a worker's, handing the
// export to a helper: FileBody::path_for_others); -1 (errno set) when it cannot be opened.
int open_for(const std::string &path);

// Appends what buf holds to the file and empties buf; `written` counts the file's bytes. ERROR
// when the file would pass `limit` bytes (response_too_large_sqlstate, as an answer over
// querygate.max_response_size) or the write fails (the disk is full, say). PostgreSQL-style.
void append(int fd, StringInfo buf, uint64 &written, uint64 limit);

} // namespace export_file
