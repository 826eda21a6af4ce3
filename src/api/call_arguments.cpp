// A call's arguments as a request gives them: see call_arguments.hpp.
#include "api/call_arguments.hpp"

#include "common/answer_format.hpp"
#include "common/chars.hpp"
#include "http/content_negotiation.hpp"
#include "http/json_body.hpp"
#include "http/paging_args.hpp"

#include <climits>
#include <cstdint>
#include <string_view>
#include <utility>

namespace call_arguments {

namespace {

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

} // namespace

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
        name = chars::trim_ows(name);
        value = chars::trim_ows(value);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        long ms = 0;
        if (name.size() == 7 && chars::istarts_with(std::string(name), "timeout") &&
            parse_seconds(value, ms))
            return ms;
    }
    return 0;
}

CallParam param_of(const std::string &name, const json_body::Value &value)
{
    CallParam p;
    p.name = name;
    p.is_null = value.kind == json_body::Value::Kind::null;
    p.value = value.text;
    return p;
}

ApiError invalid_stream(const char *why)
{
    return api_errors::make(error_code::invalid_stream, why);
}

ApiError not_acceptable()
{
    return api_errors::make(error_code::not_acceptable, "the answer can be " +
                                                            content_negotiation::offered() +
                                                            " (?format=json, ndjson, csv or tsv)");
}

ApiError from_json_body(const std::string &body, CallRequest &call, bool &format_given, bool &paged,
                        bool takes_sql)
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
    // params, page, page_size, format, timeout, stream, sql
    bool seen[7] = {false, false, false, false, false, false, false};
    for (const auto &[field, value] : root.members) {
        const int known = field == "params"             ? 0
                          : field == "page"             ? 1
                          : field == "page_size"        ? 2
                          : field == "format"           ? 3
                          : field == "timeout"          ? 4
                          : field == "stream"           ? 5
                          : field == "sql" && takes_sql ? 6
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
            for (const auto &[name, v] : value.members)
                call.params.push_back(param_of(name, v));
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
        } else if (known == 6) {
            if (value.kind != Kind::string)
                return api_errors::make(error_code::invalid_body,
                                        "\"sql\" must be a JSON string: the statement");
            call.sql = value.text;
        } else {
            ApiError e = api_errors::make(error_code::invalid_body, "unknown field in the body");
            e.errors.emplace_back(field, takes_sql ? "unknown field; the body takes sql, params, "
                                                     "page, page_size, format, timeout and stream"
                                                   : "unknown field; the body takes params, page, "
                                                     "page_size, format, timeout and stream");
            return e;
        }
    }
    return ApiError();
}

ApiError from_query_string(const HttpRequest &request, CallRequest &call, bool &format_given,
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

ApiError from_request(const HttpRequest &request, CallRequest &call, bool takes_sql)
{
    bool format_given = false, paged = false;
    ApiError error = from_query_string(request, call, format_given, paged);
    if (!error.set() && request.method == "POST")
        error = from_json_body(request.body, call, format_given, paged, takes_sql);
    if (!error.set() && call.stream && paged)
        error = invalid_stream("a stream has every row: it takes no page or page_size");
    std::string accept;
    if (!error.set() && !format_given &&
        !content_negotiation::from_accept(request.header_list("accept", accept) ? &accept : nullptr,
                                          call.format))
        error = not_acceptable();
    return error;
}

} // namespace call_arguments
