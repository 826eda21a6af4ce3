// Bearer-token verification (compact JWS): see jwt.hpp. OpenSSL does every cryptographic step
// (HMAC, RSA and ECDSA verification, key import and checks), jansson parses the JSON; this file
// only decides which key may verify which token and checks the claims.
//
// The order of the checks is deliberate: the size and shape of the token, then the header, then
// the signature, and only then is the payload decoded and parsed, so an unsigned payload never
// reaches the JSON parser. Reasons are fixed sentences: nothing from the token goes into the log.
#include "auth/jwt.hpp"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace jwt {

namespace {

const std::size_t max_token_length = 8192;
const std::size_t min_hs256_secret = 32;
const int min_rsa_bits = 2048; // RFC 7518 3.3: RS256 keys are 2048 bits or larger
const std::size_t es256_coordinate = 32;

enum class Alg { hs256, rs256, es256 };
enum class Kty { rsa, ec };

// Decodes unpadded base64url strictly: no padding, no whitespace, nothing outside the alphabet, a
// length that some byte string encodes to, and zero unused bits in the last character (so each
// byte string has exactly one accepted encoding).
bool base64url_decode(std::string_view in, std::string &out)
{
    out.clear();
    if (in.size() % 4 == 1)
        return false;
    out.reserve(in.size() / 4 * 3 + 2);
    unsigned acc = 0;
    int bits = 0;
    for (char ch : in) {
        unsigned v;
        if (ch >= 'A' && ch <= 'Z')
            v = ch - 'A';
        else if (ch >= 'a' && ch <= 'z')
            v = ch - 'a' + 26;
        else if (ch >= '0' && ch <= '9')
            v = ch - '0' + 52;
        else if (ch == '-')
            v = 62;
        else if (ch == '_')
            v = 63;
        else
            return false;
        acc = (acc << 6) | v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xFF));
        }
    }
    return (acc & ((1u << bits) - 1)) == 0;
}

struct JsonDeleter {
    void operator()(json_t *j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

// Parses a JSON text; duplicate member names are refused (which of two "exp" counts would
// otherwise depend on the parser), and so is \u0000 (jansson's default).
JsonPtr parse_json(std::string_view text)
{
    json_error_t err;
    return JsonPtr(json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &err));
}

struct PkeyDeleter {
    void operator()(EVP_PKEY *p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

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

const char *string_member(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(obj, name));
}

} // namespace

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

namespace {

// Reads a base64url member of a JWK into a big-endian byte string.
bool jwk_bytes(const json_t *jwk, const char *name, std::string &out, std::string &error)
{
    const char *text = string_member(jwk, name);
    if (text == nullptr) {
        error = std::string("a key of the JWKS has no \"") + name + "\" string";
        return false;
    }
    if (!base64url_decode(text, out) || out.empty()) {
        error = std::string("a key of the JWKS has an invalid base64url \"") + name + "\"";
        return false;
    }
    return true;
}

PkeyPtr pkey_from_params(const char *type, OSSL_PARAM_BLD *bld)
{
    PkeyPtr result;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
    EVP_PKEY *pkey = nullptr;
    if (params != nullptr && ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1)
        result.reset(pkey);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return result;
}

// An RSA public key from n and e; at least 2048 bits and an odd exponent above 1.
PkeyPtr rsa_key(const json_t *jwk, std::string &error)
{
    std::string n, e;
    if (!jwk_bytes(jwk, "n", n, error) || !jwk_bytes(jwk, "e", e, error))
        return nullptr;
    BIGNUM *bn_n = BN_bin2bn(reinterpret_cast<const unsigned char *>(n.data()),
                             static_cast<int>(n.size()), nullptr);
    BIGNUM *bn_e = BN_bin2bn(reinterpret_cast<const unsigned char *>(e.data()),
                             static_cast<int>(e.size()), nullptr);
    PkeyPtr pkey;
    if (bn_n == nullptr || bn_e == nullptr) {
        error = "out of memory reading an RSA key of the JWKS";
    } else if (BN_num_bits(bn_n) < min_rsa_bits) {
        error = "an RSA key of the JWKS has a modulus of " + std::to_string(BN_num_bits(bn_n)) +
                " bits; at least " + std::to_string(min_rsa_bits) + " are required";
    } else if (!BN_is_odd(bn_e) || BN_is_one(bn_e) || BN_num_bits(bn_e) > 64) {
        error = "an RSA key of the JWKS has an invalid exponent";
    } else {
        OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
        if (bld != nullptr && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1)
            pkey = pkey_from_params("RSA", bld);
        OSSL_PARAM_BLD_free(bld);
        if (!pkey)
            error = "OpenSSL refused an RSA key of the JWKS";
    }
    BN_free(bn_n);
    BN_free(bn_e);
    return pkey;
}

// A P-256 public key from x and y (32 bytes each, RFC 7518 6.2.1); the point must be on the curve.
PkeyPtr ec_key(const json_t *jwk, std::string &error)
{
    std::string x, y;
    if (!jwk_bytes(jwk, "x", x, error) || !jwk_bytes(jwk, "y", y, error))
        return nullptr;
    if (x.size() != es256_coordinate || y.size() != es256_coordinate) {
        error = "a P-256 key of the JWKS has coordinates that are not 32 bytes long";
        return nullptr;
    }
    std::string point = "\x04" + x + y; // uncompressed SEC 1 point
    PkeyPtr pkey;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld != nullptr &&
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                         point.size()) == 1)
        pkey = pkey_from_params("EC", bld);
    OSSL_PARAM_BLD_free(bld);
    if (pkey) {
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey.get(), nullptr);
        bool valid = ctx != nullptr && EVP_PKEY_public_check(ctx) == 1;
        EVP_PKEY_CTX_free(ctx);
        if (!valid)
            pkey.reset();
    }
    if (!pkey)
        error = "a P-256 key of the JWKS is not a valid point of the curve";
    return pkey;
}

// Reads a JWKS document. Keys that can never verify a token here are skipped (another kty or
// curve, "use" other than "sig", an alg other than RS256/ES256, key_ops without "verify"): an
// identity provider's JWKS often holds such keys beside the signing ones. A key of a supported
// type that is broken fails the whole document, so the mistake is seen when it is stored.
bool parse_jwks(const std::string &text, Verifier::Keys &out, std::string &error)
{
    JsonPtr doc = parse_json(text);
    if (!doc || !json_is_object(doc.get())) {
        error = "the JWKS is not a JSON object";
        return false;
    }
    json_t *keys = json_object_get(doc.get(), "keys");
    if (!json_is_array(keys)) {
        error = "the JWKS has no \"keys\" array";
        return false;
    }
    std::size_t i;
    json_t *jwk;
    json_array_foreach(keys, i, jwk)
    {
        if (!json_is_object(jwk)) {
            error = "a key of the JWKS is not a JSON object";
            return false;
        }
        const char *kty = string_member(jwk, "kty");
        if (kty == nullptr) {
            error = "a key of the JWKS has no \"kty\" string";
            return false;
        }
        json_t *use = json_object_get(jwk, "use");
        if (use != nullptr &&
            !(json_is_string(use) && std::strcmp(json_string_value(use), "sig") == 0))
            continue;
        json_t *ops = json_object_get(jwk, "key_ops");
        if (ops != nullptr) {
            bool verify = false;
            std::size_t k;
            json_t *op;
            json_array_foreach(ops, k, op)
            {
                if (json_is_string(op) && std::strcmp(json_string_value(op), "verify") == 0)
                    verify = true;
            }
            if (!verify)
                continue;
        }
        Verifier::Keys::Key key;
        json_t *alg = json_object_get(jwk, "alg");
        if (alg != nullptr) {
            const char *a = json_string_value(alg);
            if (a != nullptr && std::strcmp(a, "RS256") == 0)
                key.alg = Alg::rs256;
            else if (a != nullptr && std::strcmp(a, "ES256") == 0)
                key.alg = Alg::es256;
            else
                continue;
            key.has_alg = true;
        }
        json_t *kid = json_object_get(jwk, "kid");
        if (kid != nullptr) {
            if (!json_is_string(kid)) {
                error = "a key of the JWKS has a \"kid\" that is not a string";
                return false;
            }
            key.has_kid = true;
            key.kid.assign(json_string_value(kid), json_string_length(kid));
        }
        if (std::strcmp(kty, "RSA") == 0) {
            key.kty = Kty::rsa;
            key.pkey = rsa_key(jwk, error);
        } else if (std::strcmp(kty, "EC") == 0) {
            const char *crv = string_member(jwk, "crv");
            if (crv == nullptr) {
                error = "an EC key of the JWKS has no \"crv\" string";
                return false;
            }
            if (std::strcmp(crv, "P-256") != 0)
                continue;
            key.kty = Kty::ec;
            key.pkey = ec_key(jwk, error);
        } else {
            continue;
        }
        if (!key.pkey)
            return false;
        out.keys.push_back(std::move(key));
    }
    return true;
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
    if (token.size() > max_token_length)
        return refuse(reason, "the token is longer than 8192 bytes");

    // Compact JWS: exactly three base64url parts separated by dots.
    std::size_t dot1 = token.find('.');
    std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
        return refuse(reason, "the token is not three dot-separated parts");
    std::string_view header_b64 = token.substr(0, dot1);
    std::string_view payload_b64 = token.substr(dot1 + 1, dot2 - dot1 - 1);
    std::string_view signature_b64 = token.substr(dot2 + 1);
    std::string_view signing_input = token.substr(0, dot2);

    std::string header_text, signature;
    if (!base64url_decode(header_b64, header_text))
        return refuse(reason, "the token header is not valid base64url");
    if (!base64url_decode(signature_b64, signature))
        return refuse(reason, "the token signature is not valid base64url");
    JsonPtr header = parse_json(header_text);
    if (!header || !json_is_object(header.get()))
        return refuse(reason, "the token header is not a JSON object");

    // The header decides the algorithm, but only among the three, and each only with its own kind
    // of key: HS256 with the configured secret, never with a JWKS key.
    const char *alg_text = string_member(header.get(), "alg");
    if (alg_text == nullptr)
        return refuse(reason, "the token header has no alg");
    Alg alg;
    if (std::strcmp(alg_text, "HS256") == 0)
        alg = Alg::hs256;
    else if (std::strcmp(alg_text, "RS256") == 0)
        alg = Alg::rs256;
    else if (std::strcmp(alg_text, "ES256") == 0)
        alg = Alg::es256;
    else
        return refuse(reason, "the token alg is not HS256, RS256 or ES256");
    // No JWS extension is understood, so a token that marks one as critical is refused (RFC 7515
    // 4.1.11).
    if (json_object_get(header.get(), "crit") != nullptr)
        return refuse(reason, "the token header has a crit parameter");
    json_t *kid = json_object_get(header.get(), "kid");
    if (kid != nullptr && !json_is_string(kid))
        return refuse(reason, "the token kid is not a string");

    if (alg == Alg::hs256) {
        if (config_.hs256_secrets.empty())
            return refuse(reason, "an HS256 token, and no HS256 secret is configured");
        bool verified = false;
        for (const std::string &secret : config_.hs256_secrets)
            verified = verify_hs256(secret, signing_input, signature) || verified;
        if (!verified)
            return refuse(reason, "the HS256 signature does not verify");
    } else {
        Kty kty = alg == Alg::rs256 ? Kty::rsa : Kty::ec;
        std::vector<unsigned char> der;
        if (alg == Alg::es256 && !es256_der(signature, der))
            return refuse(reason, "the ES256 signature is not 64 bytes of r and s");
        std::string_view kid_text;
        if (kid != nullptr)
            kid_text = std::string_view(json_string_value(kid), json_string_length(kid));
        bool candidate = false, verified = false;
        for (const Keys::Key &key : keys_->keys) {
            if (kid != nullptr && !(key.has_kid && key.kid == kid_text))
                continue;
            if (key.kty != kty || (key.has_alg && key.alg != alg))
                continue;
            candidate = true;
            if (alg == Alg::rs256) {
                if (signature.size() == static_cast<std::size_t>(EVP_PKEY_get_size(key.pkey.get())))
                    verified =
                        digest_verify(key.pkey.get(), signing_input,
                                      reinterpret_cast<const unsigned char *>(signature.data()),
                                      signature.size());
            } else {
                verified = digest_verify(key.pkey.get(), signing_input, der.data(), der.size());
            }
            if (verified)
                break;
        }
        if (!candidate)
            return refuse(reason, kid != nullptr
                                      ? "no JWKS key has the token's kid and suits its alg"
                                      : "no JWKS key suits the token's alg");
        if (!verified)
            return refuse(reason, "the token signature does not verify with the JWKS");
    }

    // Signed: now the payload.
    std::string payload_text;
    if (!base64url_decode(payload_b64, payload_text))
        return refuse(reason, "the token payload is not valid base64url");
    JsonPtr payload = parse_json(payload_text);
    if (!payload || !json_is_object(payload.get()))
        return refuse(reason, "the token payload is not a JSON object");
    const json_t *p = payload.get();
    int leeway = config_.leeway_seconds;

    json_t *exp = json_object_get(p, "exp");
    if (exp == nullptr)
        return refuse(reason, "the token has no exp");
    if (!json_is_number(exp))
        return refuse(reason, "the token exp is not a number");
    if (!before_plus_leeway(now_unix, exp, leeway))
        return refuse(reason, expired_reason);
    json_t *nbf = json_object_get(p, "nbf");
    if (nbf != nullptr && !json_is_number(nbf))
        return refuse(reason, "the token nbf is not a number");
    if (nbf != nullptr && !not_after_now_plus_leeway(now_unix, nbf, leeway))
        return refuse(reason, "the token is not valid yet (nbf)");
    json_t *iat = json_object_get(p, "iat");
    if (iat != nullptr && !json_is_number(iat))
        return refuse(reason, "the token iat is not a number");
    if (iat != nullptr && !not_after_now_plus_leeway(now_unix, iat, leeway))
        return refuse(reason, "the token was issued in the future (iat)");

    if (!config_.issuer.empty()) {
        json_t *iss = json_object_get(p, "iss");
        if (!json_is_string(iss) ||
            std::string_view(json_string_value(iss), json_string_length(iss)) != config_.issuer)
            return refuse(reason, "the token iss is not the configured issuer");
    }
    if (!config_.audience.empty()) {
        json_t *aud = json_object_get(p, "aud");
        bool found = false;
        auto matches = [this](const json_t *v) {
            return json_is_string(v) && std::string_view(json_string_value(v),
                                                         json_string_length(v)) == config_.audience;
        };
        if (json_is_array(aud)) {
            std::size_t i;
            json_t *v;
            json_array_foreach(aud, i, v)
            {
                if (matches(v))
                    found = true;
            }
        } else {
            found = matches(aud);
        }
        if (!found)
            return refuse(reason, "the token aud does not name the configured audience");
    }

    char *compact = json_dumps(p, JSON_COMPACT);
    if (compact == nullptr)
        return refuse(reason, "out of memory writing the token claims");
    claims.json = compact;
    std::free(compact);
    claims.scalars.clear();
    const char *name;
    json_t *value;
    json_object_foreach(payload.get(), name, value)
    {
        if (json_is_string(value))
            claims.scalars.emplace(
                name, std::string(json_string_value(value), json_string_length(value)));
        else if (json_is_number(value))
            claims.scalars.emplace(name, number_text(value));
    }
    ERR_clear_error();
    return true;
}

} // namespace jwt
