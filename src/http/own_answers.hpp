// The answers libmicrohttpd makes by itself, replaced by ours.
//
// libmicrohttpd 0.9.75 refuses some requests before any callback of ours runs: a header larger than
// the connection's memory (431), a malformed request line or header, a missing Host (400), an HTTP
// version it does not speak (505), and alike. It answers them with a fixed HTML page, and has no
// option to change it; but every answer a caller gets must be our JSON with a stable code.
//
// It queues those pages through its own exported MHD_queue_response, and calls it through its PLT
// (`readelf -r libmicrohttpd.so.12` lists a JUMP_SLOT relocation for it). querygate.so defines
// MHD_queue_response too, and comes before its dependency libmicrohttpd in the dynamic linker's
// lookup order, so that definition (own_answers.cpp) sees every response queued in the process: a
// response of ours (queued inside OwnAnswers::ours) goes on to libmicrohttpd's function, found with
// dlsym(RTLD_NEXT); any other is libmicrohttpd's own, and is replaced by the JSON error the
// server's refusal callback makes for its status. test/t/http_037_own_answers.pl sends each kind of
// request libmicrohttpd refuses and requires JSON: should a later libmicrohttpd bind the call
// internally, it fails there. Plain C++.
#pragma once

#include <functional>

struct MHD_Connection;
struct MHD_Response;
struct HttpResponse;

namespace own_answers {

// Makes the answer for a status libmicrohttpd chose; set once by the HTTP server.
using Maker = std::function<void(int status, HttpResponse &)>;
void set_maker(Maker maker);

// Queues a response of ours (libmicrohttpd's MHD_queue_response, passed through). Returns
// whether it was queued.
bool queue_ours(MHD_Connection *connection, unsigned int status, MHD_Response *response);

// Gives `response` the answer's Content-Type and headers (libmicrohttpd copies each).
void add_headers(MHD_Response *response, const HttpResponse &answer);

} // namespace own_answers
