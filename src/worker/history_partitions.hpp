// The run history's partitions (rules/history_retention.hpp), for the writer (history_writer.cpp):
// where a record's time goes, its partition made when none holds it, and the partitions that have
// outlived querygate.history_retention, dropped when nobody is reading the table. PostgreSQL side,
// inside a transaction the writer opens.
#pragma once

#include "pg/pg_headers.hpp"
#include "rules/history_retention.hpp"

extern "C" {
#include "datatype/timestamp.h"
#include "utils/relcache.h"
}

namespace history_partitions {

// Where a time goes in querygate.history: the partition that holds it (relid), with its range;
// or, relid invalid, the free gap between two partitions (or beyond the last) that it is in.
struct Place {
    Oid relid = InvalidOid;
    int64 lower = history_retention::unbounded_below;
    int64 upper = history_retention::unbounded_above;
};

// Where `at` goes, making its partition if none holds it. The parent is open only while its
// partitions are read: ATTACH PARTITION refuses a table its own session has open.
Place place_or_make(Oid parent_id, TimestampTz at);

// Makes the partition of querygate.history for `span`, named after its start (with a digit after
// it when an unrelated table has that name), with the parent's columns, defaults and
// constraints. Made apart and then attached: CREATE TABLE ... PARTITION OF would lock the parent
// against its readers, where ATTACH PARTITION takes a lock that only other DDL waits for.
void make_partition(const history_retention::Span &span);

// The partitions of querygate.history that have outlived the retention, and whether the one
// holding `now` exists and the one after it does not (then made, so that a new span's first
// batch does not wait for it). Under a lock on the parent.
struct Survey {
    Oid expired[64]; // at most this many a pass: the rest at the next
    int nexpired = 0;
    bool current = false;
    Place next;
};

Survey survey(Relation parent, TimestampTz now);

// Drops one partition if nobody is using the table: the locks are asked for without waiting,
// so that neither the writer nor anyone queued behind its lock waits for a reader of
// querygate.history. False when it is in use (tried again at the next pass).
bool drop_partition(Oid parent, Oid partition);

} // namespace history_partitions
