// The HTTP API's front: see request_handler.hpp.
#include "api/request_handler.hpp"

#include "common/chars.hpp"
#include "common/metrics.hpp"
#include "common/settings.hpp"
#include "http/error_body.hpp"

#include <openssl/rand.h>

#include <cstdio>
#include <optional>

namespace {

bool valid_request_id(const std::string &id)
{
    if (id.empty() || id.size() > 64)
        return false;
    for (char c : id)
        if (!(chars::is_alnum(c) || c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    return true;
}

} // namespace

RequestHandler::RequestHandler(const services::Database &database, services::HandOff *hand_off,
                               access_log::Sink *log)
    : recorder_(database.recorder), path_(database.calls, hand_off), query_(path_, database.calls),
      sql_(path_, query_), schema_(path_, database.schemas),
      mcp_(path_, database.calls, database.describer, database.schemas),
      events_(path_, database.events), describe_(path_, database.calls, database.describer),
      probes_(database.health), log_(log), id_state_(0)
{
    if (RAND_bytes(reinterpret_cast<unsigned char *>(&id_state_), sizeof(id_state_)) != 1 ||
        id_state_ == 0)
        id_state_ = 0x9E3779B97F4A7C15ULL;
}

std::string RequestHandler::request_id(const HttpRequest &request)
{
    if (const std::string *given = request.header("x-request-id"))
        if (valid_request_id(*given))
            return *given;
    // Ids only need to be unique enough to find a call in the logs, not secret.
    id_state_ ^= id_state_ << 13;
    id_state_ ^= id_state_ >> 7;
    id_state_ ^= id_state_ << 17;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id_state_));
    return buf;
}

void RequestHandler::refuse(const HttpRequest &request, int status, HttpResponse &response)
{
    std::string id = request_id(request);
    ApiError e;
    if (status == 413)
        e = api_errors::make(error_code::payload_too_large,
                             "the request body is larger than " +
                                 std::to_string(settings::max_body_size) + " bytes");
    else if (status == 414)
        e = api_errors::make(error_code::uri_too_long,
                             "the query string is longer than " + std::to_string(max_query_string) +
                                 " bytes or has more than " + std::to_string(max_query_parameters) +
                                 " parameters");
    else if (status == 431)
        e = api_errors::make(error_code::header_too_large, "the request's header is too large");
    else if (status == 505)
        e = api_errors::make(ErrorCode{status, error_code::invalid_request},
                             "the HTTP version is not supported (use HTTP/1.1)");
    else if (status == 501)
        e = api_errors::make(ErrorCode{status, error_code::invalid_request},
                             "the request's Transfer-Encoding is not supported (only chunked)");
    else if (status == 503)
        e = api_errors::make(error_code::shutting_down, "the server is stopping");
    else if (status >= 500)
        e = api_errors::make(ErrorCode{status, error_code::internal_error.code},
                             "the request could not be processed");
    else if (status == 400 && request.malformed != nullptr) // message_syntax.hpp
        e = api_errors::make(ErrorCode{status, request.malformed->code},
                             request.malformed->message);
    else
        e = api_errors::make(ErrorCode{status, error_code::invalid_request},
                             "the request is not well-formed HTTP");
    write_error(response, e, id);
    response.add_header("X-Request-Id", id);
    if (status == 503)
        response.add_header("Retry-After", "1");
    count(response);
    if (logging())
        log_answer(start_trace(request), response, id); // refused as it came: no time of ours
}

void RequestHandler::refuse_connection(bool per_address, HttpResponse &response)
{
    const std::string id = request_id(HttpRequest());
    write_error(response,
                api_errors::make(error_code::too_many_connections,
                                 per_address ? "too many connections from this address"
                                             : "too many connections"),
                id);
    response.add_header("X-Request-Id", id);
    response.add_header("Retry-After", "1");
    count(response);
}

void RequestHandler::refuse_overloaded(const HttpRequest &request, std::chrono::microseconds waited,
                                       HttpResponse &response)
{
    const std::string id = request_id(request); // its headers were not read: a new one
    write_error(
        response,
        api_errors::make(error_code::overloaded, "the server is overloaded: this request waited " +
                                                     std::to_string(waited.count() / 1000) +
                                                     " ms for a worker; retry in a second"),
        id);
    response.add_header("X-Request-Id", id);
    response.add_header("Retry-After", "1");
    count(response);
    if (logging())
        log_answer(start_trace(request), response, id); // refused as it came: no time of ours
}

void RequestHandler::count(const HttpResponse &response)
{
    counts_.answered++;
    counts_.errors += response.status >= 400;
}

Trace RequestHandler::start_trace(const HttpRequest &request)
{
    Trace trace;
    trace.started = Trace::Clock::now();
    trace.method = request.method;
    trace.path = request.path;
    trace.client = request.client_address; // a call's own, behind trusted proxies, replaces it
    return trace;
}

bool RequestHandler::logging() const
{
    return log_ != nullptr && settings::log_requests != settings::log_off;
}

bool RequestHandler::tracing() const
{
    return logging() || settings::history || events_on();
}

bool RequestHandler::events_on() const
{
    return events_.on() && settings::event_buffer > 0;
}

void RequestHandler::log_answer(const Trace &logged, const HttpResponse &response,
                                const std::string &id)
{
    const long long duration_us =
        std::chrono::duration_cast<std::chrono::microseconds>(Trace::Clock::now() - logged.started)
            .count();
    // A call's record: the history's, and the run event GET /events streams.
    if ((settings::history || events_on()) && (!logged.query.empty() || logged.adhoc)) {
        CallRecord call;
        call.duration_us = duration_us;
        call.status = response.status;
        call.request_id = id;
        call.key = logged.key;
        call.policy = logged.policy;
        call.query = logged.query;
        call.adhoc = logged.adhoc;
        call.sql = logged.sql;
        call.revision = logged.revision;
        call.version = logged.version;
        call.code = response.error_code;
        call.client = logged.client;
        call.rows = logged.rows;
        call.bytes = response.file.present() ? response.file.size() : response.body.size();
        call.masked = logged.masked;
        call.params = logged.params;
        call.who = logged.who;
        recorder_.record(call);
    }
    // Probes that succeed are not logged: a load balancer's would fill the log.
    if (!logging() || !access_log::wanted(settings::log_requests, response.status) ||
        (response.status == 200 && is_probe(logged.path)))
        return;
    access_log::Record r;
    r.method = logged.method;
    r.path = logged.path;
    if (logged.adhoc)
        r.kind = metrics::kind_name(metrics::CallKind::sql);
    else if (!logged.query.empty())
        r.kind = metrics::kind_name(metrics::CallKind::query);
    r.query = logged.query;
    r.status = response.status;
    r.code = response.error_code;
    r.key = logged.key;
    r.policy = logged.policy;
    r.request_id = id;
    r.client = logged.client;
    r.reason = logged.refusal;
    r.duration_us = duration_us;
    access_log::format(r, settings::log_requests_format, log_line_);
    log_->write(log_line_);
}

const cors::Origins &RequestHandler::cors_origins()
{
    if (cors_generation_ != settings::generation) {
        cors_ = cors::parse(settings::cors_allowed_origins);
        cors_generation_ = settings::generation;
    }
    return cors_;
}

void RequestHandler::handle(const HttpRequest &request, HttpResponse &response)
{
    std::string id = request_id(request);
    start_response(response, id);
    const cors::Origins &origins = cors_origins();
    if (origins.enabled()) {
        const std::string *origin = request.header("origin");
        if (cors::is_preflight(request)) {
            cors::answer_preflight(origins, *origin, response);
            count(response);
            return; // asks for no call, and is not logged
        }
        cors::add_answer_headers(origins, origin ? *origin : std::string(), response);
    }
    const bool traced = tracing();
    Trace trace = traced ? start_trace(request) : Trace();
    Exchange ex{request, response, id, trace, traced, origins};
    route(ex);
    if (response.later != 0)
        return; // counted and recorded when it is finished
    count(response);
    if (traced)
        log_answer(trace, response, id);
}

void RequestHandler::route(Exchange &ex)
{
    const std::string &path = ex.request.path;
    // The server refuses these before they get here (message_syntax.hpp), where it still sees a
    // %00 that its decoded path would end at; a path given any other way is held to the same.
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            write_error(ex.response,
                        api_errors::make(error_code::invalid_path,
                                         "the path holds a control character: no path or "
                                         "query name has one"),
                        ex.id);
            return;
        }
    if (is_probe(path))
        probes_.handle_probe(ex);
    else if (path == "/metrics")
        probes_.handle_metrics(ex);
    else if (path == "/mcp")
        mcp_.handle(ex);
    else if (path == "/events")
        events_.handle(ex);
    else if (path == "/sql")
        sql_.handle(ex);
    else if (path == "/schema")
        schema_.handle(ex);
    else if (path == "/openapi.json" || path == "/catalog")
        describe_.handle(ex, path == "/openapi.json");
    else if (path.compare(0, 3, "/q/") == 0 && path.size() > 3 &&
             path.find('/', 3) == std::string::npos)
        query_.handle(ex, path.substr(3));
    else
        write_error(ex.response, api_errors::make(error_code::not_found, "no such endpoint"),
                    ex.id);
}

bool RequestHandler::finish(std::uint64_t token, CallResult &result, HttpResponse &response)
{
    std::optional<CallPath::Later> later = path_.take(token, result);
    if (!later)
        return false;
    start_response(response, later->request_id);
    if (const cors::Origins &origins = cors_origins(); origins.enabled())
        cors::add_answer_headers(origins, later->origin, response);
    if (later->tool.empty())
        query_.answer(result, later->shape, response, later->request_id, later->export_slot);
    else
        mcp_.answer_later(*later, result, response);
    count(response);
    if (tracing())
        log_answer(later->trace, response, later->request_id);
    return true;
}

void RequestHandler::start_response(HttpResponse &response, const std::string &id)
{
    response.add_header("X-Request-Id", id);
    response.add_header("Cache-Control", "no-store");
}
