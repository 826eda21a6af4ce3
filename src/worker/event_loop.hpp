// The HTTP worker's event loop: one thread, a round at a time, the worker_spi way.
//
// libmicrohttpd runs without a thread of its own (external epoll). Its epoll fd sits in a
// WaitEventSet beside the process latch and postmaster death; MHD_get_timeout bounds the wait; and
// MHD_run, called on this thread, runs every request callback, so SPI and every other PostgreSQL
// call happen here only. A round is a list of named steps (event_loop.cpp): wait for something to
// do; take what woke the worker (the latch; a pending connection, when the accept gate lets this
// worker take it: src/http/accept_gate.hpp); clear what must not outlive a call and take the
// interrupts and a reload of the settings; serve the requests and the helpers' results; send the
// answers group commit held once their writes are flushed; feed the event streams; publish what
// the worker did. After a round that answered something the worker may look for the next request
// for a few microseconds before it sleeps (querygate.busy_poll; src/http/busy_poll.hpp says when
// and why).
//
// A stopping worker (SIGTERM: src/call/stop_request.hpp) drains: it accepts nothing more, refuses
// what arrives, closes its connections between requests, sends what it has answered, and the loop
// ends once nothing is left or after a few seconds at most.
//
// Errors outside a call (a failed wait) are promoted to FATAL by PostgreSQL in a background
// worker, which exits this process only; the postmaster starts a new one.
#pragma once

class CallHelpers;
class EventPump;
class GroupCommit;
class HttpServer;
class RequestHandler;

namespace event_loop {

// The server's settings that a reload may change: the body's size, the request and idle
// timeouts, and when an overloaded worker refuses requests (http/overload_gate.hpp). Once before
// the loop; the loop sets them again at each reload.
void configure(HttpServer &server, RequestHandler &handler);

// The rounds, until a stopping worker is done.
void run(HttpServer &server, RequestHandler &handler, CallHelpers &helpers,
         GroupCommit &group_commit, EventPump &events);

} // namespace event_loop
