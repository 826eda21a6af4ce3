// Bearer-token verification (compact JWS): see jwt.hpp. OpenSSL does every cryptographic step
// (HMAC, RSA and ECDSA verification), jansson parses the JSON, jwks.cpp reads the JWKS's keys; this
// file only decides which key may verify which token and checks the claims.
//
// The order of the checks is deliberate: the size and shape of the token, then the header, then
// the signature, and only then is the payload decoded and parsed, so an unsigned payload never
// reaches the JSON parser. Reasons are fixed sentences: nothing from the token goes into the log.
#include "auth/jwt.hpp"
#include "auth/jwks.hpp"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/hmac.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace jwt {

namespace {

const std::size_t max_token_length = 8192;
const std::size_t min_hs256_secret = 32;

// The number as text: integers in decimal, reals in the shortest form that reads back the same.
std::string number_text(const json_t *value)
{
    if (json_is_integer(value))
        return std::to_string(static_cast<long long>(json_integer_value(value)));
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), json_real_value(value));
    return std::string(buf, res.ptr);
}

// now < t + leeway, without overflow whatever the claim holds.
bool before_plus_leeway(int64_t now, const json_t *t, int leeway)
{
    if (json_is_integer(t)) {
        int64_t v = json_integer_value(t);
        if (v > std::numeric_limits<int64_t>::max() - leeway)
            return true;
        return now < v + leeway;
    }
    return static_cast<double>(now) < json_real_value(t) + leeway;
}

// t <= now + leeway, without overflow.
bool not_after_now_plus_leeway(int64_t now, const json_t *t, int leeway)
{
    if (json_is_integer(t)) {
        int64_t v = json_integer_value(t);
        if (v < std::numeric_limits<int64_t>::min() + leeway)
            return true;
        return v - leeway <= now;
    }
    return json_real_value(t) - leeway <= static_cast<double>(now);
}

bool verify_hs256(const std::string &secret, std::string_view signing_input,
                  const std::string &signature)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
             reinterpret_cast<const unsigned char *>(signing_input.data()), signing_input.size(),
             mac, &mac_len) == nullptr)
        return false;
    bool ok = signature.size() == mac_len && CRYPTO_memcmp(mac, signature.data(), mac_len) == 0;
    OPENSSL_cleanse(mac, sizeof(mac));
    return ok;
}

bool digest_verify(EVP_PKEY *pkey, std::string_view signing_input, const unsigned char *sig,
                   std::size_t sig_len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok =
        ctx != nullptr &&
        EVP_DigestVerifyInit_ex(ctx, nullptr, "SHA256", nullptr, nullptr, pkey, nullptr) == 1 &&
        EVP_DigestVerify(ctx, sig, sig_len,
                         reinterpret_cast<const unsigned char *>(signing_input.data()),
                         signing_input.size()) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

// JWS carries an ES256 signature as r || s, 32 bytes each (RFC 7518 3.4); OpenSSL verifies DER.
bool es256_der(const std::string &raw, std::vector<unsigned char> &der)
{
    if (raw.size() != 2 * es256_coordinate)
        return false;
    const unsigned char *p = reinterpret_cast<const unsigned char *>(raw.data());
    BIGNUM *r = BN_bin2bn(p, es256_coordinate, nullptr);
    BIGNUM *s = BN_bin2bn(p + es256_coordinate, es256_coordinate, nullptr);
    ECDSA_SIG *sig = ECDSA_SIG_new();
    if (r == nullptr || s == nullptr || sig == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return false;
    }
    int len = i2d_ECDSA_SIG(sig, nullptr);
    bool ok = len > 0;
    if (ok) {
        der.resize(static_cast<std::size_t>(len));
        unsigned char *out = der.data();
        ok = i2d_ECDSA_SIG(sig, &out) == len;
    }
    ECDSA_SIG_free(sig); // frees r and s
    return ok;
}

// Failure with a reason; also empties OpenSSL's error queue, so nothing of a refused token is
// left for the next caller of OpenSSL on this thread to find.
bool refuse(std::string &reason, const char *why)
{
    ERR_clear_error();
    reason = why;
    return false;
}

// A compact JWS, cut into its parts; its header and signature decoded.
struct Jws {
    std::string_view payload_b64;
    std::string_view signing_input; // header.payload, as sent
    std::string signature;
    JsonPtr header;
    Alg alg;
    const json_t *kid = nullptr; // the header's, a string; nullptr: none
};

// Cuts a token into its three parts and reads its header: nullptr, or why the token is refused.
// The header decides the algorithm, but only among the three.
const char *read_jws(std::string_view token, Jws &jws)
{
    if (token.size() > max_token_length)
        return "the token is longer than 8192 bytes";
    // Compact JWS: exactly three base64url parts separated by dots.
    std::size_t dot1 = token.find('.');
    std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
        return "the token is not three dot-separated parts";
    jws.payload_b64 = token.substr(dot1 + 1, dot2 - dot1 - 1);
    jws.signing_input = token.substr(0, dot2);
    std::string header_text;
    if (!base64url_decode(token.substr(0, dot1), header_text))
        return "the token header is not valid base64url";
    if (!base64url_decode(token.substr(dot2 + 1), jws.signature))
        return "the token signature is not valid base64url";
    jws.header = parse_json(header_text);
    if (!jws.header || !json_is_object(jws.header.get()))
        return "the token header is not a JSON object";
    const char *alg_text = string_member(jws.header.get(), "alg");
    if (alg_text == nullptr)
        return "the token header has no alg";
    if (std::strcmp(alg_text, "HS256") == 0)
        jws.alg = Alg::hs256;
    else if (std::strcmp(alg_text, "RS256") == 0)
        jws.alg = Alg::rs256;
    else if (std::strcmp(alg_text, "ES256") == 0)
        jws.alg = Alg::es256;
    else
        return "the token alg is not HS256, RS256 or ES256";
    // No JWS extension is understood, so a token that marks one as critical is refused (RFC 7515
    // 4.1.11).
    if (json_object_get(jws.header.get(), "crit") != nullptr)
        return "the token header has a crit parameter";
    jws.kid = json_object_get(jws.header.get(), "kid");
    if (jws.kid != nullptr && !json_is_string(jws.kid))
        return "the token kid is not a string";
    return nullptr;
}

// An HS256 token against the configured secrets (any of them verifies it; every one is tried):
// nullptr, or why it is refused.
const char *verify_with_secrets(const std::vector<std::string> &secrets, const Jws &jws)
{
    if (secrets.empty())
        return "an HS256 token, and no HS256 secret is configured";
    bool verified = false;
    for (const std::string &secret : secrets)
        verified = verify_hs256(secret, jws.signing_input, jws.signature) || verified;
    return verified ? nullptr : "the HS256 signature does not verify";
}

// An RS256 or ES256 token against the JWKS keys of its type and alg (and its kid, when it names
// one): nullptr, or why it is refused. A JWKS key never verifies an HS256 token.
const char *verify_with_jwks(const Verifier::Keys &keys, const Jws &jws)
{
    Kty kty = jws.alg == Alg::rs256 ? Kty::rsa : Kty::ec;
    std::vector<unsigned char> der;
    if (jws.alg == Alg::es256 && !es256_der(jws.signature, der))
        return "the ES256 signature is not 64 bytes of r and s";
    std::string_view kid_text;
    if (jws.kid != nullptr)
        kid_text = std::string_view(json_string_value(jws.kid), json_string_length(jws.kid));
    bool candidate = false, verified = false;
    for (const Verifier::Keys::Key &key : keys.keys) {
        if (jws.kid != nullptr && !(key.has_kid && key.kid == kid_text))
            continue;
        if (key.kty != kty || (key.has_alg && key.alg != jws.alg))
            continue;
        candidate = true;
        if (jws.alg == Alg::rs256) {
            const std::string &sig = jws.signature;
            if (sig.size() == static_cast<std::size_t>(EVP_PKEY_get_size(key.pkey.get())))
                verified =
                    digest_verify(key.pkey.get(), jws.signing_input,
                                  reinterpret_cast<const unsigned char *>(sig.data()), sig.size());
        } else {
            verified = digest_verify(key.pkey.get(), jws.signing_input, der.data(), der.size());
        }
        if (verified)
            break;
    }
    if (!candidate)
        return jws.kid != nullptr ? "no JWKS key has the token's kid and suits its alg"
                                  : "no JWKS key suits the token's alg";
    return verified ? nullptr : "the token signature does not verify with the JWKS";
}

// exp (required), nbf and iat of a verified payload, at now within the leeway: nullptr, or why
// the token is refused.
const char *check_times(const json_t *p, int64_t now_unix, int leeway)
{
    json_t *exp = json_object_get(p, "exp");
    if (exp == nullptr)
        return "the token has no exp";
    if (!json_is_number(exp))
        return "the token exp is not a number";
    if (!before_plus_leeway(now_unix, exp, leeway))
        return expired_reason;
    json_t *nbf = json_object_get(p, "nbf");
    if (nbf != nullptr && !json_is_number(nbf))
        return "the token nbf is not a number";
    if (nbf != nullptr && !not_after_now_plus_leeway(now_unix, nbf, leeway))
        return "the token is not valid yet (nbf)";
    json_t *iat = json_object_get(p, "iat");
    if (iat != nullptr && !json_is_number(iat))
        return "the token iat is not a number";
    if (iat != nullptr && !not_after_now_plus_leeway(now_unix, iat, leeway))
        return "the token was issued in the future (iat)";
    return nullptr;
}

bool is_text(const json_t *v, const std::string &text)
{
    return json_is_string(v) &&
           std::string_view(json_string_value(v), json_string_length(v)) == text;
}

// iss and aud of a verified payload, when the configuration names them (aud a string or an array
// of them): nullptr, or why the token is refused.
const char *check_issuer_and_audience(const json_t *p, const Config &config)
{
    if (!config.issuer.empty() && !is_text(json_object_get(p, "iss"), config.issuer))
        return "the token iss is not the configured issuer";
    if (config.audience.empty())
        return nullptr;
    json_t *aud = json_object_get(p, "aud");
    bool found = false;
    if (json_is_array(aud)) {
        std::size_t i;
        json_t *v;
        json_array_foreach(aud, i, v)
        {
            if (is_text(v, config.audience))
                found = true;
        }
    } else {
        found = is_text(aud, config.audience);
    }
    return found ? nullptr : "the token aud does not name the configured audience";
}

// The verified payload into claims: its compact JSON and its string and number members.
bool fill_claims(json_t *p, Claims &claims)
{
    char *compact = json_dumps(p, JSON_COMPACT);
    if (compact == nullptr)
        return false;
    claims.json = compact;
    std::free(compact);
    claims.scalars.clear();
    const char *name;
    json_t *value;
    json_object_foreach(p, name, value)
    {
        if (json_is_string(value))
            claims.scalars.emplace(
                name, std::string(json_string_value(value), json_string_length(value)));
        else if (json_is_number(value))
            claims.scalars.emplace(name, number_text(value));
    }
    return true;
}

} // namespace

Verifier::Verifier() : keys_(std::make_unique<Keys>()) {}

Verifier::~Verifier() = default;

bool Verifier::configure(const Config &config, std::string &error)
{
    for (std::size_t i = 0; i < config.hs256_secrets.size(); ++i)
        if (config.hs256_secrets[i].size() < min_hs256_secret) {
            error = "HS256 key " + std::to_string(i + 1) + " is " +
                    std::to_string(config.hs256_secrets[i].size()) + " bytes long; at least " +
                    std::to_string(min_hs256_secret) + " are required";
            return false;
        }
    if (config.leeway_seconds < 0) {
        error = "the leeway must not be negative";
        return false;
    }
    auto keys = std::make_unique<Keys>();
    if (!config.jwks_json.empty() && !parse_jwks(config.jwks_json, *keys, error)) {
        ERR_clear_error();
        return false;
    }
    ERR_clear_error();
    secrets::wipe(config_.hs256_secrets);
    config_ = config;
    keys_ = std::move(keys);
    return true;
}

bool Verifier::verify(std::string_view token, int64_t now_unix, Claims &claims,
                      std::string &reason) const
{
    Jws jws;
    if (const char *why = read_jws(token, jws))
        return refuse(reason, why);
    // Each algorithm only with its own kind of key: HS256 with the configured secrets, never with
    // a JWKS key.
    if (const char *why = jws.alg == Alg::hs256 ? verify_with_secrets(config_.hs256_secrets, jws)
                                                : verify_with_jwks(*keys_, jws))
        return refuse(reason, why);

    // Signed: now the payload.
    std::string payload_text;
    if (!base64url_decode(jws.payload_b64, payload_text))
        return refuse(reason, "the token payload is not valid base64url");
    JsonPtr payload = parse_json(payload_text);
    if (!payload || !json_is_object(payload.get()))
        return refuse(reason, "the token payload is not a JSON object");
    if (const char *why = check_times(payload.get(), now_unix, config_.leeway_seconds))
        return refuse(reason, why);
    if (const char *why = check_issuer_and_audience(payload.get(), config_))
        return refuse(reason, why);
    if (!fill_claims(payload.get(), claims))
        return refuse(reason, "out of memory writing the token claims");
    ERR_clear_error();
    return true;
}

} // namespace jwt
