// What each of querygate's own background processes (the WAL flusher, the writer) answers
// between its waits, as PostgreSQL's auxiliary processes do (the WAL writer's
// HandleWalWriterInterrupts): a process that never absorbs a ProcSignalBarrier keeps every DROP
// DATABASE and DROP TABLESPACE of the cluster waiting for it, forever; one that ignores
// pg_log_backend_memory_contexts() hides what it holds.
#pragma once

// Resets the process's latch (before its state is read again, so no wake-up is lost), then
// absorbs what is pending. True when the process was asked to stop (SIGTERM with
// SignalHandlerForShutdownRequest): it should leave its loop.
bool between_waits();
