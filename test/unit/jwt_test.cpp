// Tests of src/auth/jwt.cpp against real tokens. The keys are generated here with OpenSSL (RSA
// 2048, EC P-256) at every run, the JWKS is built from them, and every token is signed here with
// OpenSSL (EVP_DigestSign, HMAC): nothing is a hard-coded expected result. Prints TAP and exits
// non-zero when a test fails.
#include "auth/jwt.hpp"
#include "tap.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

using tap::ok;

[[noreturn]] void die(const char *what)
{
    std::fprintf(stderr, "setup failed: %s\n", what);
    ERR_print_errors_fp(stderr);
    std::exit(2);
}

std::string b64url(const std::string &in)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(in[k]); };
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    if (in.size() - i == 1) {
        unsigned v = byte(i) << 16;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
    } else if (in.size() - i == 2) {
        unsigned v = (byte(i) << 16) | (byte(i + 1) << 8);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
    }
    return out;
}

std::string bn_bytes(const BIGNUM *bn, int pad = 0)
{
    int len = pad > 0 ? pad : BN_num_bytes(bn);
    std::string out(static_cast<std::size_t>(len), '\0');
    if (BN_bn2binpad(bn, reinterpret_cast<unsigned char *>(&out[0]), len) != len)
        die("BN_bn2binpad");
    return out;
}

// --- keys ------------------------------------------------------------------------------------

EVP_PKEY *rsa_keygen(size_t bits)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", bits);
    if (k == nullptr)
        die("RSA key generation");
    return k;
}

EVP_PKEY *ec_keygen(const char *curve)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve);
    if (k == nullptr)
        die("EC key generation");
    return k;
}

std::string bn_param(EVP_PKEY *k, const char *name, int pad = 0)
{
    BIGNUM *bn = nullptr;
    if (EVP_PKEY_get_bn_param(k, name, &bn) != 1)
        die(name);
    std::string out = bn_bytes(bn, pad);
    BN_free(bn);
    return out;
}

// The JWK of a public key; extra is appended inside the object (",\"use\":\"sig\"", ...).
std::string rsa_jwk(EVP_PKEY *k, const std::string &kid, const std::string &extra = "")
{
    std::string j = "{\"kty\":\"RSA\"";
    if (!kid.empty())
        j += ",\"kid\":\"" + kid + "\"";
    j += ",\"n\":\"" + b64url(bn_param(k, OSSL_PKEY_PARAM_RSA_N)) + "\"";
    j += ",\"e\":\"" + b64url(bn_param(k, OSSL_PKEY_PARAM_RSA_E)) + "\"";
    return j + extra + "}";
}

std::string ec_jwk(EVP_PKEY *k, const std::string &kid, const std::string &extra = "",
                   const char *crv = "P-256", int coord = 32)
{
    std::string j = "{\"kty\":\"EC\",\"crv\":\"" + std::string(crv) + "\"";
    if (!kid.empty())
        j += ",\"kid\":\"" + kid + "\"";
    j += ",\"x\":\"" + b64url(bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, coord)) + "\"";
    j += ",\"y\":\"" + b64url(bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, coord)) + "\"";
    return j + extra + "}";
}

std::string jwks(const std::vector<std::string> &keys)
{
    std::string j = "{\"keys\":[";
    for (std::size_t i = 0; i < keys.size(); i++)
        j += (i ? "," : "") + keys[i];
    return j + "]}";
}

std::string public_pem(EVP_PKEY *k)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == nullptr || PEM_write_bio_PUBKEY(bio, k) != 1)
        die("PEM_write_bio_PUBKEY");
    char *data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(len));
    BIO_free(bio);
    return out;
}

// --- signing -----------------------------------------------------------------------------------

std::string hmac_sha256(const std::string &key, const std::string &data)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char *>(data.data()), data.size(), mac,
             &len) == nullptr)
        die("HMAC");
    return std::string(reinterpret_cast<char *>(mac), len);
}

// RS256 signature, or for an EC key the DER ECDSA signature OpenSSL produces.
std::string digest_sign(EVP_PKEY *k, const std::string &data)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t len = 0;
    if (ctx == nullptr ||
        EVP_DigestSignInit_ex(ctx, nullptr, "SHA256", nullptr, nullptr, k, nullptr) != 1 ||
        EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char *>(data.data()),
                       data.size()) != 1)
        die("EVP_DigestSign (size)");
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char *>(&sig[0]), &len,
                       reinterpret_cast<const unsigned char *>(data.data()), data.size()) != 1)
        die("EVP_DigestSign");
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    return sig;
}

// DER ECDSA signature to the JWS form: r || s, 32 bytes each.
std::string der_to_raw(const std::string &der)
{
    const unsigned char *p = reinterpret_cast<const unsigned char *>(der.data());
    ECDSA_SIG *sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
    if (sig == nullptr)
        die("d2i_ECDSA_SIG");
    std::string raw = bn_bytes(ECDSA_SIG_get0_r(sig), 32) + bn_bytes(ECDSA_SIG_get0_s(sig), 32);
    ECDSA_SIG_free(sig);
    return raw;
}

struct Signer {
    enum Kind { hs, rs, es_raw, es_der } kind;
    std::string secret;
    EVP_PKEY *key = nullptr;
};

Signer hs(const std::string &secret)
{
    return Signer{Signer::hs, secret, nullptr};
}
Signer rs(EVP_PKEY *k)
{
    return Signer{Signer::rs, "", k};
}
Signer es(EVP_PKEY *k)
{
    return Signer{Signer::es_raw, "", k};
}
Signer es_der(EVP_PKEY *k)
{
    return Signer{Signer::es_der, "", k};
}

std::string signature(const Signer &s, const std::string &input)
{
    switch (s.kind) {
    case Signer::hs:
        return hmac_sha256(s.secret, input);
    case Signer::rs:
        return digest_sign(s.key, input);
    case Signer::es_raw:
        return der_to_raw(digest_sign(s.key, input));
    case Signer::es_der:
        return digest_sign(s.key, input);
    }
    return "";
}

// A compact JWS of the given header and payload texts.
std::string token(const std::string &header, const std::string &payload, const Signer &s)
{
    std::string input = b64url(header) + "." + b64url(payload);
    return input + "." + b64url(signature(s, input));
}

// The token with its signature part replaced by the base64url of sig.
std::string with_signature(const std::string &tok, const std::string &sig)
{
    return tok.substr(0, tok.rfind('.') + 1) + b64url(sig);
}

std::string decode_sig(const std::string &tok)
{
    // Test-side decoder, only for signatures this file encoded.
    std::string in = tok.substr(tok.rfind('.') + 1), out;
    unsigned acc = 0;
    int bits = 0;
    for (char c : in) {
        const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        acc = (acc << 6) | static_cast<unsigned>(std::string(alphabet).find(c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    return out;
}

// --- verification helpers ----------------------------------------------------------------------

int64_t now = 0;

std::string hdr(const char *alg, const std::string &kid = "")
{
    std::string h = "{\"alg\":\"" + std::string(alg) + "\",\"typ\":\"JWT\"";
    if (!kid.empty())
        h += ",\"kid\":\"" + kid + "\"";
    return h + "}";
}

// A payload that expires in an hour, with more claims appended.
std::string body(const std::string &extra = "")
{
    return "{\"sub\":\"alice\",\"exp\":" + std::to_string(now + 3600) + extra + "}";
}

void expect_ok(const jwt::Verifier &v, const std::string &tok, const std::string &name,
               jwt::Claims *out = nullptr)
{
    jwt::Claims claims;
    std::string reason;
    bool pass = v.verify(tok, now, claims, reason);
    ok(pass, name, "refused: " + reason);
    if (out != nullptr)
        *out = claims;
}

// Refused, and for the expected reason (a substring of it): a tampered payload must fail on the
// signature, not by luck on something else.
void expect_refused(const jwt::Verifier &v, const std::string &tok, const std::string &why,
                    const std::string &name)
{
    jwt::Claims claims;
    std::string reason;
    bool accepted = v.verify(tok, now, claims, reason);
    bool pass = !accepted && reason.find(why) != std::string::npos && ERR_peek_error() == 0;
    ok(pass, name, accepted ? "accepted" : "reason \"" + reason + "\", expected \"" + why + "\"");
}

jwt::Config config(const std::string &secret, const std::string &jwks_json,
                   const std::string &issuer = "", const std::string &audience = "")
{
    jwt::Config c;
    if (!secret.empty())
        c.hs256_secrets.push_back(secret);
    c.jwks_json = jwks_json;
    c.issuer = issuer;
    c.audience = audience;
    return c;
}

void must_configure(jwt::Verifier &v, const jwt::Config &c)
{
    std::string error;
    if (!v.configure(c, error)) {
        std::fprintf(stderr, "configure: %s\n", error.c_str());
        std::exit(2);
    }
}

} // namespace

int main()
{
    now = static_cast<int64_t>(std::time(nullptr));

    EVP_PKEY *rsa1 = rsa_keygen(2048);
    EVP_PKEY *rsa2 = rsa_keygen(2048);
    EVP_PKEY *rsa_other = rsa_keygen(2048); // in no JWKS
    EVP_PKEY *rsa_small = rsa_keygen(1024);
    EVP_PKEY *ec1 = ec_keygen("P-256");
    EVP_PKEY *ec2 = ec_keygen("P-256");
    EVP_PKEY *ec_other = ec_keygen("P-256"); // in no JWKS
    EVP_PKEY *ec384 = ec_keygen("P-384");

    const std::string secret = "a-shared-secret-of-at-least-32-bytes!";
    const std::string other_secret = "another-shared-secret-of-32-bytes-or-more";
    const std::string keys_doc = jwks({rsa_jwk(rsa1, "r1"), rsa_jwk(rsa2, "r2", ",\"use\":\"sig\""),
                                       ec_jwk(ec1, "e1", ",\"alg\":\"ES256\""), ec_jwk(ec2, "e2")});

    jwt::Verifier v; // HS secret and the JWKS
    must_configure(v, config(secret, keys_doc));

    // --- configuration ---------------------------------------------------------------------------
    {
        jwt::Verifier c;
        std::string error;
        ok(c.configure(config(secret, keys_doc), error), "configure: secret and JWKS accepted",
           error);
        ok(!c.configure(config(std::string(31, 'x'), ""), error),
           "configure: HS256 secret of 31 bytes refused");
        expect_ok(c, token(hdr("HS256"), body(), hs(secret)),
                  "configure: a refused configuration keeps the previous one");
        ok(c.configure(config(std::string(32, 'x'), ""), error),
           "configure: HS256 secret of 32 bytes accepted", error);
        // Rotation: two keys at once, each verifies its own tokens; a short one refuses them all.
        jwt::Config both = config(secret, "");
        both.hs256_secrets.push_back(other_secret);
        ok(c.configure(both, error), "configure: two HS256 keys accepted", error);
        expect_ok(c, token(hdr("HS256"), body(), hs(secret)), "rotation: the first key verifies");
        expect_ok(c, token(hdr("HS256"), body(), hs(other_secret)),
                  "rotation: the second key verifies");
        both.hs256_secrets.push_back(std::string(31, 'y'));
        ok(!c.configure(both, error) && error.find("HS256 key 3 ") == 0,
           "configure: a short third key refused, named by its place", error);
        ok(!c.configure(config("", "not json"), error), "configure: JWKS not JSON refused");
        ok(!c.configure(config("", "{\"kid\":\"x\"}"), error),
           "configure: JWKS without keys array refused");
        ok(!c.configure(config("", "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\"}]}"), error),
           "configure: RSA JWK without e refused");
        ok(!c.configure(config("", jwks({rsa_jwk(rsa_small, "s")})), error),
           "configure: RSA key of 1024 bits refused", error);
        std::string off_curve = ec_jwk(ec1, "bad");
        {
            // Change y so that (x, y) is not on P-256.
            std::string y = bn_param(ec1, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
            y[31] = static_cast<char>(y[31] ^ 1);
            off_curve = "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" +
                        b64url(bn_param(ec1, OSSL_PKEY_PARAM_EC_PUB_X, 32)) + "\",\"y\":\"" +
                        b64url(y) + "\"}";
        }
        ok(!c.configure(config("", jwks({off_curve})), error),
           "configure: EC point not on the curve refused");
        std::string short_x = "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" +
                              b64url(bn_param(ec1, OSSL_PKEY_PARAM_EC_PUB_X, 32).substr(1)) +
                              "\",\"y\":\"" + b64url(bn_param(ec1, OSSL_PKEY_PARAM_EC_PUB_Y, 32)) +
                              "\"}";
        ok(!c.configure(config("", jwks({short_x})), error),
           "configure: EC coordinate of 31 bytes refused");
        ok(c.configure(config("", "{\"keys\":[]}"), error), "configure: empty key set accepted",
           error);
        ok(c.configure(
               config("", jwks({ec_jwk(ec384, "p384", "", "P-384", 48),
                                "{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}", rsa_jwk(rsa1, "r1")})),
               error),
           "configure: keys of other curves and types skipped", error);
        expect_ok(c, token(hdr("RS256", "r1"), body(), rs(rsa1)),
                  "configure: the usable key beside skipped ones verifies");
        jwt::Config neg = config(secret, "");
        neg.leeway_seconds = -1;
        ok(!c.configure(neg, error), "configure: negative leeway refused");
    }

    // --- valid tokens
    // -----------------------------------------------------------------------------
    {
        std::string payload = "{\"sub\":\"alice\",\"exp\":" + std::to_string(now + 3600) +
                              ",\"iat\":" + std::to_string(now) +
                              ",\"n\":42,\"neg\":-7,\"r\":1.5,\"b\":true,\"nul\":null,"
                              "\"o\":{\"a\":[1,2]},\"tenant\":\"acme\",\"name\":\"Zo\xC3\xAB\"}";
        jwt::Claims c;
        expect_ok(v, token(hdr("HS256"), payload, hs(secret)), "valid HS256", &c);
        ok(c.json == payload, "claims json is the compact payload", c.json);
        ok(c.scalars.size() == 8 && c.scalars["sub"] == "alice" && c.scalars["tenant"] == "acme" &&
               c.scalars["n"] == "42" && c.scalars["neg"] == "-7" && c.scalars["r"] == "1.5" &&
               c.scalars["exp"] == std::to_string(now + 3600) &&
               c.scalars["iat"] == std::to_string(now) && c.scalars["name"] == "Zo\xC3\xAB" &&
               c.scalars.count("b") == 0 && c.scalars.count("nul") == 0 &&
               c.scalars.count("o") == 0,
           "claims scalars: strings and numbers only, as text");
        expect_ok(v, token(hdr("RS256", "r1"), body(), rs(rsa1)), "valid RS256 (kid r1)");
        expect_ok(v, token(hdr("RS256", "r2"), body(), rs(rsa2)), "valid RS256 (kid r2, use sig)");
        expect_ok(v, token(hdr("ES256", "e1"), body(), es(ec1)), "valid ES256 (kid e1, alg ES256)");
        expect_ok(v, token(hdr("ES256", "e2"), body(), es(ec2)), "valid ES256 (kid e2)");
        // ECDSA signatures are randomised: several tokens exercise short r or s (leading zeros).
        bool all = true;
        std::string why;
        for (int i = 0; i < 50; i++) {
            jwt::Claims cl;
            std::string reason;
            if (!v.verify(token(hdr("ES256"), body(",\"i\":" + std::to_string(i)), es(ec1)), now,
                          cl, reason)) {
                all = false;
                why = reason;
            }
        }
        ok(all, "50 ES256 tokens verify", why);
    }

    // --- alg none and other algorithms
    // --------------------------------------------------------------
    {
        std::string input = b64url("{\"alg\":\"none\",\"typ\":\"JWT\"}") + "." + b64url(body());
        expect_refused(v, input + ".", "alg", "alg none, empty signature");
        expect_refused(v, input + "." + b64url(hmac_sha256(secret, input)), "alg",
                       "alg none with an HMAC signature");
        expect_refused(v, token(hdr("None"), body(), hs(secret)), "alg", "alg None");
        expect_refused(v, token(hdr("hs256"), body(), hs(secret)), "alg", "alg hs256 (case)");
        expect_refused(v, token(hdr("HS512"), body(), hs(secret)), "alg", "alg HS512");
        expect_refused(v, token(hdr("PS256", "r1"), body(), rs(rsa1)), "alg", "alg PS256");
        expect_refused(v, token("{\"typ\":\"JWT\"}", body(), hs(secret)), "no alg", "no alg");
        expect_refused(v, token("{\"alg\":256}", body(), hs(secret)), "no alg", "alg a number");
        expect_refused(v, token("{\"alg\":\"none\",\"alg\":\"HS256\"}", body(), hs(secret)),
                       "header", "duplicate alg in the header");
        expect_refused(v, token("{\"alg\":\"HS256\",\"crit\":[\"exp\"]}", body(), hs(secret)),
                       "crit", "crit header");
        expect_refused(v, token("{\"alg\":\"RS256\",\"kid\":1}", body(), rs(rsa1)), "kid",
                       "kid not a string");
    }

    // --- algorithm confusion: HS256 signed with the public key
    // ---------------------------------------
    {
        jwt::Verifier only_jwks;
        must_configure(only_jwks, config("", jwks({rsa_jwk(rsa1, "r1")})));
        std::string pem = public_pem(rsa1);
        std::string n_b64 = b64url(bn_param(rsa1, OSSL_PKEY_PARAM_RSA_N));
        std::string jwk = rsa_jwk(rsa1, "r1");
        expect_refused(only_jwks, token(hdr("HS256", "r1"), body(), hs(pem)), "no HS256 secret",
                       "confusion: HS256 keyed with the RSA PEM, no HS secret");
        expect_refused(only_jwks, token(hdr("HS256"), body(), hs(pem)), "no HS256 secret",
                       "confusion: HS256 keyed with the RSA PEM, no kid, no HS secret");
        expect_refused(only_jwks, token(hdr("HS256", "r1"), body(), hs(n_b64)), "no HS256 secret",
                       "confusion: HS256 keyed with the JWK n, no HS secret");
        expect_refused(only_jwks,
                       token(hdr("HS256", "r1"), body(), hs(bn_param(rsa1, OSSL_PKEY_PARAM_RSA_N))),
                       "no HS256 secret", "confusion: HS256 keyed with the raw modulus");
        expect_refused(only_jwks, token(hdr("HS256", "r1"), body(), hs(jwk)), "no HS256 secret",
                       "confusion: HS256 keyed with the JWK text");
        // The same tokens against a verifier that also has an HS256 secret (a different one).
        expect_refused(v, token(hdr("HS256", "r1"), body(), hs(pem)), "HS256 signature",
                       "confusion: HS256 keyed with the RSA PEM, other HS secret");
        expect_refused(v, token(hdr("HS256", "r1"), body(), hs(n_b64)), "HS256 signature",
                       "confusion: HS256 keyed with the JWK n, other HS secret");
        std::string ec_pem = public_pem(ec1);
        expect_refused(v, token(hdr("HS256", "e1"), body(), hs(ec_pem)), "HS256 signature",
                       "confusion: HS256 keyed with the EC PEM, other HS secret");
        // And the other way: an RS256 header over an HMAC made with the secret.
        expect_refused(v, token(hdr("RS256", "r1"), body(), hs(secret)), "does not verify",
                       "confusion: RS256 header, HMAC signature");
        // RS256 signature under an ES256 header and the reverse.
        expect_refused(v, token(hdr("ES256", "r1"), body(), rs(rsa1)), "ES256 signature",
                       "confusion: ES256 header, RSA signature");
        expect_refused(v, token(hdr("ES256", "r1"), body(), es(ec1)), "no JWKS key",
                       "confusion: ES256 header naming an RSA key");
        expect_refused(v, token(hdr("RS256", "e1"), body(), rs(rsa1)), "no JWKS key",
                       "confusion: RS256 header naming an EC key");
    }

    // --- wrong key, nothing configured
    // --------------------------------------------------------------
    {
        expect_refused(v, token(hdr("HS256"), body(), hs(other_secret)), "HS256 signature",
                       "wrong key: HS256 with another secret");
        expect_refused(v, token(hdr("RS256"), body(), rs(rsa_other)), "does not verify",
                       "wrong key: RS256 by a key outside the JWKS");
        expect_refused(v, token(hdr("RS256", "r1"), body(), rs(rsa_other)), "does not verify",
                       "wrong key: RS256 by a key outside the JWKS, kid r1");
        expect_refused(v, token(hdr("ES256"), body(), es(ec_other)), "does not verify",
                       "wrong key: ES256 by a key outside the JWKS");
        expect_refused(v, token(hdr("ES256", "e1"), body(), es(ec2)), "does not verify",
                       "wrong key: ES256 by e2 with kid e1");
        jwt::Verifier no_hs;
        must_configure(no_hs, config("", keys_doc));
        expect_refused(no_hs, token(hdr("HS256"), body(), hs(secret)), "no HS256 secret",
                       "HS256 refused when no secret is configured");
        jwt::Verifier no_jwks;
        must_configure(no_jwks, config(secret, ""));
        expect_refused(no_jwks, token(hdr("RS256", "r1"), body(), rs(rsa1)), "no JWKS key",
                       "RS256 refused when no JWKS is configured");
        expect_refused(no_jwks, token(hdr("ES256"), body(), es(ec1)), "no JWKS key",
                       "ES256 refused when no JWKS is configured");
        jwt::Verifier fresh;
        expect_refused(fresh, token(hdr("HS256"), body(), hs(secret)), "no HS256 secret",
                       "an unconfigured verifier refuses everything");
    }

    // --- tampering
    // ----------------------------------------------------------------------------------
    {
        struct Case {
            const char *name;
            std::string header;
            Signer signer;
        };
        std::vector<Case> cases = {{"HS256", hdr("HS256"), hs(secret)},
                                   {"RS256", hdr("RS256", "r1"), rs(rsa1)},
                                   {"ES256", hdr("ES256", "e1"), es(ec1)}};
        for (const Case &c : cases) {
            std::string good = token(c.header, body(",\"role\":\"reader\""), c.signer);
            std::string sig_b64 = good.substr(good.rfind('.') + 1);
            std::string forged =
                b64url(c.header) + "." + b64url(body(",\"role\":\"admin\"")) + "." + sig_b64;
            expect_refused(v, forged, "signature", std::string("tampered payload, ") + c.name);
            std::string sig = decode_sig(good);
            sig[sig.size() / 2] = static_cast<char>(sig[sig.size() / 2] ^ 0x01);
            expect_refused(v, with_signature(good, sig), "signature",
                           std::string("tampered signature, ") + c.name);
            std::string header2 = c.header.substr(0, c.header.size() - 1) + ",\"x\":1}";
            std::string reheadered = b64url(header2) + good.substr(good.find('.'));
            expect_refused(v, reheadered, "signature", std::string("tampered header, ") + c.name);
        }
        std::string good = token(hdr("HS256"), body(), hs(secret));
        expect_refused(v, with_signature(good, decode_sig(good).substr(0, 16)), "HS256 signature",
                       "truncated HS256 signature");
        expect_refused(v, with_signature(good, ""), "HS256 signature", "empty HS256 signature");
        std::string rsgood = token(hdr("RS256", "r1"), body(), rs(rsa1));
        expect_refused(v, with_signature(rsgood, decode_sig(rsgood) + std::string(1, '\0')),
                       "does not verify", "RS256 signature with a byte appended");
    }

    // --- ES256 signature forms
    // ----------------------------------------------------------------------
    {
        std::string good = token(hdr("ES256", "e1"), body(), es(ec1));
        std::string raw = decode_sig(good);
        ok(raw.size() == 64, "ES256 test signature is 64 bytes");
        expect_refused(v, with_signature(good, raw.substr(0, 63)), "64 bytes",
                       "ES256 signature of 63 bytes");
        expect_refused(v, with_signature(good, raw + std::string(1, '\0')), "64 bytes",
                       "ES256 signature of 65 bytes");
        expect_refused(v, with_signature(good, std::string(1, '\0') + raw), "64 bytes",
                       "ES256 signature of 65 bytes (leading zero)");
        expect_refused(v, token(hdr("ES256", "e1"), body(), es_der(ec1)), "64 bytes",
                       "ES256 DER signature refused");
        expect_refused(v, with_signature(good, std::string(64, '\0')), "does not verify",
                       "ES256 signature of zeros");
    }

    // --- time claims (leeway 30)
    // --------------------------------------------------------------------
    {
        auto at = [&](const std::string &claims) {
            return token(hdr("HS256"), "{\"sub\":\"alice\"" + claims + "}", hs(secret));
        };
        auto n = [&](int64_t d) { return std::to_string(now + d); };
        expect_refused(v, at(",\"exp\":" + n(-31)), "expired", "exp 31 s ago (beyond leeway)");
        expect_refused(v, at(",\"exp\":" + n(-3600)), "expired", "exp an hour ago");
        expect_refused(v, at(",\"exp\":" + n(-30)), "expired", "exp exactly leeway ago");
        expect_ok(v, at(",\"exp\":" + n(-29)), "exp 29 s ago (within leeway)");
        expect_ok(v, at(",\"exp\":" + n(100) + ".5"), "exp as a real number");
        expect_refused(v, at(",\"exp\":" + n(-100) + ".5"), "expired", "exp as a past real");
        expect_refused(v, at(""), "no exp", "missing exp");
        expect_refused(v, at(",\"exp\":\"" + n(3600) + "\""), "exp is not a number",
                       "exp as a string");
        expect_refused(v, at(",\"exp\":null"), "exp is not a number", "exp null");
        expect_ok(v, at(",\"exp\":9223372036854775807"), "exp at the largest integer");
        expect_refused(v, at(",\"exp\":" + n(3600) + ",\"nbf\":" + n(31)), "nbf",
                       "nbf in the future");
        expect_ok(v, at(",\"exp\":" + n(3600) + ",\"nbf\":" + n(30)), "nbf within leeway");
        expect_refused(v, at(",\"exp\":" + n(3600) + ",\"nbf\":\"0\""), "nbf", "nbf as a string");
        expect_refused(v, at(",\"exp\":" + n(3600) + ",\"iat\":" + n(31)), "iat",
                       "iat in the future");
        expect_ok(v, at(",\"exp\":" + n(3600) + ",\"iat\":" + n(30)), "iat within leeway");
        expect_refused(v, at(",\"exp\":" + n(3600) + ",\"iat\":true"), "iat", "iat a boolean");
        expect_refused(v, at(",\"exp\":" + n(3600) + ",\"exp\":" + n(-3600)), "payload",
                       "duplicate exp refused");

        jwt::Verifier strict;
        jwt::Config c = config(secret, "");
        c.leeway_seconds = 0;
        must_configure(strict, c);
        expect_refused(strict, at(",\"exp\":" + n(0)), "expired", "leeway 0: exp now refused");
        expect_ok(strict, at(",\"exp\":" + n(1)), "leeway 0: exp in a second accepted");
        expect_refused(strict, at(",\"exp\":" + n(60) + ",\"nbf\":" + n(1)), "nbf",
                       "leeway 0: nbf in a second refused");
    }

    // --- issuer and audience
    // ------------------------------------------------------------------------
    {
        jwt::Verifier ia;
        must_configure(ia, config(secret, keys_doc, "https://issuer.example", "querygate"));
        auto t = [&](const std::string &claims) {
            return token(hdr("RS256", "r1"), body(claims), rs(rsa1));
        };
        const std::string iss = ",\"iss\":\"https://issuer.example\"";
        expect_ok(ia, t(iss + ",\"aud\":\"querygate\""), "issuer and audience match");
        expect_refused(ia, t(",\"iss\":\"https://evil.example\",\"aud\":\"querygate\""), "iss",
                       "wrong issuer");
        expect_refused(ia, t(",\"iss\":\"https://issuer.example/\",\"aud\":\"querygate\""), "iss",
                       "issuer with a trailing slash");
        expect_refused(ia, t(",\"aud\":\"querygate\""), "iss", "missing issuer");
        expect_refused(ia, t(",\"iss\":7,\"aud\":\"querygate\""), "iss", "issuer a number");
        expect_refused(ia, t(iss + ",\"aud\":\"other\""), "aud", "wrong audience");
        expect_refused(ia, t(iss), "aud", "missing audience");
        expect_ok(ia, t(iss + ",\"aud\":[\"other\",\"querygate\"]"), "audience in an array");
        expect_refused(ia, t(iss + ",\"aud\":[\"other\",\"querygate2\"]"), "aud",
                       "audience array without ours");
        expect_refused(ia, t(iss + ",\"aud\":[]"), "aud", "empty audience array");
        expect_refused(ia, t(iss + ",\"aud\":[[\"querygate\"]]"), "aud",
                       "audience nested in an inner array");
        expect_ok(v, t(",\"iss\":42,\"aud\":{}"), "iss and aud unchecked when not configured");
    }

    // --- kid selection and key filters
    // --------------------------------------------------------------
    {
        expect_ok(v, token(hdr("RS256"), body(), rs(rsa2)), "no kid: RS256 tries every RSA key");
        expect_ok(v, token(hdr("ES256"), body(), es(ec2)), "no kid: ES256 tries every EC key");
        expect_refused(v, token(hdr("RS256", "r1"), body(), rs(rsa2)), "does not verify",
                       "kid r1 on a token signed by r2");
        expect_refused(v, token(hdr("RS256", "nope"), body(), rs(rsa1)), "kid",
                       "unknown kid refused (no fallback)");
        expect_refused(v, token("{\"alg\":\"RS256\",\"kid\":\"\"}", body(), rs(rsa1)), "kid",
                       "empty kid matches no key");

        jwt::Verifier nokid;
        must_configure(nokid, config("", jwks({rsa_jwk(rsa1, ""), ec_jwk(ec1, "")})));
        expect_ok(nokid, token(hdr("RS256"), body(), rs(rsa1)), "JWKS without kids, token without");
        expect_refused(nokid, token(hdr("RS256", "r1"), body(), rs(rsa1)), "kid",
                       "JWKS without kids, token with a kid");

        jwt::Verifier dup;
        must_configure(dup, config("", jwks({rsa_jwk(rsa1, "k"), rsa_jwk(rsa2, "k")})));
        expect_ok(dup, token(hdr("RS256", "k"), body(), rs(rsa2)),
                  "two keys share a kid: both tried");

        auto only = [&](const std::string &jwk) {
            auto p = std::make_unique<jwt::Verifier>();
            must_configure(*p, config("", jwks({jwk})));
            return p;
        };
        std::string tok = token(hdr("RS256", "r1"), body(), rs(rsa1));
        expect_refused(*only(rsa_jwk(rsa1, "r1", ",\"use\":\"enc\"")), tok, "no JWKS key",
                       "key with use enc not used");
        expect_refused(*only(rsa_jwk(rsa1, "r1", ",\"alg\":\"RS384\"")), tok, "no JWKS key",
                       "key with alg RS384 not used for RS256");
        expect_refused(*only(rsa_jwk(rsa1, "r1", ",\"alg\":\"ES256\"")), tok, "no JWKS key",
                       "RSA key with alg ES256 not used");
        expect_ok(*only(rsa_jwk(rsa1, "r1", ",\"alg\":\"RS256\",\"use\":\"sig\"")), tok,
                  "key with alg RS256 and use sig used");
        expect_refused(*only(rsa_jwk(rsa1, "r1", ",\"key_ops\":[\"encrypt\"]")), tok, "no JWKS key",
                       "key with key_ops without verify not used");
        expect_ok(*only(rsa_jwk(rsa1, "r1", ",\"key_ops\":[\"verify\"]")), tok,
                  "key with key_ops verify used");
        expect_refused(*only(ec_jwk(ec1, "e1", ",\"alg\":\"ES384\"")),
                       token(hdr("ES256", "e1"), body(), es(ec1)), "no JWKS key",
                       "EC key with alg ES384 not used for ES256");
    }

    // --- malformed tokens
    // ---------------------------------------------------------------------------
    {
        std::string good = token(hdr("HS256"), body(), hs(secret));
        std::size_t d1 = good.find('.'), d2 = good.rfind('.');
        expect_ok(v, good, "the token the malformed ones come from is valid");
        expect_refused(v, "", "three", "empty token");
        expect_refused(v, good.substr(0, d2), "three", "two parts");
        expect_refused(v, good + ".", "three", "four parts");
        expect_refused(v, good + "." + good.substr(d1 + 1), "three", "five parts (JWE shape)");
        expect_refused(v, "+" + good.substr(1), "base64url", "'+' in the header");
        expect_refused(v, good + "=", "base64url", "padding on the signature");
        expect_refused(v, good.substr(0, d2 + 1) + "/" + good.substr(d2 + 2), "base64url",
                       "'/' in the signature");
        expect_refused(
            v, good.substr(0, d1) + "." + good.substr(d1 + 1, 5) + " " + good.substr(d1 + 6),
            "signature", "space in the payload");
        expect_refused(
            v, good.substr(0, d1) + "." + good.substr(d1 + 1, 5) + "*" + good.substr(d1 + 7),
            "signature", "invalid character in the payload");
        {
            // Bad characters in a payload that is signed as it is: refused by the decoder.
            std::string h = b64url(hdr("HS256")), p = b64url(body());
            for (const char *bad : {" ", "*", "+", "/", "="}) {
                std::string input = h + "." + p.substr(0, 8) + bad + p.substr(8);
                expect_refused(v, input + "." + b64url(hmac_sha256(secret, input)),
                               "payload is not valid base64url",
                               std::string("'") + bad + "' in a signed payload");
            }
        }
        // 32 bytes encode as 43 characters whose last one carries 2 unused bits: setting one gives
        // another spelling of the same bytes, which must be refused.
        {
            static const std::string alphabet =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            std::string bad = good;
            char &last = bad.back();
            last = alphabet[alphabet.find(last) ^ 1];
            expect_refused(v, bad, "base64url", "non-canonical base64url (unused bits set)");
        }
        {
            // A payload whose base64url length is 1 mod 4 is never valid; signed anyway.
            std::string input = b64url(hdr("HS256")) + ".AAAAA";
            expect_refused(v, input + "." + b64url(hmac_sha256(secret, input)), "payload",
                           "payload of impossible base64url length");
        }
        expect_refused(v, token("{alg:HS256}", body(), hs(secret)), "header", "header not JSON");
        expect_refused(v, token("[\"HS256\"]", body(), hs(secret)), "header",
                       "header a JSON array");
        expect_refused(v, token("\"HS256\"", body(), hs(secret)), "header", "header a JSON string");
        expect_refused(v, token(hdr("HS256") + "x", body(), hs(secret)), "header",
                       "header with trailing garbage");
        expect_refused(v, token(hdr("HS256"), "[" + body() + "]", hs(secret)), "payload",
                       "payload a JSON array (signed)");
        expect_refused(v, token(hdr("HS256"), "not json", hs(secret)), "payload",
                       "payload not JSON (signed)");
        expect_refused(v, token(hdr("HS256"), body(",\"x\":\"a\\u0000b\""), hs(secret)), "payload",
                       "payload with a NUL in a string (signed)");
        expect_refused(v, token(hdr("HS256"), body(",\"x\":\"\xFF\""), hs(secret)), "payload",
                       "payload not UTF-8 (signed)");
        expect_refused(v, token(hdr("RS256", "r1"), "[1]", rs(rsa1)), "payload",
                       "RS256 payload a JSON array (signed)");

        // Size: a valid token of exactly 8192 bytes passes, one byte more does not.
        std::string at_limit, over_limit;
        for (int fill = 5900; fill < 6200 && (at_limit.empty() || over_limit.empty()); fill++) {
            for (int kid = 1; kid <= 3; kid++) {
                std::string t =
                    token(hdr("HS256", std::string(kid, 'k')),
                          body(",\"pad\":\"" + std::string(fill, 'p') + "\""), hs(secret));
                if (t.size() == 8192 && at_limit.empty())
                    at_limit = t;
                if (t.size() == 8193 && over_limit.empty())
                    over_limit = t;
            }
        }
        ok(at_limit.size() == 8192 && over_limit.size() == 8193, "size test tokens built");
        expect_ok(v, at_limit, "token of 8192 bytes accepted");
        expect_refused(v, over_limit, "longer than 8192", "token of 8193 bytes refused");
        expect_refused(
            v,
            token(hdr("HS256"), body(",\"pad\":\"" + std::string(100000, 'p') + "\""), hs(secret)),
            "longer than 8192", "token of 130 KB refused");
    }

    EVP_PKEY_free(rsa1);
    EVP_PKEY_free(rsa2);
    EVP_PKEY_free(rsa_other);
    EVP_PKEY_free(rsa_small);
    EVP_PKEY_free(ec1);
    EVP_PKEY_free(ec2);
    EVP_PKEY_free(ec_other);
    EVP_PKEY_free(ec384);

    return tap::done();
}
