// Whether this process has been asked to stop (SIGTERM: PostgreSQL stopping, fast or smart, once
// it wants its background workers gone, or pg_terminate_backend), and what that does to a call.
//
// PostgreSQL's own handler (die) ends the process at the next CHECK_FOR_INTERRUPTS, in the middle
// of whatever it does: a call's caller would see its connection dropped with no answer, and
// every other connection of the worker too. Instead, the running call's query is cancelled as a
// statement timeout would be (its transaction rolls back, so a write is not half done) and the
// call ends as 503 shutting_down, answered; a call that starts after the request (one its worker
// had already read) is cancelled as it starts. Between calls the process decides, from its loop,
// which the handler's latch wakes: a worker drains (answers what it has, closes its connections,
// then exits: http_worker.cpp); a helper exits once it has no request left to answer.
// PostgreSQL side.
#pragma once

namespace stop_request {

// Installs the SIGTERM handler (instead of die).
void install();
// SIGTERM has arrived.
bool requested();
// From the start of a call's transaction to just before its commit a stop request cancels it.
void call_started();
void call_ended();

} // namespace stop_request
