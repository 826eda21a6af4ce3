// The request handler (src/api/request_handler.hpp) over a database side without a database
// (test/fakes/fake_database.hpp): routes, what wraps every request, the call path's refusals and
// answers, and a call handed to a helper answered when its result is back.
#include "api/request_handler.hpp"
#include "fakes/fake_database.hpp"
#include "tap.hpp"

#include "common/settings.hpp"

#include <cstring>

using tap::is;
using tap::like;
using tap::ok;

namespace {

const std::string *header(const HttpResponse &r, const char *name)
{
    for (const auto &h : r.headers)
        if (std::strcmp(h.name, name) == 0)
            return &h.value;
    return nullptr;
}

std::string header_or_none(const HttpResponse &r, const char *name)
{
    const std::string *v = header(r, name);
    return v ? *v : "(none)";
}

HttpRequest request(const char *method, const char *path,
                    std::vector<std::pair<std::string, std::string>> headers = {})
{
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.headers = std::move(headers);
    r.client_address = "192.0.2.1";
    return r;
}

HttpResponse answer(RequestHandler &handler, const HttpRequest &r)
{
    HttpResponse response;
    handler.handle(r, response);
    return response;
}

// Calls of "slow" are left for a helper, as the database side leaves a write or a slow read.
class HandingCalls final : public services::Calls {
  public:
    CallResult run(const CallRequest &request, bool may_hand_off) override
    {
        if (request.query == "slow" && may_hand_off) {
            CallResult result;
            result.for_helper = true;
            return result;
        }
        return fake_database::instance().run(request, may_hand_off);
    }
    ApiError limit_anonymous(const std::string &a, LimitReport &r) override
    {
        return fake_database::instance().limit_anonymous(a, r);
    }
    void release(LimitHold &hold) override { released++, hold = LimitHold(); }
    void release_export(int) override {}
    void charge_export(const LimitHold &, unsigned long long) override {}
    void helper_ran(const std::string &query, long long, long long) override { ran = query; }
    int released = 0;
    std::string ran;
};

class Helpers final : public services::HandOff {
  public:
    bool hand_off(std::uint64_t t, const CallRequest &call, const PoolShare &) override
    {
        if (!free)
            return false;
        token = t;
        query = call.query;
        return true;
    }
    bool free = true;
    std::uint64_t token = 0;
    std::string query;
};

void routes(RequestHandler &handler)
{
    HttpResponse r = answer(handler, request("GET", "/health"));
    is(r.status, 200, "GET /health");
    like(r.body, "\"status\":\"ok\"", "its body says ok");
    ok(header(r, "X-Request-Id") != nullptr, "every answer has a request id");
    is(header_or_none(r, "Cache-Control"), std::string("no-store"), "and is not cached");
    r = answer(handler, request("GET", "/health", {{"x-request-id", "abc-1"}}));
    is(header_or_none(r, "X-Request-Id"), std::string("abc-1"), "a valid X-Request-Id is kept");
    r = answer(handler, request("GET", "/health", {{"x-request-id", "a b"}}));
    ok(header_or_none(r, "X-Request-Id") != "a b", "one with a space is not");
    r = answer(handler, request("POST", "/live"));
    is(r.status, 405, "POST on a probe: 405");
    is(header_or_none(r, "Allow"), std::string("GET, HEAD"), "with Allow");
    r = answer(handler, request("GET", "/ready"));
    like(r.body, "\"role\":\"primary\"", "/ready says the server's role");
    is(answer(handler, request("GET", "/nowhere")).status, 404, "an unknown path: 404");
    is(answer(handler, request("GET", "/q/a/b")).status, 404, "a query name with a slash: 404");
    is(answer(handler, request("GET", "/q/x\x01")).status, 400, "a control character: 400");
    is(answer(handler, request("DELETE", "/q/fixed")).status, 405, "DELETE on a query: 405");
}

void calls(RequestHandler &handler)
{
    HttpResponse r = answer(handler, request("GET", "/q/fixed"));
    is(r.status, 401, "a call without credentials: 401");
    is(header_or_none(r, "WWW-Authenticate"), std::string("Bearer"), "with a challenge");
    is(r.error_code, std::string("unauthorized"), "its code");
    r = answer(handler, request("GET", "/q/fixed", {{"x-api-key", "k"}}));
    is(r.status, 200, "with a key: 200");
    is(r.body, std::string("[{\"id\":1,\"name\":\"fixed\"}]"), "the rows");
    is(header_or_none(r, "X-Page"), std::string("1"), "the page");
    const std::string tag = header_or_none(r, "ETag");
    r = answer(handler, request("GET", "/q/fixed", {{"x-api-key", "k"}, {"if-none-match", tag}}));
    is(r.status, 304, "If-None-Match with its tag: 304");
    ok(r.content_type.empty(), "without a Content-Type");
    HttpRequest post = request("POST", "/q/fixed", {{"authorization", "Bearer k"}});
    post.body = "{\"params\":{\"id\":1},\"page_size\":5}";
    r = answer(handler, post);
    is(r.status, 200, "a POST with a body and a bearer key");
    is(fake_database::last.page_size, 5L, "its page size reached the call");
    is(fake_database::last.params.size(), std::size_t(1), "and its parameter");
    post.body = "{\"nope\":1}";
    r = answer(handler, post);
    is(r.status, 400, "an unknown field: 400");
    like(r.body, "\"nope\"", "naming it");
    r = answer(handler, request("GET", "/q/limited", {{"x-api-key", "k"}}));
    is(r.status, 429, "over a limit: 429");
    ok(header(r, "Retry-After") != nullptr && header(r, "RateLimit") != nullptr &&
           header(r, "RateLimit-Policy") != nullptr,
       "with Retry-After, RateLimit and RateLimit-Policy");
    r = answer(handler, request("GET", "/q/fixed", {{"x-api-key", "k"}, {"accept", "image/png"}}));
    is(r.status, 406, "a format not offered: 406");
}

void described(RequestHandler &handler)
{
    HttpResponse r = answer(handler, request("GET", "/openapi.json", {{"x-api-key", "k"}}));
    is(r.status, 200, "GET /openapi.json with a key");
    like(r.body, "\"/q/fixed\"", "names what the key may call");
    is(answer(handler, request("GET", "/catalog")).status, 401, "GET /catalog without one: 401");
    fake_database::metrics_token = nullptr;
    is(answer(handler, request("GET", "/metrics")).status, 404, "/metrics without tokens: 404");
    fake_database::metrics_token = "m";
    is(answer(handler, request("GET", "/metrics", {{"authorization", "Bearer x"}})).status, 401,
       "a wrong token: 401");
    r = answer(handler, request("GET", "/metrics", {{"authorization", "Bearer m"}}));
    is(r.status, 200, "the token: 200");
    like(r.body, "querygate_", "the Prometheus text");
    HttpRequest mcp = request("POST", "/mcp", {{"x-api-key", "k"}});
    mcp.body = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}";
    r = answer(handler, mcp);
    is(r.status, 200, "MCP tools/list");
    like(r.body, "\"name\":\"fixed\"", "lists the query as a tool");
    is(answer(handler, request("GET", "/events", {{"x-api-key", "k"}})).status, 404,
       "/events without a worker's streams: 404");
}

HttpRequest mcp_call(const char *key, const std::string &params)
{
    HttpRequest r = request("POST", "/mcp", {{"x-api-key", key}});
    r.body = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":" + params + "}";
    return r;
}

// GET /schema, and MCP's SQL tools, for the fake's key "adhoc" (whose policy takes SQL of its
// own) and another.
void sql_of_its_own(RequestHandler &handler)
{
    HttpResponse r = answer(handler, request("GET", "/schema"));
    // The fake refuses every third call without credentials by the address's limit.
    ok(r.status == 401 || r.status == 429, "GET /schema without a key: refused as a call is");
    r = answer(handler, request("GET", "/schema", {{"x-api-key", "k"}}));
    is(r.error_code, std::string("sql_not_allowed"), "a policy without SQL of its own: refused");
    r = answer(handler, request("POST", "/schema", {{"x-api-key", "adhoc"}}));
    is(r.status, 405, "POST /schema: 405");
    is(header_or_none(r, "Allow"), std::string("GET, HEAD"), "with Allow");
    r = answer(handler, request("GET", "/schema", {{"x-api-key", "adhoc"}}));
    is(r.status, 200, "GET /schema with the key");
    like(r.body, "\"ddl\":\"CREATE TABLE public.accounts (\\n    aid integer NOT NULL,",
         "the tables with their DDL");
    HttpRequest one = request("GET", "/schema", {{"x-api-key", "adhoc"}});
    one.args = {{"table", "Public.Accounts"}};
    is(answer(handler, one).status, 200, "?table= narrows it");
    one.args = {{"table", "secrets"}};
    is(answer(handler, one).error_code, std::string("name_not_allowed"), "to a table it may use");
    one.args = {{"table", ""}};
    is(answer(handler, one).error_code, std::string("name_not_allowed"), "an empty name: none");

    HttpRequest list = request("POST", "/mcp", {{"x-api-key", "adhoc"}});
    list.body = "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}";
    r = answer(handler, list);
    like(r.body, "\"name\":\"execute_sql\"", "tools/list: execute_sql for the key");
    like(r.body, "\"name\":\"describe_table\"", "and describe_table");
    list.headers = {{"x-api-key", "k"}};
    ok(answer(handler, list).body.find("execute_sql") == std::string::npos, "not for another");

    const int calls = fake_database::calls;
    r = answer(handler, mcp_call("adhoc", R"({"name":"execute_sql","arguments":{"sql":"SELECT 1",)"
                                          R"("params":{"a":1},"page_size":2}})"));
    like(r.body, "\"structuredContent\":{\"rows\":[{\"id\":1", "execute_sql answers rows");
    ok(fake_database::calls == calls + 1 && fake_database::last.sql == "SELECT 1" &&
           fake_database::last.query.empty() && fake_database::last.page_size == 2 &&
           fake_database::last.params.size() == 1,
       "run once, as POST /sql runs it");
    r = answer(handler, mcp_call("adhoc", R"({"name":"execute_sql","arguments":{"sql":" "}})"));
    like(r.body, "\"isError\":true", "a blank statement: the tool's error");
    like(r.body, "invalid_body", "as POST /sql's");
    r = answer(handler, mcp_call("adhoc", R"({"name":"execute_sql","arguments":{"sq":"x"}})"));
    like(r.body, "invalid_body", "an unknown argument too");
    r = answer(handler, mcp_call("adhoc", R"({"name":"list_tables"})"));
    like(r.body, "\"structuredContent\":{\"search_path\"", "list_tables answers the schema");
    ok(r.body.find("CREATE TABLE") == std::string::npos, "without the DDL");
    r = answer(handler,
               mcp_call("adhoc", R"({"name":"describe_table","arguments":{"table":"accounts"}})"));
    like(r.body, "CREATE TABLE public.accounts", "describe_table: with it");
    r = answer(handler,
               mcp_call("adhoc", R"({"name":"describe_table","arguments":{"table":"nosuch"}})"));
    like(r.body, "\"isError\":true", "a table not there: the tool's error");
    like(r.body, "name_not_allowed", "name_not_allowed");
    r = answer(handler, mcp_call("adhoc", R"({"name":"describe_table","arguments":{}})"));
    like(r.body, "invalid_body", "no table named");
    r = answer(handler, mcp_call("k", R"({"name":"execute_sql","arguments":{"sql":"SELECT 1"}})"));
    is(fake_database::last.query, std::string("execute_sql"),
       "another key's execute_sql: a call of a saved query of that name");
}

void handed_off()
{
    HandingCalls calls;
    Helpers helpers;
    FakeDatabase &db = fake_database::instance();
    RequestHandler handler(services::Database{calls, db, db, db, db, db}, &helpers);
    HttpResponse r = answer(handler, request("GET", "/q/slow", {{"x-api-key", "k"}}));
    ok(r.later != 0, "a call left for a helper is answered later");
    is(helpers.query, std::string("slow"), "the helper has it");
    is(handler.counts().answered, std::uint64_t(0), "not counted yet");
    CallResult result;
    result.body = "[]";
    HttpResponse later;
    ok(!handler.finish(r.later + 1, result, later), "no call waits under another token");
    ok(handler.finish(r.later, result, later), "its result comes back");
    is(later.status, 200, "answered 200");
    is(later.body, std::string("[]"), "with the helper's rows");
    ok(header(later, "X-Request-Id") != nullptr, "and the request's id");
    is(calls.released, 1, "its place in the in-flight count given back");
    is(calls.ran, std::string("slow"), "the query's time reported");
    is(handler.counts().answered, std::uint64_t(1), "counted once answered");
    helpers.free = false;
    r = answer(handler, request("GET", "/q/slow", {{"x-api-key", "k"}}));
    ok(r.later == 0 && r.status == 200, "no helper free: the worker runs it itself");
}

} // namespace

int main()
{
    RequestHandler handler(fake_database::instance());
    routes(handler);
    calls(handler);
    described(handler);
    sql_of_its_own(handler);
    handed_off();
    return tap::done();
}
