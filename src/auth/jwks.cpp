// Reading a JWKS document: see jwks.hpp. OpenSSL imports and checks each key; this file decides
// which keys are kept.
#include "auth/jwks.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include <cstring>
#include <utility>

namespace jwt {

namespace {

const int min_rsa_bits = 2048; // RFC 7518 3.3: RS256 keys are 2048 bits or larger

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

// Whether a JWK may verify signatures: its "use", if any, is "sig", and its "key_ops", if any,
// hold "verify".
bool for_verifying(const json_t *jwk)
{
    json_t *use = json_object_get(jwk, "use");
    if (use != nullptr && !(json_is_string(use) && std::strcmp(json_string_value(use), "sig") == 0))
        return false;
    json_t *ops = json_object_get(jwk, "key_ops");
    if (ops == nullptr)
        return true;
    bool verify = false;
    std::size_t k;
    json_t *op;
    json_array_foreach(ops, k, op)
    {
        if (json_is_string(op) && std::strcmp(json_string_value(op), "verify") == 0)
            verify = true;
    }
    return verify;
}

enum class Read { kept, skipped, failed };

// The JWK's "alg" and "kid" into key: skipped for an alg other than RS256 and ES256, failed (with
// error) for a kid that is not a string.
Read read_alg_and_kid(const json_t *jwk, Verifier::Keys::Key &key, std::string &error)
{
    json_t *alg = json_object_get(jwk, "alg");
    if (alg != nullptr) {
        const char *a = json_string_value(alg);
        if (a != nullptr && std::strcmp(a, "RS256") == 0)
            key.alg = Alg::rs256;
        else if (a != nullptr && std::strcmp(a, "ES256") == 0)
            key.alg = Alg::es256;
        else
            return Read::skipped;
        key.has_alg = true;
    }
    json_t *kid = json_object_get(jwk, "kid");
    if (kid != nullptr) {
        if (!json_is_string(kid)) {
            error = "a key of the JWKS has a \"kid\" that is not a string";
            return Read::failed;
        }
        key.has_kid = true;
        key.kid.assign(json_string_value(kid), json_string_length(kid));
    }
    return Read::kept;
}

// The public key of a JWK of type kty into key: skipped for a type or curve not supported, failed
// (with error) for a key that is broken.
Read read_public_key(const json_t *jwk, const char *kty, Verifier::Keys::Key &key,
                     std::string &error)
{
    if (std::strcmp(kty, "RSA") == 0) {
        key.kty = Kty::rsa;
        key.pkey = rsa_key(jwk, error);
    } else if (std::strcmp(kty, "EC") == 0) {
        const char *crv = string_member(jwk, "crv");
        if (crv == nullptr) {
            error = "an EC key of the JWKS has no \"crv\" string";
            return Read::failed;
        }
        if (std::strcmp(crv, "P-256") != 0)
            return Read::skipped;
        key.kty = Kty::ec;
        key.pkey = ec_key(jwk, error);
    } else {
        return Read::skipped;
    }
    return key.pkey ? Read::kept : Read::failed;
}

// One JWK of the "keys" array.
Read read_key(const json_t *jwk, Verifier::Keys::Key &key, std::string &error)
{
    if (!json_is_object(jwk)) {
        error = "a key of the JWKS is not a JSON object";
        return Read::failed;
    }
    const char *kty = string_member(jwk, "kty");
    if (kty == nullptr) {
        error = "a key of the JWKS has no \"kty\" string";
        return Read::failed;
    }
    if (!for_verifying(jwk))
        return Read::skipped;
    Read read = read_alg_and_kid(jwk, key, error);
    return read == Read::kept ? read_public_key(jwk, kty, key, error) : read;
}

} // namespace

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
        Verifier::Keys::Key key;
        Read read = read_key(jwk, key, error);
        if (read == Read::failed)
            return false;
        if (read == Read::kept)
            out.keys.push_back(std::move(key));
    }
    return true;
}

} // namespace jwt
