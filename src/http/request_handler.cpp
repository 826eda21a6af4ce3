// HTTP routing, request parsing and responses: see request_handler.hpp.
#include "http/request_handler.hpp"

#include "common/chars.hpp"
#include "http/answer_encoding.hpp"
#include "http/error_body.hpp"
#include "http/content_negotiation.hpp"
#include "http/openapi.hpp"
#include "http/json_body.hpp"
#include "common/json_text.hpp"
#include "http/limit_fields.hpp"
#include "http/paging_args.hpp"
#include "http/prometheus_text.hpp"
#include "common/settings.hpp"
#include "common/version.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <string_view>
#include <utility>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

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

// A JWT in compact form: three base64url parts. querygate keys never contain a dot.
bool looks_like_jwt(const std::string &token)
{
    return std::count(token.begin(), token.end(), '.') == 2;
}

// The token of "Authorization: Bearer <token>" (spaces after "Bearer" skipped); false when the
// request has no such header.
bool bearer_token(const HttpRequest &request, std::string &token)
{
    const std::string *auth = request.header("authorization");
    if (auth == nullptr || !chars::istarts_with(*auth, "bearer "))
        return false;
    const size_t start = auth->find_first_not_of(' ', 7);
    token = start == std::string::npos ? std::string() : auth->substr(start);
    return true;
}

// The credentials: X-API-Key, or "Authorization: Bearer <key or JWT>". When both headers are
// present, X-API-Key alone is judged.
void presented_credentials(const HttpRequest &request, CallRequest &call)
{
    if (const std::string *key = request.header("x-api-key")) {
        call.secret = *key;
        return;
    }
    std::string token;
    if (bearer_token(request, token))
        presented_token(token, call);
}

// A number of seconds as a caller writes a timeout ("10", "0.5", at most three decimals) in whole
// milliseconds, from 1 ms to what a timer takes; false for anything else.
bool parse_seconds(std::string_view text, long &ms)
{
    const std::size_t dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    const std::string_view fraction =
        dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    if (whole.empty() || whole.size() > 7 || fraction.size() > 3 ||
        (dot != std::string_view::npos && fraction.empty()))
        return false;
    long v = 0;
    for (char c : whole) {
        if (!chars::is_digit(c))
            return false;
        v = v * 10 + (c - '0');
    }
    long scale = 100, frac = 0;
    for (char c : fraction) {
        if (!chars::is_digit(c))
            return false;
        frac += (c - '0') * scale;
        scale /= 10;
    }
    v = v * 1000 + frac;
    if (v < 1 || v > INT32_MAX)
        return false;
    ms = v;
    return true;
}

ApiError invalid_timeout()
{
    return api_errors::make(error_code::invalid_timeout,
                            "timeout must be a number of seconds from 0.001 up (at most three "
                            "decimals); it can only shorten the call's time limit");
}

// The timeout of "Prefer: timeout=N" (RFC 7240: preferences separated by commas, each maybe with
// parameters after ';'), in milliseconds; 0 when none is asked for or its value is not one. A
// preference is a wish: one the server cannot read is ignored, not refused.
long prefer_timeout(const HttpRequest &request)
{
    std::string prefer;
    if (!request.header_list("prefer", prefer))
        return 0;
    std::string_view rest(prefer);
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        std::string_view pref = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        pref = pref.substr(0, pref.find(';'));
        const std::size_t eq = pref.find('=');
        if (eq == std::string_view::npos)
            continue;
        std::string_view name = pref.substr(0, eq), value = pref.substr(eq + 1);
        const auto trim = [](std::string_view &v) {
            while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
                v.remove_prefix(1);
            while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
                v.remove_suffix(1);
        };
        trim(name);
        trim(value);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        long ms = 0;
        if (name.size() == 7 && chars::istarts_with(std::string(name), "timeout") &&
            parse_seconds(value, ms))
            return ms;
    }
    return 0;
}

ApiError invalid_stream(const char *why)
{
    return api_errors::make(error_code::invalid_stream, why);
}

// Neither ?format= (or the body's "format") nor Accept names a format of ours: 406.
ApiError not_acceptable()
{
    return api_errors::make(error_code::not_acceptable, "the answer can be " +
                                                            content_negotiation::offered() +
                                                            " (?format=json, ndjson, csv or tsv)");
}

// Reads a POST body into the call. An empty body is a call without parameters (curl -X POST).
// format_given: set when the body names the format; paged, when it gives page or page_size.
ApiError read_json_body(const std::string &body, CallRequest &call, bool &format_given, bool &paged)
{
    if (body.find_first_not_of(" \t\r\n") == std::string::npos)
        return ApiError();
    json_body::Value root;
    std::string error;
    // Repeated names are kept: a repeated parameter is reported as the query string's is
    // (param_invalid, naming it); a repeated field below; inside a json or jsonb value, the
    // type's input function decides, as for any other client of PostgreSQL.
    if (!json_body::parse(body, root, error, json_body::Duplicates::keep))
        return api_errors::make(error_code::invalid_body, "the body is not valid JSON: " + error);
    if (root.kind != json_body::Value::Kind::object)
        return api_errors::make(error_code::invalid_body, "the body must be a JSON object");
    using Kind = json_body::Value::Kind;
    // params, page, page_size, format, timeout, stream
    bool seen[6] = {false, false, false, false, false, false};
    for (const auto &[field, value] : root.members) {
        const int known = field == "params"      ? 0
                          : field == "page"      ? 1
                          : field == "page_size" ? 2
                          : field == "format"    ? 3
                          : field == "timeout"   ? 4
                          : field == "stream"    ? 5
                                                 : -1;
        if (known >= 0 && seen[known]) {
            ApiError e = api_errors::make(error_code::invalid_body, "a field is given twice");
            e.errors.emplace_back(field, "is given more than once");
            return e;
        }
        if (known >= 0)
            seen[known] = true;
        if (field == "params") {
            if (value.kind != Kind::object)
                return api_errors::make(error_code::invalid_body,
                                        "\"params\" must be a JSON object");
            for (const auto &[name, v] : value.members) {
                // Every kind reaches the parameter's input function as text: numbers as written,
                // strings decoded, objects and arrays as JSON text; null is SQL NULL.
                CallParam p;
                p.name = name;
                p.is_null = v.kind == Kind::null;
                p.value = v.text;
                call.params.push_back(std::move(p));
            }
        } else if (paging_args::is_paging(field)) {
            if (ApiError e = paging_args::from_json(field, value, call); e.set())
                return e;
            paged = true;
        } else if (field == "stream") {
            if (value.kind != Kind::boolean)
                return invalid_stream("\"stream\" must be true or false");
            call.stream = value.text == "true";
        } else if (field == "format") {
            if (value.kind != Kind::string || !answer_format::by_name(value.text, call.format))
                return not_acceptable();
            format_given = true;
        } else if (field == "timeout") {
            if (value.kind != Kind::number || !parse_seconds(value.text, call.timeout_ms))
                return invalid_timeout();
        } else {
            ApiError e = api_errors::make(error_code::invalid_body, "unknown field in the body");
            e.errors.emplace_back(field, "unknown field; the body takes params, page, page_size, "
                                         "format, timeout and stream");
            return e;
        }
    }
    return ApiError();
}

// Reads the query string into the call: page, page_size, and every other argument a parameter.
// format_given: set when it names the format; paged, when it gives page or page_size.
ApiError read_query_string(const HttpRequest &request, CallRequest &call, bool &format_given,
                           bool &paged)
{
    for (const auto &arg : request.args) {
        if (paging_args::is_paging(arg.first)) {
            if (ApiError e = paging_args::from_text(arg.first, arg.second, call); e.set())
                return e;
            paged = true;
        } else if (arg.first == "stream") {
            if (arg.second != "true" && arg.second != "false")
                return invalid_stream("stream must be true or false");
            call.stream = arg.second == "true";
        } else if (arg.first == "format") {
            if (!answer_format::by_name(arg.second, call.format))
                return not_acceptable();
            format_given = true;
        } else if (arg.first == "timeout") {
            if (!parse_seconds(arg.second, call.timeout_ms))
                return invalid_timeout();
        } else {
            CallParam p;
            p.name = arg.first;
            p.value = arg.second;
            call.params.push_back(std::move(p));
        }
    }
    return ApiError();
}

} // namespace

// RFC 6750 (3): a refused bearer token's challenge, the description in the characters its
// grammar allows (%x20-21 / %x23-5B / %x5D-7E: no quote, backslash or control), others as "?".
std::string bearer_challenge(const std::string &description)
{
    std::string out = "Bearer error=\"invalid_token\", error_description=\"";
    for (const char c : description) {
        const auto u = static_cast<unsigned char>(c);
        out.push_back(u >= 0x20 && u <= 0x7E && c != '"' && c != '\\' ? c : '?');
    }
    out.push_back('"');
    return out;
}

bool is_probe(const std::string &path)
{
    return path == "/health" || path == "/live" || path == "/ready";
}

void write_error(HttpResponse &response, const ApiError &error, const std::string &request_id)
{
    response.status = error.status;
    response.error_code = error.code;
    response.content_type = "application/json";
    error_body::write(error, request_id, response.body);
    if (!error.allow.empty())
        response.add_header("Allow", error.allow);
    // A challenge goes with a 401 only (/mcp answers a refused key or token 403: mcp_endpoint).
    if (error.status == 401 && (error.code == error_code::invalid_token.code ||
                                error.code == error_code::token_expired.code))
        response.add_header("WWW-Authenticate", bearer_challenge(error.message));
    else if (error.status == 401)
        response.add_header("WWW-Authenticate", "Bearer");
}

RequestHandler::RequestHandler(QueryRunner &runner, CallHandOff *hand_off, access_log::Sink *log)
    : runner_(runner), hand_off_(hand_off), log_(log), id_state_(0)
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

std::string RequestHandler::client_ip(const HttpRequest &request)
{
    if (trusted_generation_ != settings::generation) {
        std::string bad; // entries that do not parse are ignored (they trust nobody)
        trusted_ = client_address::parse_list(
            settings::trusted_proxies ? settings::trusted_proxies : "", bad);
        trusted_generation_ = settings::generation;
    }
    // All lines, not the first: the client writes the first, a trusted proxy may append another.
    std::string forwarded_for;
    bool forwarded = request.header_list("x-forwarded-for", forwarded_for);
    return client_address::resolve(request.client_address, forwarded ? &forwarded_for : nullptr,
                                   trusted_);
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
        log_answer(start_log(request), response, id); // refused as it came: no time of ours
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
        log_answer(start_log(request), response, id); // refused as it came: no time of ours
}

void RequestHandler::count(const HttpResponse &response)
{
    counts_.answered++;
    counts_.errors += response.status >= 400;
}

RequestHandler::Logged RequestHandler::start_log(const HttpRequest &request)
{
    Logged logged;
    logged.started = Clock::now();
    logged.method = request.method;
    logged.path = request.path;
    logged.client = request.client_address; // a call's own, behind trusted proxies, replaces it
    return logged;
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
    return streams_ != nullptr && settings::event_buffer > 0;
}

void RequestHandler::note_result(Logged &logged, CallResult &result)
{
    logged.revision = result.revision;
    logged.version = result.version;
    logged.rows = result.error.set() ? 0 : result.rows;
    logged.masked = std::move(result.masked);
    logged.params = std::move(result.params);
    logged.who = result.who;
    logged.refusal = std::move(result.refusal);
}

void RequestHandler::log_answer(const Logged &logged, const HttpResponse &response,
                                const std::string &id)
{
    const long long duration_us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - logged.started)
            .count();
    // A call's record: the history's, and the run event GET /events streams.
    if ((settings::history || events_on()) && !logged.query.empty()) {
        CallRecord call;
        call.duration_us = duration_us;
        call.status = response.status;
        call.request_id = id;
        call.key = logged.key;
        call.policy = logged.policy;
        call.query = logged.query;
        call.revision = logged.revision;
        call.version = logged.version;
        call.code = response.error_code;
        call.client = logged.client;
        call.rows = logged.rows;
        call.bytes = response.file.present() ? response.file.size() : response.body.size();
        call.masked = logged.masked;
        call.params = logged.params;
        call.who = logged.who;
        runner_.record(call);
    }
    // Probes that succeed are not logged: a load balancer's would fill the log.
    if (!logging() || !access_log::wanted(settings::log_requests, response.status) ||
        (response.status == 200 && is_probe(logged.path)))
        return;
    access_log::Record r;
    r.method = logged.method;
    r.path = logged.path;
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
    if (const cors::Origins &origins = cors_origins(); origins.enabled()) {
        const std::string *origin = request.header("origin");
        if (cors::is_preflight(request)) {
            cors::answer_preflight(origins, *origin, response);
            count(response);
            return; // asks for no call, and is not logged
        }
        cors::add_answer_headers(origins, origin ? *origin : std::string(), response);
    }
    if (!tracing()) {
        Logged unused;
        route(request, response, id, unused);
        if (response.later == 0)
            count(response);
        return;
    }
    Logged logged = start_log(request);
    route(request, response, id, logged);
    if (response.later == 0) {
        count(response);
        log_answer(logged, response, id);
    }
}

void RequestHandler::route(const HttpRequest &request, HttpResponse &response,
                           const std::string &id, Logged &logged)
{
    const std::string &path = request.path;
    // The server refuses these before they get here (message_syntax.hpp), where it still sees a
    // %00 that its decoded path would end at; a path given any other way is held to the same.
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            write_error(response,
                        api_errors::make(error_code::invalid_path,
                                         "the path holds a control character: no path or "
                                         "query name has one"),
                        id);
            return;
        }
    if (is_probe(path)) {
        if (request.method != "GET" && request.method != "HEAD") {
            ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on " + path);
            e.allow = "GET, HEAD";
            write_error(response, e, id);
            return;
        }
        if (path == "/ready")
            handle_ready(response, id);
        else
            handle_health(response, path == "/live" ? "live" : "ok");
        return;
    }
    if (path == "/metrics") {
        handle_metrics(request, response, id);
        return;
    }
    if (path == "/mcp") {
        handle_mcp(request, response, id, logged);
        return;
    }
    if (path == "/events") {
        handle_events(request, response, id, logged);
        return;
    }
    if (path == "/openapi.json" || path == "/catalog") {
        handle_description(request, path == "/openapi.json", response, id);
        return;
    }
    if (path.compare(0, 3, "/q/") == 0 && path.size() > 3 &&
        path.find('/', 3) == std::string::npos) {
        handle_query(request, path.substr(3), response, id, logged);
        return;
    }
    write_error(response, api_errors::make(error_code::not_found, "no such endpoint"), id);
}

// /health and /live answer without touching SPI or the catalog: they say the worker's loop is
// alive.
void RequestHandler::handle_health(HttpResponse &response, const char *status)
{
    response.status = 200;
    response.body.assign("{\"status\":\"");
    response.body.append(status);
    response.body.append("\",\"version\":\"" QUERYGATE_VERSION_TEXT "\"}");
}

// /ready: a transaction starts and the catalog is loaded, so calls can be served.
void RequestHandler::handle_ready(HttpResponse &response, const std::string &id)
{
    QueryRunner::Role role;
    ApiError not_ready = runner_.ready(&role);
    if (not_ready.set()) {
        write_error(response, not_ready, id);
        return;
    }
    handle_health(response, "ready");
    // What a load balancer routes by: a primary takes writes; a standby answers reads, this far
    // behind (a check can match "role":"primary" in the body).
    response.body.pop_back();
    if (!role.standby) {
        response.body.append(",\"role\":\"primary\"}");
        return;
    }
    response.body.append(",\"role\":\"standby\",\"replay_lag_bytes\":")
        .append(std::to_string(role.replay_lag_bytes))
        .append(",\"replayed_ago_s\":");
    if (role.replayed_ago_s < 0) {
        response.body.append("null}");
    } else {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%.3f", role.replayed_ago_s);
        response.body.append(seconds).append("}");
    }
}

// /metrics: what every worker counted, in the Prometheus text format. Never public by default:
// with no token set it is an endpoint that does not exist, and a wrong or missing token hears
// what a wrong key does (401), compared in constant time.
void RequestHandler::handle_metrics(const HttpRequest &request, HttpResponse &response,
                                    const std::string &id)
{
    // Without an Authorization header the token is empty, which no line of the file is.
    std::string presented;
    bearer_token(request, presented);
    bool configured = false;
    const bool accepted = runner_.metrics_token_accepted(presented, configured);
    if (!configured) {
        write_error(response, api_errors::make(error_code::not_found, "no such endpoint"), id);
        return;
    }
    if (request.method != "GET" && request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on /metrics");
        e.allow = "GET, HEAD";
        write_error(response, e, id);
        return;
    }
    if (!accepted) {
        write_error(
            response,
            api_errors::make(error_code::unauthorized,
                             "a valid bearer token (querygate.metrics_token_file) is required"),
            id);
        return;
    }
    metrics::Snapshot snapshot;
    if (ApiError failed = runner_.metrics(snapshot); failed.set()) {
        write_error(response, failed, id);
        return;
    }
    response.status = 200;
    response.content_type = prometheus_text::content_type;
    prometheus_text::render(snapshot, response.body);
}

// GET /openapi.json and GET /catalog: what the caller's key or token may call, never more; without
// one, what a call without one hears (401).
void RequestHandler::handle_description(const HttpRequest &request, bool openapi_document,
                                        HttpResponse &response, const std::string &id)
{
    if (request.method != "GET" && request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on " + request.path);
        e.allow = "GET, HEAD";
        write_error(response, e, id);
        return;
    }
    CallRequest call;
    presented_credentials(request, call);
    call.client_ip = client_ip(request);
    call.request_id = id;
    LimitReport limits;
    if (call.secret.empty() && call.bearer_token.empty()) {
        ApiError limited = runner_.limit_anonymous(call.client_ip, limits);
        write_error(response, limited.set() ? limited : api_errors::unauthorized(), id);
        add_limit_headers(response, limits);
        return;
    }
    api_description::Api api;
    if (ApiError error = runner_.describe(call, api, limits); error.set()) {
        write_error(response, error, id);
        add_limit_headers(response, limits);
        return;
    }
    add_limit_headers(response, limits);
    response.status = 200;
    response.body = openapi_document ? openapi::document(api) : openapi::catalog(api);
}

CallRequest RequestHandler::start_call(const HttpRequest &request, const std::string &name,
                                       const std::string &id, Logged &logged)
{
    CallRequest call;
    call.query = name;
    presented_credentials(request, call);
    call.client_ip = client_ip(request);
    call.client_fd = request.socket_fd;
    call.request_id = id;
    call.page_size = std::min<long>(settings::default_page_size, settings::max_page_size);
    // Prefer: timeout=N; ?timeout= or the body's "timeout" win over it.
    call.timeout_ms = prefer_timeout(request);
    if (tracing()) {
        logged.query = name;
        logged.client = call.client_ip;
    }
    return call;
}

bool RequestHandler::refused_without_credentials(const CallRequest &call, HttpResponse &response,
                                                 const std::string &id, Logged &logged)
{
    if (!call.secret.empty() || !call.bearer_token.empty())
        return false;
    logged.refusal = "no key or token was sent";
    LimitReport report;
    ApiError limited = runner_.limit_anonymous(call.client_ip, report);
    write_error(response, limited.set() ? limited : api_errors::unauthorized(), id);
    add_limit_headers(response, report);
    return true;
}

void RequestHandler::handle_query(const HttpRequest &request, const std::string &name,
                                  HttpResponse &response, const std::string &id, Logged &logged)
{
    if (request.method != "GET" && request.method != "POST") {
        ApiError e =
            api_errors::make(error_code::method_not_allowed, "use GET or POST on /q/{name}");
        e.allow = "GET, POST";
        write_error(response, e, id);
        return;
    }
    CallRequest call = start_call(request, name, id, logged);
    call.safe_method = request.method == "GET";
    if (refused_without_credentials(call, response, id, logged))
        return;
    // The format: ?format= or the body's, which win over Accept; the timeout: ?timeout= or the
    // body's, which win over Prefer.
    bool format_given = false, paged = false;
    ApiError error = read_query_string(request, call, format_given, paged);
    if (!error.set() && request.method == "POST")
        error = read_json_body(request.body, call, format_given, paged);
    if (!error.set() && call.stream && paged)
        error = invalid_stream("a stream has every row: it takes no page or page_size");
    std::string accept;
    if (!error.set() && !format_given &&
        !content_negotiation::from_accept(request.header_list("accept", accept) ? &accept : nullptr,
                                          call.format))
        error = not_acceptable();
    if (error.set()) {
        write_error(response, error, id);
        return;
    }
    CallResult result = runner_.run(call, hand_off_ != nullptr);
    logged.key = std::move(result.key_name); // set by the runner while the log or history is on
    logged.policy = std::move(result.policy);
    if (result.for_helper &&
        elsewhere(later_for(request, call, id, logged, result), call, result, response))
        return;
    note_result(logged, result);
    answer_call(result, shape_of(request, call), response, id);
    give_back_when_sent(response, result.export_slot);
}

void RequestHandler::give_back_when_sent(HttpResponse &response, int export_slot)
{
    if (response.file.present())
        response.on_done = [this, export_slot] { runner_.release_export(export_slot); };
    else
        runner_.release_export(export_slot); // an error, or nothing to send: it is done
}

RequestHandler::Later RequestHandler::later_for(const HttpRequest &request, const CallRequest &call,
                                                const std::string &id, const Logged &logged,
                                                CallResult &result)
{
    const std::string *origin = request.header("origin");
    Later later{
        ++last_token_, shape_of(request, call),     id, origin ? *origin : std::string(), logged,
        result.limits, std::move(result.limit_hold)};
    later.file = std::move(result.file);
    later.export_slot = std::exchange(result.export_slot, -1);
    return later;
}

bool RequestHandler::elsewhere(Later waiting, CallRequest &call, CallResult &result,
                               HttpResponse &response)
{
    // Nothing may throw once the helper has the call: the room and the record come first. The
    // call keeps its place in its caller's in-flight count until its answer.
    // An export's rows go into the file this worker holds and sends.
    call.export_to = waiting.file.path_for_others();
    bool handed = false;
    try {
        later_.reserve(later_.size() + 1);
        call.limits_charged = true;
        handed = hand_off_->hand_off(waiting.token, call, result.share);
    } catch (...) {
        runner_.release(waiting.limit_hold); // not anyone's: it leaves the count
        runner_.release_export(waiting.export_slot);
        throw;
    }
    if (handed) {
        response.later = waiting.token;
        later_.push_back(std::move(waiting));
        return true;
    }
    // No helper free: this worker runs it, as a call of its own (an export takes its own file
    // and place).
    runner_.release_export(waiting.export_slot);
    waiting.file.reset();
    call.export_to.clear();
    result = runner_.run(call);
    runner_.release(waiting.limit_hold);
    result.limits = waiting.limits;
    return false;
}

void RequestHandler::add_limit_headers(HttpResponse &response, const LimitReport &report)
{
    const bool refused = response.status == 429;
    const int fields = settings::rate_limit_headers;
    if (report.present && fields == settings::limit_headers_legacy) {
        response.add_header("RateLimit-Limit", std::to_string(report.limit));
        response.add_header("RateLimit-Remaining", std::to_string(report.remaining));
        response.add_header("RateLimit-Reset", std::to_string(report.reset_seconds));
    } else if (report.present && (refused || fields == settings::limit_headers_draft)) {
        // querygate.rate_limit_headers = refused: only a refusal says where the caller stands.
        // The policy goes with a refusal, where the caller needs it to pace itself.
        response.add_header("RateLimit", limit_fields::ratelimit(report));
        if (refused)
            response.add_header("RateLimit-Policy", limit_fields::ratelimit_policy(report));
    }
    if (refused)
        response.add_header("Retry-After",
                            std::to_string(std::max(1LL, report.retry_after_seconds)));
}

RequestHandler::Shape RequestHandler::shape_of(const HttpRequest &request, const CallRequest &call)
{
    Shape shape{call.page, call.page_size, call.format};
    shape.name = call.query;
    std::string accept_encoding;
    shape.gzip = answer_encoding::accepts_gzip(
        request.header_list("accept-encoding", accept_encoding) ? &accept_encoding : nullptr);
    // Only a GET is conditional: a POST is a call that may write, and its answer is known only
    // once it ran, too late for a precondition to keep it from running.
    shape.conditional =
        request.method == "GET" && request.header_list("if-none-match", shape.if_none_match);
    return shape;
}

void RequestHandler::answer_call(CallResult &result, const Shape &shape, HttpResponse &response,
                                 const std::string &id)
{
    // The answer depends on Accept and Accept-Encoding as well as on the URL (a cache keeps one
    // per format and coding).
    response.add_header("Vary", "Accept, Accept-Encoding");
    if (result.error.set()) {
        write_error(response, result.error, id);
        add_limit_headers(response, result.limits);
        // Another worker, or this one restarted; an export's place, freed within a second or so.
        if (result.error.code == error_code::shutting_down.code ||
            result.error.code == error_code::too_many_exports.code)
            response.add_header("Retry-After", "1");
        return;
    }
    add_limit_headers(response, result.limits);
    response.status = 200;
    response.content_type = answer_format::of(shape.format).content_type;
    if (result.file.present()) {
        // An export: every row, sent from its file; a download, with a name.
        response.file = std::move(result.file);
        response.add_header("Content-Disposition", "attachment; filename=\"" + shape.name + "." +
                                                       answer_format::of(shape.format).name + "\"");
        return;
    }
    response.body = std::move(result.body);
    response.add_header("X-Page", std::to_string(shape.page));
    response.add_header("X-Page-Size", std::to_string(shape.page_size));
    response.add_header("X-Has-More", result.has_more ? "true" : "false");
    std::string tag = answer_encoding::etag(response.body);
    const bool unchanged =
        shape.conditional && answer_encoding::none_match(&shape.if_none_match, tag);
    response.add_header("ETag", std::move(tag));
    std::string compressed;
    if (shape.gzip && response.body.size() >= answer_encoding::gzip_threshold &&
        answer_encoding::gzip(response.body, compressed)) {
        response.body.swap(compressed);
        if (!unchanged)
            response.add_header("Content-Encoding", "gzip");
    }
    if (unchanged) {
        // The caller has this answer already: the head alone. libmicrohttpd sends no body after
        // a 304 but says the body's length, which is so the 200's, as RFC 9110 (15.4.5) allows;
        // no Content-Type or Content-Encoding, which describe a body.
        response.status = 304;
        response.content_type.clear();
    }
}

bool RequestHandler::finish(std::uint64_t token, CallResult &result, HttpResponse &response)
{
    const auto it = std::find_if(later_.begin(), later_.end(),
                                 [token](const Later &l) { return l.token == token; });
    if (it == later_.end())
        return false;
    Later later = std::move(*it);
    later_.erase(it);
    if (later.file.present() && !result.error.set()) {
        // An export the helper wrote: sent from this worker's file, charged by its length.
        result.file = FileBody(later.file.release(), result.written);
        runner_.charge_export(later.limit_hold, result.rows);
    }
    runner_.release(later.limit_hold);
    if (!result.error.set()) // a call that failed there says nothing of how long its query takes
        runner_.helper_ran(later.logged.query, result.revision, result.ran_us);
    result.limits = later.limits;
    start_response(response, later.request_id);
    if (const cors::Origins &origins = cors_origins(); origins.enabled())
        cors::add_answer_headers(origins, later.origin, response);
    note_result(later.logged, result);
    if (later.tool.empty()) {
        answer_call(result, later.shape, response, later.request_id);
        give_back_when_sent(response, later.export_slot);
    } else {
        response.status = 200; // as POST /mcp answers a tool call (mcp_endpoint.cpp)
        response.content_type = "application/json";
        if (tool_answer(result, later.rpc_id, response, later.request_id) == ToolOutcome::unknown)
            unknown_tool(response, later.rpc_id, later.tool);
    }
    count(response);
    if (tracing())
        log_answer(later.logged, response, later.request_id);
    return true;
}

void RequestHandler::start_response(HttpResponse &response, const std::string &id)
{
    response.add_header("X-Request-Id", id);
    response.add_header("Cache-Control", "no-store");
}

void presented_token(const std::string &token, CallRequest &call)
{
    (looks_like_jwt(token) ? call.bearer_token : call.secret) = token;
}
