// Fuzzes request handling without a server (src/api/request_handler): routing, credentials,
// request ids, X-Forwarded-For behind querygate.trusted_proxies, paging options, the query string
// and the JSON body, and every error body, with a fake database side (fake_database.cpp) that
// returns a fixed result. The request is derived from the input with FuzzedDataProvider:
//   from the end: max_page_size (3 bytes), a mode byte (0 mod 16: the request is refused as too
//   large, as libmicrohttpd does), the method (0 to 6 a usual one, 7 one from the input), the
//   number of headers (0 to 8);
//   from the start, each a FuzzedDataProvider string (ended by a backslash and another byte, "\\"
//   for a backslash): [the method,] the path, the query string ("a=1&b=2", split as libmicrohttpd
//   does, not decoded), the peer's address, trusted_proxies, then each header "name: value";
//   the rest is the body.
// Oracles: the status is one of the API's, the body is a JSON object (parsed back with json_body)
// and an error body has "error", "code" (with that code's status), "request_id" and maybe
// "errors"; X-Request-Id is there once, is the caller's when that one is valid, and no response
// header holds CR, LF or NUL; 405 has Allow, 401 WWW-Authenticate, 429 Retry-After and the
// RateLimit headers (the fake refuses /q/limited and every third call without credentials); the
// runner is called only for GET or POST /q/{name} (a path without a control character) with a
// credential, with paging inside its limits, and its page is answered with X-Page, X-Page-Size and
// X-Has-More; GET /events opens a stream, HEAD /events answers a head of unknown length and opens
// none (and nothing else is of unknown length). One known finding is tolerated
// (below). The access log is on (querygate.log_requests and its format from the mode byte): every
// line is one line (no CR, LF or NUL), and a JSON one is an object whose "status" is the answer's.
#include "http/answer_encoding.hpp"
#include "http/cors.hpp"
#include "http/json_body.hpp"
#include "api/request_handler.hpp"

#include "common/settings.hpp"
#include "fakes/fake_database.hpp"
#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

using Kind = json_body::Value::Kind;

const char *const methods[] = {"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"};

bool valid_request_id(const std::string &id)
{
    if (id.empty() || id.size() > 64)
        return false;
    for (unsigned char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    return true;
}

// The status every code of src/common/api_error.hpp is answered with.
int status_of(const std::string &code)
{
    for (const ErrorCode &c : error_code::all)
        if (code == c.code)
            return c.status;
    return 0;
}

int header_count(const HttpResponse &r, const char *name)
{
    int n = 0;
    for (const auto &h : r.headers)
        n += std::strcmp(h.name, name) == 0;
    return n;
}

const std::string *response_header(const HttpResponse &r, const char *name)
{
    for (const auto &h : r.headers)
        if (std::strcmp(h.name, name) == 0)
            return &h.value;
    return nullptr;
}

const json_body::Value *member(const json_body::Value &v, const char *name)
{
    for (const auto &m : v.members)
        if (m.first == name)
            return &m.second;
    return nullptr;
}

// A path with a control character is 400 invalid_path, never a call (http/message_syntax.hpp).
bool has_control(const std::string &path)
{
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            return true;
    return false;
}

bool whole_number_in(const std::string &text, long lo, long hi)
{
    if (text.empty() || text.size() > 12)
        return false;
    long v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    return v >= lo && v <= hi;
}

// The token GET /metrics is given, when the input sets one.
const char metrics_token[] = "fuzz-token";

// A 200 from /metrics: only with the token, and in the text format, every line a comment or a
// sample, every sample's family announced first.
void check_metrics(const HttpRequest &request, const HttpResponse &response)
{
    FUZZ_CHECK(fake_database::metrics_token != nullptr);
    FUZZ_CHECK(request.method == "GET" || request.method == "HEAD");
    const std::string *auth = request.header("authorization");
    FUZZ_CHECK(auth != nullptr && auth->size() > 7 &&
               auth->substr(auth->size() - 10) == "fuzz-token");
    FUZZ_CHECK(response.content_type.compare(0, 24, "text/plain; version=0.0.") == 0);
    const std::string &b = response.body;
    FUZZ_CHECK(!b.empty() && b.back() == '\n');
    std::string family;
    for (size_t start = 0; start < b.size();) {
        const size_t end = b.find('\n', start);
        const std::string line = b.substr(start, end - start);
        start = end + 1;
        FUZZ_CHECK(!line.empty());
        if (line.compare(0, 7, "# TYPE ") == 0) {
            family = line.substr(7, line.find(' ', 7) - 7);
            continue;
        }
        if (line[0] == '#') {
            FUZZ_CHECK(line.compare(0, 7, "# HELP ") == 0);
            continue;
        }
        FUZZ_CHECK(!family.empty() && line.compare(0, family.size(), family) == 0);
        FUZZ_CHECK(line.find(' ') != std::string::npos);
    }
}

// GET /openapi.json, /catalog and /schema with a key: the document of what the key may call (the
// fake runner describes one query) or use in SQL of its own, never anything without one.
void check_description(const HttpRequest &request, const HttpResponse &response)
{
    FUZZ_CHECK(request.method == "GET" || request.method == "HEAD");
    FUZZ_CHECK(request.header("x-api-key") != nullptr || request.header("authorization"));
    FUZZ_CHECK(response.content_type == "application/json");
    json_body::Value doc;
    std::string error;
    FUZZ_CHECK(json_body::parse(response.body, doc, error) && doc.kind == Kind::object);
    if (request.path == "/openapi.json") {
        const json_body::Value *version = member(doc, "openapi");
        FUZZ_CHECK(version != nullptr && version->text == "3.1.0");
    } else if (request.path == "/schema") {
        FUZZ_CHECK(member(doc, "tables") != nullptr);
    } else {
        FUZZ_CHECK(member(doc, "queries") != nullptr);
    }
}

// POST /mcp: true when the answer was judged here. A notification or a response is taken with
// 202 and no body; a request is answered 200 with one JSON-RPC response carrying its result or
// its error, and a message that cannot be read 400 with JSON-RPC's error; any other refusal
// (the method, the origin, the protocol version, the caller's key or limits) is the usual error
// body, which the caller judges.
bool check_mcp(const HttpRequest &request, const HttpResponse &response, int calls_before)
{
    if (response.status == 202) {
        FUZZ_CHECK(request.method == "POST" && response.body.empty());
        FUZZ_CHECK(fake_database::calls == calls_before);
        return true;
    }
    const bool unreadable = response.status == 400 && response.error_code == "invalid_message";
    if (response.status != 200 && !unreadable)
        return false;
    FUZZ_CHECK(request.method == "POST");
    FUZZ_CHECK(response.content_type == "application/json");
    json_body::Value rpc;
    std::string error;
    FUZZ_CHECK(json_body::parse(response.body, rpc, error) && rpc.kind == Kind::object);
    const json_body::Value *version = member(rpc, "jsonrpc");
    FUZZ_CHECK(version != nullptr && version->kind == Kind::string && version->text == "2.0");
    const json_body::Value *id = member(rpc, "id");
    FUZZ_CHECK(id != nullptr && (id->kind == Kind::number || id->kind == Kind::string ||
                                 (unreadable && id->kind == Kind::null)));
    const json_body::Value *result = member(rpc, "result");
    const json_body::Value *rpc_error = member(rpc, "error");
    FUZZ_CHECK((result != nullptr) != (rpc_error != nullptr) && rpc.members.size() == 3);
    FUZZ_CHECK(!unreadable || rpc_error != nullptr);
    if (rpc_error != nullptr) {
        const json_body::Value *code = member(*rpc_error, "code");
        FUZZ_CHECK(code != nullptr && code->kind == Kind::number);
    }
    // The runner runs a tools/call with credentials only, never more than once.
    const int calls = fake_database::calls - calls_before;
    FUZZ_CHECK(calls <= 1);
    if (calls == 1)
        FUZZ_CHECK(request.header("x-api-key") != nullptr || request.header("authorization"));
    return true;
}

void check_response(const HttpRequest &request, const HttpResponse &response, bool refused,
                    int calls_before)
{
    static const int statuses[] = {200, 202, 204, 304, 400, 401, 403, 404,
                                   405, 406, 413, 429, 500, 503, 504};
    bool known = false;
    for (int s : statuses)
        known = known || response.status == s;
    FUZZ_CHECK(known);
    // CORS: a preflight is answered 204 with no body, and only with the setting on; an answer to
    // an origin on the list lets it read, with its own origin or "*".
    const cors::Origins origins = cors::parse(settings::cors_allowed_origins);
    const std::string *origin = request.header("origin");
    if (response.status == 204) {
        FUZZ_CHECK(!refused && origins.enabled() && cors::is_preflight(request));
        FUZZ_CHECK(response.body.empty());
        return;
    }
    const std::string *allow = response_header(response, "Access-Control-Allow-Origin");
    if (allow != nullptr)
        FUZZ_CHECK(origin != nullptr && cors::allowed(origins, *origin) &&
                   (*allow == "*" || *allow == *origin));
    else if (!refused && origin != nullptr && origins.enabled())
        FUZZ_CHECK(!cors::allowed(origins, *origin));
    if (!refused && request.path == "/metrics" && response.status == 200) {
        check_metrics(request, response);
        return;
    }
    if (!refused &&
        (request.path == "/openapi.json" || request.path == "/catalog" ||
         request.path == "/schema") &&
        response.status == 200) {
        check_description(request, response);
        return;
    }
    if (!refused && request.path == "/mcp" && check_mcp(request, response, calls_before))
        return;
    // An event stream: its body is the stream's (read in LLVMFuzzerTestOneInput).
    // A HEAD of it: the head alone, no stream, no length.
    if (!refused && request.path == "/events" && response.status == 200) {
        FUZZ_CHECK(response.content_type == "text/event-stream" && response.body.empty());
        FUZZ_CHECK(request.method == "HEAD" ? response.length_unknown && !response.stream
                                            : !response.length_unknown && response.stream);
        return;
    }
    bool runner_called = fake_database::calls != calls_before;
    // 304: a GET call whose If-None-Match names the answer's tag, sent without a body.
    if (response.status == 304) {
        std::string if_none_match;
        FUZZ_CHECK(!refused && runner_called && request.method == "GET" &&
                   request.header_list("if-none-match", if_none_match));
        const std::string *tag = response_header(response, "ETag");
        FUZZ_CHECK(tag != nullptr && answer_encoding::none_match(&if_none_match, *tag));
        FUZZ_CHECK(response.body.empty());
        return;
    }
    // A call's rows come in its format (the fake database's body is JSON whatever it is asked);
    // everything else, errors above all, is JSON.
    const AnswerFormat format =
        runner_called && response.status == 200 ? fake_database::last.format : AnswerFormat::json;
    FUZZ_CHECK(response.content_type == answer_format::of(format).content_type);
    for (const auto &h : response.headers)
        FUZZ_CHECK(h.value.find_first_of(std::string("\r\n\0", 3)) == std::string::npos);

    // The request id: the caller's when valid, else one of ours (16 hex digits).
    FUZZ_CHECK(header_count(response, "X-Request-Id") == 1);
    const std::string &id = *response_header(response, "X-Request-Id");
    FUZZ_CHECK(valid_request_id(id));
    const std::string *given = request.header("x-request-id");
    if (given != nullptr && valid_request_id(*given))
        FUZZ_CHECK(id == *given);
    else
        FUZZ_CHECK(id.size() == 16 &&
                   id.find_first_not_of("0123456789abcdef") == std::string::npos);

    json_body::Value body;
    std::string error;
    FUZZ_CHECK(json_body::parse(response.body, body, error));
    FUZZ_CHECK(body.kind == Kind::object || (response.status == 200 && body.kind == Kind::array));

    FUZZ_CHECK(fake_database::calls - calls_before <= 1);
    const std::string &path = request.path;
    bool query_path =
        path.size() > 3 && path.compare(0, 3, "/q/") == 0 && path.find('/', 3) == std::string::npos;
    FUZZ_CHECK(!response.length_unknown); // only a HEAD of /events
    if (runner_called) {
        // A call of /q/{name} or POST /sql, or an MCP tools/call refused by the caller's key or
        // limits.
        FUZZ_CHECK(!refused && (query_path || path == "/sql" || path == "/mcp"));
        FUZZ_CHECK(!has_control(path));
        FUZZ_CHECK(request.method == "GET" || request.method == "POST");
        const CallRequest &call = fake_database::last;
        FUZZ_CHECK(!query_path || call.query == path.substr(3));
        FUZZ_CHECK(!call.secret.empty() || !call.bearer_token.empty());
        FUZZ_CHECK(call.page >= 1 && call.page <= 1000000000L);
        FUZZ_CHECK(call.page_size >= 1 && call.page_size <= settings::max_page_size);
        FUZZ_CHECK(call.request_id == id);
        FUZZ_CHECK(request.header("x-api-key") != nullptr || request.header("authorization"));
        // Paging and format options never reach the runner as parameters of the query string.
        if (request.method == "GET")
            for (const CallParam &p : call.params)
                FUZZ_CHECK(p.name != "page" && p.name != "page_size" && p.name != "format");
        // The last ?format= of a GET is the call's format, whatever Accept says.
        bool named = false;
        AnswerFormat last = AnswerFormat::json;
        for (const auto &arg : request.args)
            if (arg.first == "format")
                named = answer_format::by_name(arg.second, last);
        if (request.method == "GET" && named)
            FUZZ_CHECK(call.format == last);
    }

    if (response.status == 200) {
        FUZZ_CHECK(!refused);
        if (is_probe(path)) {
            FUZZ_CHECK(request.method == "GET" || request.method == "HEAD");
            const json_body::Value *status = member(body, "status");
            const char *expected = path == "/health" ? "ok" : path == "/live" ? "live" : "ready";
            FUZZ_CHECK(status != nullptr && status->kind == Kind::string &&
                       status->text == expected);
            return;
        }
        FUZZ_CHECK(runner_called && fake_database::last.query != "invalid" &&
                   fake_database::last.query != "limited");
        const std::string *page = response_header(response, "X-Page");
        const std::string *size = response_header(response, "X-Page-Size");
        const std::string *more = response_header(response, "X-Has-More");
        FUZZ_CHECK(page != nullptr && whole_number_in(*page, 1, 1000000000L));
        FUZZ_CHECK(size != nullptr && whole_number_in(*size, 1, settings::max_page_size));
        FUZZ_CHECK(more != nullptr && (*more == "true" || *more == "false"));
        return;
    }

    // An error: {"error","code","request_id"[,"errors"]}, nothing else.
    FUZZ_CHECK(body.kind == Kind::object);
    const json_body::Value *message = member(body, "error");
    const json_body::Value *code = member(body, "code");
    const json_body::Value *rid = member(body, "request_id");
    const json_body::Value *errors = member(body, "errors");
    FUZZ_CHECK(message != nullptr && message->kind == Kind::string && !message->text.empty());
    FUZZ_CHECK(code != nullptr && code->kind == Kind::string);
    FUZZ_CHECK(rid != nullptr && rid->kind == Kind::string && rid->text == id);
    FUZZ_CHECK(body.members.size() == (errors != nullptr ? 4u : 3u));
    if (errors != nullptr) {
        FUZZ_CHECK(errors->kind == Kind::object && !errors->members.empty());
        for (const auto &e : errors->members)
            FUZZ_CHECK(e.second.kind == Kind::string);
    }
    FUZZ_CHECK(status_of(code->text) == response.status);
    FUZZ_CHECK((header_count(response, "Allow") == 1) == (response.status == 405));
    FUZZ_CHECK((header_count(response, "WWW-Authenticate") == 1) == (response.status == 401));
    // A refusal over a limit says when to come back, and what the limit is.
    FUZZ_CHECK((header_count(response, "Retry-After") == 1) == (response.status == 429));
    // The IETF draft's fields (querygate.rate_limit_headers = draft), never the earlier three.
    FUZZ_CHECK(header_count(response, "RateLimit") == (response.status == 429 ? 1 : 0));
    FUZZ_CHECK(header_count(response, "RateLimit-Policy") == (response.status == 429 ? 1 : 0));
    FUZZ_CHECK(header_count(response, "RateLimit-Limit") == 0);
    if (refused)
        FUZZ_CHECK(code->text == "payload_too_large");
    // The fake database refuses two queries, each with its own code (fake_database.cpp).
    if (runner_called)
        FUZZ_CHECK((fake_database::last.query == "invalid" && code->text == "param_invalid") ||
                   (fake_database::last.query == "limited" && code->text == "quota_exceeded"));
}

// Keeps the access log's lines; check_log judges them after the answer.
class KeptLog final : public access_log::Sink {
  public:
    std::vector<std::string> lines;
    void write(const std::string &line) noexcept override { lines.push_back(line); }
};

// One line exactly when the level asks for the answer's status (a probe that succeeds is never
// logged), one line each, and saying that status.
void check_log(const KeptLog &log, const HttpRequest &request, const HttpResponse &response)
{
    const bool expected = access_log::wanted(settings::log_requests, response.status) &&
                          !(response.status == 200 && is_probe(request.path));
    FUZZ_CHECK(log.lines.size() == (expected ? 1u : 0u));
    if (!expected)
        return;
    const std::string &line = log.lines[0];
    FUZZ_CHECK(line.find_first_of(std::string("\r\n\0", 3)) == std::string::npos);
    if (settings::log_requests_format == settings::log_json) {
        json_body::Value root;
        std::string error;
        FUZZ_CHECK(json_body::parse(line, root, error, json_body::Duplicates::refuse));
        FUZZ_CHECK(root.kind == Kind::object);
        const json_body::Value *status = member(root, "status");
        FUZZ_CHECK(status != nullptr && status->text == std::to_string(response.status));
    } else {
        FUZZ_CHECK(line.rfind("querygate request: status=" + std::to_string(response.status), 0) ==
                   0);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static KeptLog log;
    static RequestHandler handler(fake_database::instance(), nullptr, &log);
    static event_stream::Streams streams;
    handler.set_event_streams(&streams);
    static std::string trusted;

    FuzzedDataProvider in(data, size);
    settings::max_page_size = in.ConsumeIntegralInRange<int>(1, 1000000);
    const int mode = in.ConsumeIntegralInRange<int>(0, 15);
    bool refused = mode == 0;
    settings::log_requests = mode % 3;
    settings::log_requests_format = (mode / 3) % 2;
    fake_database::metrics_token = mode % 2 == 0 ? metrics_token : nullptr;
    settings::history = mode >= 8;
    settings::event_buffer = mode % 5 == 2 ? 0 : 8;
    static char listed[] = "https://app.example, http://localhost:3000/";
    static char any[] = "*";
    settings::cors_allowed_origins = mode % 4 == 1 ? listed : mode % 4 == 3 ? any : nullptr;
    int method = in.ConsumeIntegralInRange<int>(0, 7);
    int headers = in.ConsumeIntegralInRange<int>(0, 8);

    HttpRequest request;
    request.method = method < 7 ? methods[method] : in.ConsumeRandomLengthString(16);
    request.path = in.ConsumeRandomLengthString(256);
    std::string query = in.ConsumeRandomLengthString(1024);
    for (size_t start = 0; !query.empty() && start <= query.size();) {
        size_t amp = query.find('&', start);
        std::string arg = query.substr(start, amp == std::string::npos ? amp : amp - start);
        size_t eq = arg.find('=');
        if (!arg.empty())
            request.args.emplace_back(arg.substr(0, eq),
                                      eq == std::string::npos ? std::string() : arg.substr(eq + 1));
        if (amp == std::string::npos)
            break;
        start = amp + 1;
    }
    request.client_address = in.ConsumeRandomLengthString(64);
    // A new trusted_proxies, as after a reload: the handler re-reads it when the generation moves.
    trusted = in.ConsumeRandomLengthString(256);
    settings::trusted_proxies = trusted.data();
    settings::generation++;
    for (int i = 0; i < headers; i++) {
        std::string line = in.ConsumeRandomLengthString(512);
        size_t colon = line.find(':');
        std::string name = line.substr(0, colon);
        for (char &c : name)
            if (c >= 'A' && c <= 'Z')
                c = static_cast<char>(c - 'A' + 'a');
        std::string value;
        if (colon != std::string::npos) {
            size_t start = line.find_first_not_of(" \t", colon + 1);
            if (start != std::string::npos)
                value = line.substr(start);
        }
        request.headers.emplace_back(std::move(name), std::move(value));
    }
    request.body = in.ConsumeRemainingBytesAsString();

    int calls_before = fake_database::calls;
    const RequestHandler::Counts counts_before = handler.counts();
    const int recorded_before = fake_database::recorded;
    HttpResponse response;
    log.lines.clear();
    if (refused)
        handler.refuse(request, 413, response);
    else
        handler.handle(request, response);
    check_response(request, response, refused, calls_before);
    // Every answer is counted once, as an error when its status is 400 or more.
    FUZZ_CHECK(handler.counts().answered == counts_before.answered + 1);
    FUZZ_CHECK(handler.counts().errors == counts_before.errors + (response.status >= 400 ? 1 : 0));
    // The history keeps a record of every call of a query (GET or POST /q/{name}) and of
    // nothing else, with its answer's status.
    const std::string &path = request.path;
    const bool call = !refused && path.size() > 3 && path.compare(0, 3, "/q/") == 0 &&
                      path.find('/', 3) == std::string::npos && !has_control(path) &&
                      (request.method == "GET" || request.method == "POST");
    // (A record is also made while events are on: GET /events shows calls.) A tools/call of
    // POST /mcp may make one too.
    const bool recording = settings::history || settings::event_buffer > 0;
    if (request.path != "/mcp")
        FUZZ_CHECK(fake_database::recorded - recorded_before == (recording && call ? 1 : 0));
    if (recording && call)
        FUZZ_CHECK(fake_database::last_record_status == response.status);
    // GET /events: a stream exactly when it opened (200, text/event-stream), counted; its place
    // given back once its connection is gone.
    const bool opened =
        !refused && request.path == "/events" && response.status == 200 && request.method != "HEAD";
    FUZZ_CHECK(static_cast<bool>(response.stream) == opened);
    if (opened) {
        FUZZ_CHECK(response.content_type == "text/event-stream");
        FUZZ_CHECK(settings::event_buffer > 0 && fake_database::streams >= 1);
        char first[64];
        const long n = response.stream->read(first, sizeof(first));
        FUZZ_CHECK(n > 0 &&
                   std::string(first, static_cast<std::size_t>(n)).rfind("retry: ", 0) == 0);
        response.stream->closed();
    }
    streams.sweep([](const std::string &) { fake_database::streams--; });
    FUZZ_CHECK(streams.size() == 0 && fake_database::streams == 0);
    check_log(log, request, response);
    return 0;
}
