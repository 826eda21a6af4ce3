// GET /events: see events_endpoint.hpp.
#include "api/events_endpoint.hpp"

#include "common/settings.hpp"
#include "http/credentials.hpp"
#include "http/error_body.hpp"
#include "api/limit_headers.hpp"

#include <algorithm>

namespace {

// Where a client that comes back says it was: the Last-Event-ID header an EventSource sends when
// it reconnects, or ?last_event_id= for one that starts where a page left off. An id that is not
// a whole number is not ours: the stream starts from now, as for none.
bool last_event_id(const HttpRequest &request, std::uint64_t &id)
{
    if (const std::string *header = request.header("last-event-id"))
        return run_events::parse_last_event_id(*header, id);
    for (const auto &arg : request.args)
        if (arg.first == "last_event_id")
            return run_events::parse_last_event_id(arg.second, id);
    return false;
}

// A stream refused for want of room (a worker's streams, or a key's): nothing is wrong with the
// request, and a place may be free in a second.
void refuse_for_room(HttpResponse &response, const ErrorCode &code, const char *message,
                     const std::string &id)
{
    write_error(response, api_errors::make(code, message), id);
    response.add_header("Retry-After", "1");
}

} // namespace

void EventsEndpoint::handle(Exchange &ex)
{
    const HttpRequest &request = ex.request;
    HttpResponse &response = ex.response;
    const std::string &id = ex.id;
    const run_events::Ring *ring = events_.events();
    if (ring == nullptr || streams_ == nullptr) {
        write_error(response,
                    api_errors::make(error_code::not_found,
                                     "no such endpoint (querygate.event_buffer is 0)"),
                    id);
        return;
    }
    if (request.method != "GET" && request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on /events");
        e.allow = "GET, HEAD";
        write_error(response, e, id);
        return;
    }
    CallRequest call = path_.start_call(ex, std::string());
    // A browser's EventSource cannot send a header: the key or token may come as
    // ?access_token= (RFC 6750, 2.3), on this endpoint only. The access log never writes a query
    // string; a proxy in front may, which the README says.
    if (call.secret.empty() && call.bearer_token.empty())
        for (const auto &arg : request.args)
            if (arg.first == "access_token") {
                credentials::presented_token(arg.second, call);
                break;
            }
    if (path_.refused_without_credentials(ex, call))
        return;
    if (streams_->size() >= static_cast<std::size_t>(settings::max_event_streams)) {
        refuse_for_room(response, error_code::streams_full,
                        "this worker holds as many event streams as "
                        "querygate.max_event_streams allows",
                        id);
        return;
    }
    event_stream::Audience audience;
    LimitReport limits;
    if (ApiError error = events_.watch_events(call, true, audience, limits); error.set()) {
        write_error(response, error, id);
        limit_headers::add(response, limits);
        return;
    }
    ex.trace.key = audience.key;
    ex.trace.policy = audience.policy;
    // HEAD: the head a GET would have, and no stream (RFC 9110 9.3.2: no body, ever; the server
    // would not send it either). It takes no place among the streams.
    if (request.method == "HEAD") {
        response.status = 200;
        response.content_type = "text/event-stream";
        response.add_header("X-Accel-Buffering", "no");
        limit_headers::add(response, limits);
        response.length_unknown = true;
        return;
    }
    open(ex, *ring, std::move(call), std::move(audience), limits);
}

void EventsEndpoint::open(Exchange &ex, const run_events::Ring &ring, CallRequest call,
                          event_stream::Audience audience, const LimitReport &limits)
{
    HttpResponse &response = ex.response;
    const std::string &id = ex.id;
    const std::uint64_t newest = ring.last.load(std::memory_order_acquire);
    std::uint64_t from = newest;
    if (last_event_id(ex.request, from))
        from = std::min(from, newest); // an id from before a restart: from now on
    auto stream = std::make_shared<event_stream::Stream>(std::move(call), std::move(audience), from,
                                                         event_stream::Clock::now());
    event_stream::catch_up(ring, *stream);
    streams_->reserve_one();
    const std::string &subject = stream->audience().subject;
    if (!events_.take_stream(subject)) {
        refuse_for_room(response, error_code::too_many_streams,
                        "this key holds as many event streams as "
                        "querygate.max_event_streams_per_key allows",
                        id);
        return;
    }
    // Counted from here: given back once the connection is gone (Streams::sweep), when the
    // worker exits, or now if the answer cannot be made.
    try {
        response.status = 200;
        response.content_type = "text/event-stream";
        // nginx would buffer the stream whole otherwise.
        response.add_header("X-Accel-Buffering", "no");
        limit_headers::add(response, limits);
    } catch (...) {
        events_.give_stream(subject);
        throw;
    }
    response.stream = stream;
    streams_->add(std::move(stream));
}
