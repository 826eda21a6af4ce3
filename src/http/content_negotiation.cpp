// Content negotiation: see content_negotiation.hpp.
#include "http/content_negotiation.hpp"

#include "common/chars.hpp"

#include <cstdlib>
#include <string_view>

namespace content_negotiation {

namespace {

// A qvalue: "0", "1", or "0." with up to three digits, "1." with zeros (RFC 9110 12.4.2), in
// thousandths; -1 when it is not one.
int qvalue(std::string_view v)
{
    if (v.empty() || v.size() > 5 || (v[0] != '0' && v[0] != '1'))
        return -1;
    int q = (v[0] - '0') * 1000;
    if (v.size() == 1)
        return q;
    if (v[1] != '.')
        return -1;
    int scale = 100;
    for (std::size_t i = 2; i < v.size(); i++, scale /= 10) {
        if (!chars::is_digit(v[i]))
            return -1;
        q += (v[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

// How specifically `range` ("type/subtype", "type/*" or "*/*") matches `media_type`: 3 exactly,
// 2 by its type, 1 by "*/*", 0 not at all.
int specificity(std::string_view range, std::string_view media_type)
{
    const std::size_t slash = range.find('/');
    if (slash == std::string_view::npos)
        return 0;
    const std::string_view type = range.substr(0, slash), subtype = range.substr(slash + 1);
    const std::string_view want_type = media_type.substr(0, media_type.find('/'));
    if (type == "*")
        return subtype == "*" ? 1 : 0;
    if (!chars::iequals(type, want_type))
        return 0;
    if (subtype == "*")
        return 2;
    return chars::iequals(range, media_type) ? 3 : 0;
}

} // namespace

bool from_accept(const std::string *accept, AnswerFormat &out)
{
    if (accept == nullptr || chars::trim_ows(*accept).empty()) {
        out = AnswerFormat::json;
        return true;
    }
    constexpr std::size_t n = std::size(answer_format::all);
    int quality[n], how[n];
    std::size_t position[n];
    for (std::size_t f = 0; f < n; f++) {
        quality[f] = -1; // no range matches it: not acceptable
        how[f] = 0;
        position[f] = 0;
    }
    std::string_view rest(*accept);
    for (std::size_t at = 0; !rest.empty(); at++) {
        const std::size_t comma = rest.find(',');
        std::string_view element = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const std::size_t semi = element.find(';');
        const std::string_view range = chars::trim_ows(element.substr(0, semi));
        if (range.empty())
            continue;
        int q = 1000;
        for (std::string_view params = semi == std::string_view::npos ? std::string_view()
                                                                      : element.substr(semi + 1);
             !params.empty();) {
            const std::size_t next = params.find(';');
            const std::string_view param = chars::trim_ows(params.substr(0, next));
            params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
            if (param.size() >= 2 && chars::to_lower(param[0]) == 'q' && param[1] == '=') {
                q = qvalue(chars::trim_ows(param.substr(2)));
                break; // what follows q are accept-extensions
            }
        }
        if (q < 0)
            continue; // a malformed range is ignored, as if it were not there
        for (std::size_t f = 0; f < n; f++) {
            const int s = specificity(range, answer_format::all[f].media_type);
            if (s > how[f]) {
                how[f] = s;
                quality[f] = q;
                position[f] = at;
            }
        }
    }
    int best = -1;
    for (std::size_t f = 0; f < n; f++) {
        if (quality[f] <= 0)
            continue;
        if (best < 0 || quality[f] > quality[best] ||
            (quality[f] == quality[best] && position[f] < position[best]))
            best = static_cast<int>(f);
    }
    if (best < 0)
        return false;
    out = answer_format::all[best].format;
    return true;
}

std::string offered()
{
    std::string out;
    for (const auto &e : answer_format::all) {
        if (!out.empty())
            out += ", ";
        out += e.media_type;
    }
    return out;
}

} // namespace content_negotiation
