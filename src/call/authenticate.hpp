// Who is calling: an API key (its hash, expiry and address allow-list) or a verified bearer token
// (HS256 with the keys of querygate.jwt_secret_file, RS256/ES256 with the stored JWKS), and the
// policy it names.
// PostgreSQL side only because it reads the worker's catalog cache and settings; the checks
// themselves are plain C++ (auth/, common/client_address.hpp).
#pragma once

#include "auth/jwt.hpp"
#include "auth/secret_file.hpp"
#include "call/catalog_cache.hpp"
#include "common/api_error.hpp"
#include "common/call.hpp"

#include <cstdint>
#include <string>
#include <string_view>

// Who is calling, once authenticated.
struct Caller {
    const CachedPolicy *policy = nullptr; // set only when the caller is accepted
    const CachedKey *key = nullptr;       // its key; nullptr for a bearer token
    std::string_view key_name;            // the key's (the cache's string), or "jwt"
    bool is_jwt = false;
    bool has_tenant = false;
    std::string tenant;
    jwt::Claims claims;
    // Why the credentials were refused, for the operator (the access log): a fixed text, with
    // the key's name where one was found; never a secret or anything of a token.
    std::string refusal;
};

// Who an accepted caller is, as GET /events matches watchers with calls (run_events::Who): its
// scope is its policy and tenant; its identity adds its key, or a token's subject (all of a
// policy's tokens without one, in one tenant, are one caller). Unknown for a caller not accepted.
run_events::Who who_of(const Caller &caller);
// Whose share of a worker's helpers an accepted caller's calls take (common/call.hpp).
PoolShare pool_share_of(const Caller &caller);

class Authenticator {
  public:
    // key_hash_hex: the SHA-256 of request.secret in lower-case hex (only hashes are compared).
    // A key's every failure is one answer, unauthorized: a caller learns nothing from the
    // difference. A bearer token's is invalid_token or token_expired with why, as RFC 6750 has
    // it: the holder of a token learns what is wrong with it, nothing about other tokens. Either
    // way caller.refusal says why for the log.
    ApiError authenticate(CatalogCache &cache, const CallRequest &request, const char *key_hash_hex,
                          Caller &caller);

  private:
    // Rebuilds the verifier when the JWKS or a jwt_* setting changed.
    void configure(const CatalogCache &cache);

    jwt::Verifier verifier_;
    secret_file::Cached hs256_keys_; // querygate.jwt_secret_file, read again at each reload
    uint64_t generation_ = 0;        // cache generation and settings reloads it was built for
};

// Microseconds since the Unix epoch, by the system clock.
int64_t unix_now_us();
