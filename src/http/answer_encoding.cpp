// Entity tags and gzip: see answer_encoding.hpp.
#include "http/answer_encoding.hpp"

#include "auth/secrets.hpp"
#include "common/chars.hpp"

#include <zlib.h>

#include <climits>
#include <string_view>

namespace answer_encoding {

namespace {

// Calls fn(element) for each comma-separated element of a header's value, trimmed.
template <typename Fn> void each_element(std::string_view value, Fn &&fn)
{
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        const std::string_view element = chars::trim_ows(value.substr(0, comma));
        value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
        if (!element.empty())
            fn(element);
    }
}

// The q of a coding's parameters ("q=0.5"): 1 when absent, 0 for anything that is not a q or
// says 0.
bool q_above_zero(std::string_view params)
{
    while (!params.empty()) {
        const std::size_t semi = params.find(';');
        const std::string_view p = chars::trim_ows(params.substr(0, semi));
        params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
        if (p.size() >= 2 && chars::to_lower(p[0]) == 'q' && p[1] == '=') {
            const std::string_view q = chars::trim_ows(p.substr(2));
            for (char c : q)
                if (c >= '1' && c <= '9')
                    return true; // 0.001 and up, or 1
            return false;
        }
    }
    return true;
}

} // namespace

std::string etag(const std::string &body)
{
    unsigned char digest[secrets::sha256_length];
    secrets::sha256(body.data(), body.size(), digest);
    char hex[2 * 16 + 1];
    secrets::to_hex(digest, 16, hex);
    std::string tag = "W/\"";
    tag += hex;
    tag += '"';
    return tag;
}

bool none_match(const std::string *if_none_match, const std::string &tag)
{
    if (if_none_match == nullptr)
        return false;
    // Weak comparison: the opaque tags alike, with or without W/.
    const std::string_view mine = std::string_view(tag).substr(2);
    bool matched = false;
    each_element(*if_none_match, [&](std::string_view element) {
        if (element == "*")
            matched = true;
        if (element.size() >= 2 && element.substr(0, 2) == "W/")
            element.remove_prefix(2);
        matched = matched || element == mine;
    });
    return matched;
}

bool accepts_gzip(const std::string *accept_encoding)
{
    if (accept_encoding == nullptr)
        return false;
    int gzip = -1, any = -1; // -1: not named; 0: refused; 1: accepted
    each_element(*accept_encoding, [&](std::string_view element) {
        const std::size_t semi = element.find(';');
        const std::string_view coding = chars::trim_ows(element.substr(0, semi));
        const int ok = q_above_zero(semi == std::string_view::npos ? std::string_view()
                                                                   : element.substr(semi));
        if (chars::iequals(coding, "gzip") || chars::iequals(coding, "x-gzip"))
            gzip = ok;
        else if (coding == "*")
            any = ok;
    });
    return gzip == 1 || (gzip == -1 && any == 1);
}

bool gzip(const std::string &body, std::string &out)
{
    if (body.size() > UINT_MAX)
        return false;
    z_stream z{};
    // 15 + 16: a gzip header and trailer around the deflate stream; 8: zlib's default memory.
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    bool ok = false;
    try {
        out.resize(deflateBound(&z, static_cast<uLong>(body.size())));
        z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(body.data()));
        z.avail_in = static_cast<uInt>(body.size());
        z.next_out = reinterpret_cast<Bytef *>(out.data());
        z.avail_out = static_cast<uInt>(out.size());
        ok = deflate(&z, Z_FINISH) == Z_STREAM_END;
        if (ok)
            out.resize(z.total_out);
    } catch (...) { // no memory for the output: sent as it is
        ok = false;
    }
    deflateEnd(&z);
    return ok;
}

} // namespace answer_encoding
