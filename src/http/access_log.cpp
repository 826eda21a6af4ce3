// The access log's line: see access_log.hpp.
#include "http/access_log.hpp"

#include "common/chars.hpp"
#include "common/json_text.hpp"

#include <cstdio>

namespace access_log {

namespace {

// Bare in a text line: what names, ids, addresses and paths are made of. Anything else (a space,
// a quote, '=', a control character, a byte above ASCII) is written as a JSON string.
bool bare(std::string_view v)
{
    if (v.empty())
        return false;
    for (char c : v)
        if (!(chars::is_alnum(c) || c == '_' || c == '.' || c == '-' || c == ':' || c == '/'))
            return false;
    return true;
}

void text_field(std::string &out, std::string_view name, std::string_view value)
{
    if (value.empty())
        return;
    out.push_back(' ');
    out.append(name);
    out.push_back('=');
    if (bare(value))
        out.append(value);
    else
        json_text::append_string(out, value);
}

void json_field(std::string &out, std::string_view name, std::string_view value)
{
    if (value.empty())
        return;
    out.append(",\"");
    out.append(name);
    out.append("\":");
    json_text::append_string(out, value);
}

// Milliseconds with three decimals, from microseconds: "0.215".
void append_ms(std::string &out, long long us)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%lld.%03lld", us / 1000, us % 1000);
    out.append(buf);
}

} // namespace

void format(const Record &r, int format, std::string &out)
{
    out.clear();
    const long long us = r.duration_us < 0 ? 0 : r.duration_us;
    const std::string_view named[][2] = {{"method", r.method}, {"path", r.path},
                                         {"kind", r.kind},     {"query", r.query},
                                         {"code", r.code},     {"key", r.key},
                                         {"policy", r.policy}, {"request_id", r.request_id},
                                         {"client", r.client}, {"reason", r.reason}};
    const bool as_json = format == settings::log_json;
    out.append(as_json ? "{\"status\":" : "querygate request: status=");
    out.append(std::to_string(r.status));
    out.append(as_json ? ",\"duration_ms\":" : " duration_ms=");
    append_ms(out, us);
    for (const auto &field : named)
        (as_json ? json_field : text_field)(out, field[0], field[1]);
    if (as_json)
        out.push_back('}');
}

} // namespace access_log
