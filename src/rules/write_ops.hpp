// The write operations a statement may perform and a policy may be granted, in one table: their
// bits (what the analysis records), their names (what grant_writes takes and the catalog stores),
// in the order the API lists them. Plain C++.
#pragma once

enum WriteOp { WRITE_INSERT = 1, WRITE_UPDATE = 2, WRITE_DELETE = 4, WRITE_MERGE = 8 };

namespace write_ops {

struct Op {
    WriteOp bit;
    const char *name;
};

inline constexpr Op all[] = {
    {WRITE_INSERT, "insert"},
    {WRITE_UPDATE, "update"},
    {WRITE_DELETE, "delete"},
    {WRITE_MERGE, "merge"},
};

// The bit for a name, ASCII case-insensitive; 0 for anything else (NULL included).
int from_name(const char *name);

} // namespace write_ops
