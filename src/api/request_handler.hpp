// The HTTP API's front: routes a request to its endpoint (GET /health, /live, /ready, /metrics,
// /openapi.json, /catalog, /events, /schema, GET|POST /q/{name}, POST /sql, POST /mcp), and does
// what wraps every request: its id, CORS, the worker's counts, and its record (the access log, the
// run history and the run events). The endpoints are api/*_endpoint(s).hpp; what they ask of the
// database side is api/services.hpp. Plain C++: no PostgreSQL header.
#pragma once

#include "api/call_path.hpp"
#include "api/describe_endpoint.hpp"
#include "api/events_endpoint.hpp"
#include "api/exchange.hpp"
#include "api/mcp_endpoint.hpp"
#include "api/probe_endpoints.hpp"
#include "api/query_endpoint.hpp"
#include "api/schema_endpoint.hpp"
#include "api/services.hpp"
#include "api/sql_endpoint.hpp"
#include "http/access_log.hpp"
#include "http/cors.hpp"
#include "http/event_stream.hpp"
#include "http/http_types.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>

class RequestHandler {
  public:
    // Without a hand-off every call runs here. Answers are logged to `log` as
    // querygate.log_requests asks (none without a sink).
    RequestHandler(const services::Database &database, services::HandOff *hand_off = nullptr,
                   access_log::Sink *log = nullptr);
    // A database side that implements every interface (call/query_runner.hpp).
    template <typename Db, typename = std::enable_if_t<std::is_base_of_v<services::Calls, Db>>>
    explicit RequestHandler(Db &db, services::HandOff *hand_off = nullptr,
                            access_log::Sink *log = nullptr)
        : RequestHandler(services::Database{db, db, db, db, db, db}, hand_off, log)
    {
    }

    // A call handed off is answered later: the response comes back marked `later` with a token,
    // and finish() makes it from the helper's result.
    void handle(const HttpRequest &request, HttpResponse &response);
    // The worker's event streams, which GET /events opens (none: GET /events is 404).
    void set_event_streams(event_stream::Streams *streams) { events_.set_streams(streams); }
    // The answer of the call handed off under `token`; false when no call waits under it.
    bool finish(std::uint64_t token, CallResult &result, HttpResponse &response);
    // A request refused before it was read whole (413), or by libmicrohttpd itself (431, 400,
    // 505 ...: own_answers.hpp): the same JSON error shape.
    void refuse(const HttpRequest &request, int status, HttpResponse &response);
    // A connection refused as it is accepted (503 too_many_connections, Retry-After: 1): over
    // querygate.max_connections_per_ip (per_address) or querygate.max_connections.
    void refuse_connection(bool per_address, HttpResponse &response);
    // A request that waited `waited` for its worker, past what querygate.overload_target allows:
    // 503 overloaded with Retry-After, before anything of it was looked at but its line.
    void refuse_overloaded(const HttpRequest &request, std::chrono::microseconds waited,
                           HttpResponse &response);

    // Requests answered so far (a call handed off counts when finished), and of those, answered
    // with a status of 400 or more: the worker's totals in querygate.stat_workers.
    struct Counts {
        std::uint64_t answered = 0;
        std::uint64_t errors = 0;
    };
    const Counts &counts() const { return counts_; }

  private:
    std::string request_id(const HttpRequest &request);
    void route(Exchange &ex);
    void count(const HttpResponse &response);
    // Whether querygate.log_requests may want this request's line (it asks by status, known later).
    bool logging() const;
    // Whether anything keeps a record of this request: the access log, querygate.history or the
    // run events.
    bool tracing() const;
    // Whether calls make run events for GET /events (querygate.event_buffer, and a worker's
    // streams to serve them).
    bool events_on() const;
    // The request's part of its trace, its clock started now.
    static Trace start_trace(const HttpRequest &request);
    // The answer is made: its line in the access log, and for a call its record in the history.
    void log_answer(const Trace &trace, const HttpResponse &response, const std::string &id);
    // querygate.cors_allowed_origins, parsed when it changes.
    const cors::Origins &cors_origins();
    static void start_response(HttpResponse &response, const std::string &id);

    services::Recorder &recorder_;
    CallPath path_;
    QueryEndpoint query_;
    SqlEndpoint sql_;
    SchemaEndpoint schema_;
    McpEndpoint mcp_;
    EventsEndpoint events_;
    DescribeEndpoint describe_;
    ProbeEndpoints probes_;
    access_log::Sink *log_;
    std::string log_line_; // reused: a line is made per request logged
    Counts counts_;
    cors::Origins cors_;
    unsigned long cors_generation_ = 0;
    uint64_t id_state_; // request-id generator (xorshift, seeded from OpenSSL once)
};
