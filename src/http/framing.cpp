// Body framing checks: see framing.hpp.
#include "http/framing.hpp"

#include "common/chars.hpp"

#include <string>
#include <vector>

namespace framing {

namespace {

// The value's comma-separated items, trimmed and lower-cased; empty items dropped (RFC 9110 5.6.1).
std::vector<std::string> codings(const std::string &value)
{
    std::vector<std::string> out;
    std::string item;
    auto flush = [&] {
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
            item.pop_back();
        if (!item.empty())
            out.push_back(item);
        item.clear();
    };
    for (char c : value) {
        if (c == ',')
            flush();
        else if (!(item.empty() && (c == ' ' || c == '\t')))
            item.push_back(chars::to_lower(c));
    }
    flush();
    return out;
}

} // namespace

int refusal(const HttpRequest &request)
{
    int lengths = 0, encodings = 0;
    const std::string *encoding = nullptr;
    for (const auto &h : request.headers) {
        if (h.first == "content-length")
            lengths++;
        else if (h.first == "transfer-encoding") {
            encodings++;
            encoding = &h.second;
        }
    }
    if (lengths > 1 || encodings > 1 || (lengths > 0 && encodings > 0))
        return 400;
    if (encoding == nullptr)
        return 0;
    const std::vector<std::string> list = codings(*encoding);
    if (list.empty() || list.back() != "chunked")
        return 400;
    return list.size() == 1 ? 0 : 501;
}

} // namespace framing
