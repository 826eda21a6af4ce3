// Tests of src/http/access_log.hpp: which statuses each level logs, the text line (bare values,
// JSON strings for anything a caller could use to forge a field or end the line, fields left out
// when empty) and the JSON line (an object a parser reads back).
#include "http/access_log.hpp"
#include "http/json_body.hpp"
#include "tap.hpp"

#include <string>

namespace {

using tap::is;
using tap::like;
using tap::ok;

access_log::Record call()
{
    access_log::Record r;
    r.method = "GET";
    r.path = "/q/account";
    r.kind = "query";
    r.query = "account";
    r.status = 200;
    r.key = "bench_plain";
    r.policy = "plain";
    r.request_id = "0123456789abcdef";
    r.client = "127.0.0.1";
    r.duration_us = 1234;
    return r;
}

void levels()
{
    ok(!access_log::wanted(settings::log_off, 500), "off logs nothing");
    ok(!access_log::wanted(settings::log_errors, 200), "errors: not a 200");
    ok(!access_log::wanted(settings::log_errors, 399), "nor a 399");
    ok(access_log::wanted(settings::log_errors, 400), "a 400");
    ok(access_log::wanted(settings::log_errors, 503), "a 503");
    ok(access_log::wanted(settings::log_all, 200), "all: a 200 too");
}

void text_line()
{
    std::string line;
    access_log::format(call(), settings::log_text, line);
    is(line,
       std::string("querygate request: status=200 duration_ms=1.234 method=GET path=/q/account "
                   "kind=query query=account key=bench_plain policy=plain "
                   "request_id=0123456789abcdef client=127.0.0.1"),
       "a call: every field, bare");

    access_log::Record sql = call();
    sql.method = "POST";
    sql.path = "/sql";
    sql.kind = "sql";
    sql.query = "";
    access_log::format(sql, settings::log_text, line);
    is(line,
       std::string("querygate request: status=200 duration_ms=1.234 method=POST path=/sql kind=sql "
                   "key=bench_plain policy=plain request_id=0123456789abcdef client=127.0.0.1"),
       "SQL: its kind, and no query");

    access_log::Record r = call();
    r.status = 401;
    r.code = "unauthorized";
    r.key = r.policy = "";
    r.duration_us = 7;
    access_log::format(r, settings::log_text, line);
    is(line,
       std::string("querygate request: status=401 duration_ms=0.007 method=GET path=/q/account "
                   "kind=query query=account code=unauthorized request_id=0123456789abcdef "
                   "client=127.0.0.1"),
       "a refused key: the code, and no key or policy");

    r = call();
    r.path = "/q/a b\nquerygate request: status=200 key=admin";
    r.query = "a b\nx";
    r.method = "GE\"T";
    access_log::format(r, settings::log_text, line);
    ok(line.find('\n') == std::string::npos, "a path with a line feed stays on one line");
    like(line, "path=\"/q/a b\\nquerygate request: status=200 key=admin\"",
         "it is written as a JSON string, so it forges no field");
    like(line, "method=\"GE\\\"T\"", "a quote in a value is escaped");

    r = call();
    r.path = "/q/\xff";
    access_log::format(r, settings::log_text, line);
    like(line, "path=\"/q/\\ufffd\"", "an invalid byte becomes U+FFFD");

    r = call();
    r.duration_us = 61234567;
    access_log::format(r, settings::log_text, line);
    like(line, "duration_ms=61234.567 ", "milliseconds with three decimals");
}

void json_line()
{
    std::string line;
    access_log::Record r = call();
    r.status = 404;
    r.code = "query_not_found";
    r.path = "/q/x\ty\"";
    access_log::format(r, settings::log_json, line);
    json_body::Value root;
    std::string error;
    ok(json_body::parse(line, root, error, json_body::Duplicates::refuse), "the JSON line parses");
    ok(root.kind == json_body::Value::Kind::object, "as an object");
    std::string got;
    for (const auto &m : root.members)
        got += m.first + "=" + m.second.text + ";";
    is(got,
       std::string(
           "status=404;duration_ms=1.234;method=GET;path=/q/x\ty\";kind=query;query=account;"
           "code=query_not_found;key=bench_plain;policy=plain;request_id=0123456789abcdef;"
           "client=127.0.0.1;"),
       "with every field, as given");
    r.code = r.key = r.policy = "";
    access_log::format(r, settings::log_json, line);
    ok(line.find("\"code\"") == std::string::npos && line.find("\"key\"") == std::string::npos,
       "an empty field is left out");
}

} // namespace

int main()
{
    levels();
    text_line();
    json_line();
    return tap::done();
}
