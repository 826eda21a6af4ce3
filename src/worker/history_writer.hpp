// The writer process's part of the run history: records taken from the shared ring
// (shmem/history_ring.hpp) are inserted into querygate.history in batches of up to 2,048, as
// COPY FROM inserts rows, each batch in a transaction of its own outside any call's;
// in the partition of their time (rules/history_retention.hpp: made when a record finds none); and
// once a minute the partitions older than querygate.history_retention are dropped.
// Called by the writer (state_writer.cpp) with no transaction open; errors are caught, logged and
// counted (a batch that cannot be saved is counted as dropped, never retried forever; a WARNING
// for the first of a minute, one for the rest).
#pragma once

namespace history_writer {

// Saves what the ring holds: a few batches, or with `all` everything (a clean stop).
void save(bool all);
// Drops the partitions older than querygate.history_retention (none when it is 0) if nobody is
// reading the table, and makes the next partition ahead of the current one.
void keep_partitions();

} // namespace history_writer
