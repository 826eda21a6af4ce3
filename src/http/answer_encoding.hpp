// What an answer's body is sent as: its entity tag, for conditional requests (RFC 9110 §8.8.3,
// §13.1.2), and gzip when the caller takes it and the body is large enough to gain from it.
// Plain C++ (SHA-256 from auth/secrets, deflate from zlib).
//
// The tag is weak, W/"<32 hex digits>" (the first 128 bits of the SHA-256 of the body as made,
// before any compression): the gzip and the identity forms of an answer are the same data, and a
// weak tag may stand for both. If-None-Match is compared weakly, as RFC 9110 says it is.
#pragma once

#include <cstddef>
#include <string>

namespace answer_encoding {

// Bodies smaller than this go uncompressed: below a kilobyte, gzip's own header and the time it
// takes outweigh what it saves (nginx's gzip_min_length is 20 bytes; most CDNs use about 1 kB).
constexpr std::size_t gzip_threshold = 1024;

std::string etag(const std::string &body);

// Whether If-None-Match (its value, every line joined; null: none) names `etag` or is "*".
bool none_match(const std::string *if_none_match, const std::string &etag);

// Whether Accept-Encoding (null: none) allows gzip: named (or x-gzip) with a q above 0, or
// allowed by "*" when not named.
bool accepts_gzip(const std::string *accept_encoding);

// The gzip stream (RFC 1952) of `body` into `out`, at zlib's level 1 (the fastest: an answer is
// made once and sent once); false when zlib fails, and then the body goes as it is.
bool gzip(const std::string &body, std::string &out);

} // namespace answer_encoding
