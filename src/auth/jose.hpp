// What a compact JWS (jwt.cpp) and a JWKS (jwks.cpp) are both read with: strict base64url, JSON
// parsed with jansson refusing duplicate member names, and owners for jansson's values and
// OpenSSL's keys. Pure C++: no PostgreSQL header.
#pragma once

#include <jansson.h>
#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

namespace jwt {

// Decodes unpadded base64url strictly: no padding, no whitespace, nothing outside the alphabet, a
// length that some byte string encodes to, and zero unused bits in the last character (so each
// byte string has exactly one accepted encoding).
bool base64url_decode(std::string_view in, std::string &out);

struct JsonDeleter {
    void operator()(json_t *j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

// Parses a JSON text; duplicate member names are refused (which of two "exp" counts would
// otherwise depend on the parser), and so is \u0000 (jansson's default).
JsonPtr parse_json(std::string_view text);

// The member's string, or nullptr when the member is missing or not a string.
inline const char *string_member(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(obj, name));
}

struct PkeyDeleter {
    void operator()(EVP_PKEY *p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

} // namespace jwt
