// The keys of a JWKS document (RFC 7517) that can verify a token here: RSA keys of 2048 bits or
// more for RS256, P-256 keys for ES256. Read once, when a Verifier is configured (jwt.hpp). Pure
// C++: no PostgreSQL header.
#pragma once

#include "auth/jose.hpp"
#include "auth/jwt.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace jwt {

enum class Alg { hs256, rs256, es256 };
enum class Kty { rsa, ec };

// The length of each coordinate of a P-256 point, and of r and s in an ES256 signature.
inline constexpr std::size_t es256_coordinate = 32;

// One usable JWKS key: its kid (if it has one), its type, its alg (if the JWKS names one) and
// the public key itself.
struct Verifier::Keys {
    struct Key {
        bool has_kid = false;
        std::string kid;
        Kty kty;
        bool has_alg = false;
        Alg alg;
        PkeyPtr pkey;
    };
    std::vector<Key> keys;
};

// Reads a JWKS document into out. Keys that can never verify a token here are skipped (another
// kty or curve, "use" other than "sig", an alg other than RS256/ES256, key_ops without "verify"):
// an identity provider's JWKS often holds such keys beside the signing ones. A key of a supported
// type that is broken fails the whole document (false with a reason), so the mistake is seen when
// it is stored.
bool parse_jwks(const std::string &text, Verifier::Keys &out, std::string &error);

} // namespace jwt
