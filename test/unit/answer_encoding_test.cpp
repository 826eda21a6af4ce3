// Entity tags, If-None-Match, Accept-Encoding and gzip (src/http/answer_encoding.hpp).
#include "http/answer_encoding.hpp"
#include "tap.hpp"

#include <zlib.h>

#include <string>

using tap::is;
using tap::ok;

namespace {

// zlib's inflate of a gzip stream, or "(not gzip)".
std::string gunzip(const std::string &in)
{
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return "(not gzip)";
    std::string out(in.size() * 20 + 64, '\0');
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef *>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    out.resize(z.total_out);
    inflateEnd(&z);
    return rc == Z_STREAM_END ? out : "(not gzip)";
}

bool gzip_ok(const char *accept_encoding)
{
    const std::string v = accept_encoding;
    return answer_encoding::accepts_gzip(&v);
}

} // namespace

int main()
{
    const std::string tag = answer_encoding::etag("[{\"id\":1}]");
    is(tag.size(), std::size_t(2 + 1 + 32 + 1), "W/\"<32 hex>\"");
    is(tag.substr(0, 3), std::string("W/\""), "a weak tag");
    ok(tag != answer_encoding::etag("[{\"id\":2}]"), "another body, another tag");
    is(tag, answer_encoding::etag("[{\"id\":1}]"), "the same body, the same tag");
    ok(answer_encoding::etag("") != tag, "the empty body has a tag too");

    const auto matches = [&tag](const char *inm) {
        const std::string v = inm;
        return answer_encoding::none_match(&v, tag);
    };
    ok(!answer_encoding::none_match(nullptr, tag), "no If-None-Match: no match");
    ok(matches(tag.c_str()), "the tag itself");
    ok(matches(tag.substr(2).c_str()), "without W/ (weak comparison)");
    ok(matches(("W/\"x\", " + tag).c_str()), "in a list");
    ok(matches(("W/\"x\",W/\"y\" ,  " + tag + " ").c_str()), "in a list with odd spaces");
    ok(matches("*"), "\"*\"");
    ok(!matches("W/\"x\""), "another tag");
    ok(!matches(""), "an empty value");
    ok(!matches(tag.substr(0, tag.size() - 2).c_str()), "a prefix of the tag");

    ok(!answer_encoding::accepts_gzip(nullptr), "no Accept-Encoding: identity");
    ok(gzip_ok("gzip"), "gzip");
    ok(gzip_ok("deflate, gzip;q=0.8"), "gzip among others");
    ok(gzip_ok("GZip"), "any case");
    ok(gzip_ok("x-gzip"), "x-gzip");
    ok(!gzip_ok("gzip;q=0"), "gzip;q=0 refuses it");
    ok(!gzip_ok("gzip;q=0.000"), "gzip;q=0.000 too");
    ok(gzip_ok("gzip;q=0.001"), "the smallest q accepts it");
    ok(gzip_ok("*"), "* allows it");
    ok(!gzip_ok("*;q=0"), "*;q=0 does not");
    ok(!gzip_ok("gzip;q=0, *"), "named at 0 wins over *");
    ok(gzip_ok("*;q=0, gzip"), "named wins over * at 0");
    ok(!gzip_ok("identity, br"), "only others");
    ok(!gzip_ok("gzipx"), "not a coding that starts like it");

    std::string body;
    for (int i = 0; i < 2000; i++)
        body += "{\"id\":" + std::to_string(i) + ",\"label\":\"row number " + std::to_string(i) +
                "\"},";
    std::string gz;
    ok(answer_encoding::gzip(body, gz), "gzip of 70 kB");
    ok(gz.size() < body.size() / 4, "is much smaller");
    ok(static_cast<unsigned char>(gz[0]) == 0x1f && static_cast<unsigned char>(gz[1]) == 0x8b,
       "is a gzip stream (magic bytes)");
    is(gunzip(gz), body, "and inflates to the body");
    std::string empty_gz;
    ok(answer_encoding::gzip("", empty_gz) && gunzip(empty_gz).empty(), "the empty body");
    std::string binary(4096, '\0');
    for (std::size_t i = 0; i < binary.size(); i++)
        binary[i] = static_cast<char>((i * 7919) & 0xff);
    std::string binary_gz;
    ok(answer_encoding::gzip(binary, binary_gz) && gunzip(binary_gz) == binary,
       "bytes that do not compress come back too");
    return tap::done();
}
