// Whether a request's body framing is one querygate reads the way any proxy in front of it would.
// Pure C++.
//
// libmicrohttpd 0.9.75 reads the body by the first of several Content-Length lines, ignores
// Content-Length beside Transfer-Encoding, and reads a body whose Transfer-Encoding is not exactly
// "chunked" until the connection closes. Each is a way for a request to mean one thing to a proxy
// and another to us (request smuggling), or to hang until the caller gives up. RFC 9112 6.1-6.3
// makes them errors; they are refused before the body is read, and the connection is closed after
// the answer.
#pragma once

#include "http/http_types.hpp"

namespace framing {

// 0 when the framing is fine; else the status to refuse the request with: 400 for several
// Content-Length lines, Content-Length beside Transfer-Encoding, several Transfer-Encoding lines
// or one whose last coding is not chunked; 501 for a coding before chunked (none is supported).
int refusal(const HttpRequest &request);

} // namespace framing
