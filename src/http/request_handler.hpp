// Routes an HTTP request and turns it into a call, and a call's result into an HTTP response:
// GET /health, /live, /ready, /metrics, /openapi.json, /catalog, /events, GET|POST /q/{name},
// POST /mcp.
// Parameters come from the query string or a JSON body; paging options are validated here, before
// any transaction starts. Pure C++: no PostgreSQL header.
#pragma once

#include "http/access_log.hpp"
#include "http/cors.hpp"
#include "http/event_stream.hpp"
#include "http/http_types.hpp"
#include "http/json_body.hpp"
#include "common/client_address.hpp"
#include "call/query_runner.hpp"

#include <chrono>
#include <cstdint>

// Where a call the runner did not run goes (src/worker/call_helpers.hpp), within its caller's and
// policy's `share`: false when no helper can take it now, and the worker runs it itself.
class CallHandOff {
  public:
    virtual ~CallHandOff() = default;
    virtual bool hand_off(std::uint64_t token, const CallRequest &call, const PoolShare &share) = 0;
};

class RequestHandler {
  public:
    // Without a hand-off every call runs here. Answers are logged to `log` as
    // querygate.log_requests asks (none without a sink).
    explicit RequestHandler(QueryRunner &runner, CallHandOff *hand_off = nullptr,
                            access_log::Sink *log = nullptr);

    // A call handed off is answered later: the response comes back marked `later` with a token,
    // and finish() makes it from the helper's result.
    void handle(const HttpRequest &request, HttpResponse &response);
    // The worker's event streams, which GET /events opens (none: GET /events is 404).
    void set_event_streams(event_stream::Streams *streams) { streams_ = streams; }
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
    using Clock = std::chrono::steady_clock;
    // What the access log and the history say of a request besides its answer.
    struct Logged {
        std::string method;
        std::string path;
        std::string query; // the name called; empty when the request was not a call
        std::string key;
        std::string policy;
        std::string client;
        Clock::time_point started;
        long long revision = 0;
        int version = 0;
        unsigned long long rows = 0;
        std::string masked;
        std::string params;
        run_events::Who who;
        std::string refusal; // why the credentials were refused (the access log's reason)
    };

    std::string request_id(const HttpRequest &request);
    void route(const HttpRequest &request, HttpResponse &response, const std::string &id,
               Logged &logged);
    void handle_health(HttpResponse &response, const char *status);
    void handle_ready(HttpResponse &response, const std::string &id);
    // GET /metrics: 404 unless querygate.metrics_token_file names tokens, 401 without one of them.
    void handle_metrics(const HttpRequest &request, HttpResponse &response, const std::string &id);
    // GET /openapi.json (openapi_document) or GET /catalog.
    void handle_description(const HttpRequest &request, bool openapi_document,
                            HttpResponse &response, const std::string &id);
    // GET /events: a stream of run events (http/events_endpoint.cpp).
    void handle_events(const HttpRequest &request, HttpResponse &response, const std::string &id,
                       Logged &logged);
    // POST /mcp: the Model Context Protocol (http/mcp.hpp).
    void handle_mcp(const HttpRequest &request, HttpResponse &response, const std::string &id,
                    Logged &logged);
    // tools/call: the call a /q/{name} POST would make, answered as MCP says to the request
    // `rpc_id`: the tool's result or error (answered), a refusal HTTP says (refused), both made in
    // `response`; or a query the caller may not call (unknown: the caller answers the JSON-RPC
    // error).
    enum class ToolOutcome { answered, refused, unknown };
    ToolOutcome call_tool(const HttpRequest &request, const std::string &name,
                          const json_body::Value *args, const std::string &rpc_id,
                          HttpResponse &response, const std::string &id, Logged &logged);
    // A tool call's result as the tool's answer (an HTTP error for the caller's key, limits or the
    // server's state), and the answer for a tool the caller may not call.
    ToolOutcome tool_answer(CallResult &result, const std::string &rpc_id, HttpResponse &response,
                            const std::string &id);
    static void unknown_tool(HttpResponse &response, const std::string &rpc_id,
                             const std::string &name);
    void count(const HttpResponse &response);
    void handle_query(const HttpRequest &request, const std::string &name, HttpResponse &response,
                      const std::string &id, Logged &logged);
    // A call of query `name` by the request's caller, with the default page; named in its record.
    CallRequest start_call(const HttpRequest &request, const std::string &name,
                           const std::string &id, Logged &logged);
    // Without a key or token nothing else is looked at: the caller learns no more than 401 (or
    // 429, over querygate.anonymous_rate_limit). False when the call has credentials.
    bool refused_without_credentials(const CallRequest &call, HttpResponse &response,
                                     const std::string &id, Logged &logged);
    // Whether querygate.log_requests may want this request's line (it asks by status, known later).
    bool logging() const;
    // Whether anything keeps a record of this request: the access log, querygate.history or the
    // run events.
    bool tracing() const;
    // Whether calls make run events for GET /events (querygate.event_buffer, and a worker's
    // streams to serve them).
    bool events_on() const;
    // What the call's result says for its record.
    static void note_result(Logged &logged, CallResult &result);
    // The request's part of its line, its clock started now.
    static Logged start_log(const HttpRequest &request);
    // The answer is made: its line in the access log, and for a call its record in the history.
    void log_answer(const Logged &logged, const HttpResponse &response, const std::string &id);

    // The caller's address, behind querygate.trusted_proxies.
    std::string client_ip(const HttpRequest &request);
    // querygate.cors_allowed_origins, parsed when it changes.
    const cors::Origins &cors_origins();
    static void start_response(HttpResponse &response, const std::string &id);
    // Where a caller with a limit stands (http/limit_fields.hpp), as querygate.rate_limit_headers
    // says; Retry-After on a 429.
    static void add_limit_headers(HttpResponse &response, const LimitReport &report);
    // The paging a call's answer reports, its format, and how it may be sent
    // (http/answer_encoding.hpp).
    struct Shape {
        long page;
        long page_size;
        AnswerFormat format;
        bool gzip = false;         // Accept-Encoding allows it
        bool conditional = false;  // a GET with If-None-Match
        std::string if_none_match; // its value
        std::string name;          // the query's: an export's file name
    };
    // What the request says of its answer's shape.
    static Shape shape_of(const HttpRequest &request, const CallRequest &call);
    static void answer_call(CallResult &result, const Shape &shape, HttpResponse &response,
                            const std::string &id);

    // What a call handed off still needs for its answer.
    struct Later {
        std::uint64_t token;
        Shape shape;
        std::string request_id;
        std::string origin; // the request's Origin, for its CORS headers
        Logged logged;
        LimitReport limits;
        LimitHold limit_hold; // its place in its caller's in-flight count
        // An MCP tools/call's (http/mcp_endpoint.cpp): the JSON-RPC id and the tool, whose answer
        // is JSON-RPC's; empty for /q/{name}.
        std::string rpc_id;
        std::string tool;
        // An export's: the file the helper writes its rows into, and its place among the exports,
        // both this worker's until the answer is sent (or the call fails).
        FileBody file;
        int export_slot = -1;
    };
    Later later_for(const HttpRequest &request, const CallRequest &call, const std::string &id,
                    const Logged &logged, CallResult &result);
    // A call the runner left for a helper (result.for_helper): handed to one (true, with
    // response.later set), or run here when no helper can take it (false, result its answer).
    bool elsewhere(Later waiting, CallRequest &call, CallResult &result, HttpResponse &response);
    // An answer sent from an export's file gives its place back once sent, or its connection gone.
    void give_back_when_sent(HttpResponse &response, int export_slot);

    QueryRunner &runner_;
    CallHandOff *hand_off_;
    event_stream::Streams *streams_ = nullptr;
    access_log::Sink *log_;
    std::string log_line_; // reused: a line is made per request logged
    std::vector<Later> later_;
    Counts counts_;
    std::uint64_t last_token_ = 0;
    std::vector<client_address::Cidr> trusted_;
    unsigned long trusted_generation_ = 0;
    cors::Origins cors_;
    unsigned long cors_generation_ = 0;
    uint64_t id_state_; // request-id generator (xorshift, seeded from OpenSSL once)
};

// A bearer token as a call presents it: a JWT (three base64url parts), else a key.
void presented_token(const std::string &token, CallRequest &call);

// GET /health, /live and /ready: the probes, never logged when they succeed.
bool is_probe(const std::string &path);

// The error body {"error","code","request_id"[,"errors"]} with its status and headers.
void write_error(HttpResponse &response, const ApiError &error, const std::string &request_id);
