// libmicrohttpd's own answers, replaced by ours: see own_answers.hpp.
#include "http/own_answers.hpp"
#include "http/http_types.hpp"

#include <microhttpd.h>

#include <dlfcn.h>

namespace {

using QueueResponse = MHD_Result (*)(MHD_Connection *, unsigned int, MHD_Response *);

// libmicrohttpd's own MHD_queue_response: the next definition after this library's.
QueueResponse libmicrohttpd_queue_response()
{
    static const QueueResponse real =
        reinterpret_cast<QueueResponse>(dlsym(RTLD_NEXT, "MHD_queue_response"));
    return real;
}

// The worker serves one request at a time on one thread; thread_local keeps it right regardless.
thread_local bool queuing_ours = false;
own_answers::Maker maker;

MHD_Result replace(MHD_Connection *connection, unsigned int status)
{
    const QueueResponse real = libmicrohttpd_queue_response();
    if (real == nullptr)
        return MHD_NO; // cannot answer at all: libmicrohttpd closes the connection
    try {
        HttpResponse ours;
        ours.status = static_cast<int>(status);
        if (maker)
            maker(static_cast<int>(status), ours);
        MHD_Response *r = MHD_create_response_from_buffer(
            ours.body.size(), const_cast<char *>(ours.body.data()), MHD_RESPMEM_MUST_COPY);
        if (r == nullptr)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ours.content_type.c_str());
        for (const auto &h : ours.headers)
            MHD_add_response_header(r, h.first.c_str(), h.second.c_str());
        const MHD_Result rc = real(connection, static_cast<unsigned int>(ours.status), r);
        MHD_destroy_response(r);
        return rc;
    } catch (...) {
        return MHD_NO;
    }
}

} // namespace

namespace own_answers {

void set_maker(Maker m)
{
    maker = std::move(m);
}

bool queue_ours(MHD_Connection *connection, unsigned int status, MHD_Response *response)
{
    queuing_ours = true;
    const MHD_Result rc = MHD_queue_response(connection, status, response);
    queuing_ours = false;
    return rc == MHD_YES;
}

} // namespace own_answers

// Every response queued in the process comes through here (own_answers.hpp says why).
extern "C" MHD_Result MHD_queue_response(MHD_Connection *connection, unsigned int status_code,
                                         MHD_Response *response)
{
    if (queuing_ours) {
        const QueueResponse real = libmicrohttpd_queue_response();
        return real != nullptr ? real(connection, status_code, response) : MHD_NO;
    }
    return replace(connection, status_code);
}
