// JSON Web Token verification for bearer tokens: HS256 with a shared secret, RS256 and ES256 with
// the keys of a JWKS document. OpenSSL does the cryptography, jansson the JSON. Pure C++: no
// PostgreSQL header.
//
// Refused, whatever the configuration: alg "none"; an alg whose family does not match the key
// that verifies it (an HS256 token is never checked against a JWKS public key, which is the
// classic algorithm-confusion attack); a missing or past exp; nbf or iat in the future beyond the
// leeway; a wrong iss or aud when those are configured; malformed base64url or JSON.
#pragma once

#include "auth/secrets.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jwt {

// The reason verify() gives for a token past its exp (and its leeway): the one failure a caller
// can mend alone, by getting a new token.
inline constexpr const char expired_reason[] = "the token has expired";

struct Config {
    // Any of them verifies an HS256 token (more than one while a key is rotated); none: HS256
    // tokens are refused. Each must be at least 32 bytes.
    std::vector<std::string> hs256_secrets;
    std::string jwks_json; // empty: RS256/ES256 tokens are refused
    std::string issuer;    // empty: iss is not checked
    std::string audience;  // empty: aud is not checked (aud may be a string or an array)
    int leeway_seconds = 30;

    Config() = default;
    Config(const Config &) = default;
    Config &operator=(const Config &) = default;
    // Every copy of the keys is overwritten when it goes.
    ~Config() { secrets::wipe(hs256_secrets); }
};

struct Claims {
    std::string json; // the verified payload, compact JSON text
    // Top-level claims whose value is a string or a number, as text (numbers as JSON writes them).
    std::unordered_map<std::string, std::string> scalars;
};

class Verifier {
  public:
    Verifier();
    ~Verifier();
    Verifier(const Verifier &) = delete;
    Verifier &operator=(const Verifier &) = delete;

    // Replaces the configuration; parses the JWKS once. False with a reason for a bad JWKS or
    // secret (the previous configuration is then kept).
    bool configure(const Config &config, std::string &error);

    // Verifies a compact JWS. On success fills claims; on failure returns false with a reason
    // (expired_reason for a token past its exp): a fixed text, never anything of the token.
    bool verify(std::string_view token, int64_t now_unix, Claims &claims,
                std::string &reason) const;

    struct Keys; // jwt.cpp

  private:
    std::unique_ptr<Keys> keys_;
    Config config_;
};

} // namespace jwt
