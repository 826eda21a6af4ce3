// Fuzzes compact JWS verification and JWKS loading (src/auth/jwt). One Verifier per configuration,
// configured once: "plain" with an HS256 secret and a JWKS of the keys below (RS256 and ES256, and
// two keys it must skip), "strict" with the same and an issuer and an audience. The input's first
// byte picks what is fuzzed:
//   'T' token            the rest is a token, verified by both;
//   'H', 'E' or 'R'      the rest is "header JSON\npayload JSON", which this target encodes and
//                        signs (HS256 with the secret, ES256 or RS256 with the keys below), so
//                        fuzzed headers and payloads get past the signature;
//   'K' jwks\ntoken      a third Verifier, configured well, is reconfigured with that JWKS, then
//                        verifies the token;
//   anything else        the whole input is a token.
// Oracles: a verified token has three parts, a header with alg HS256, RS256 or ES256 and no crit,
// a payload object with an exp not past (30 s leeway) whose compact JSON the claims hold and whose
// string and number members are the scalars, and iss and aud when configured; a token this target
// signed verifies only under the alg it was signed with and a kid naming its key (no algorithm
// confusion), and does verify when its header and payload are plainly valid; a JWKS that is
// refused leaves the previous configuration working.
//
// The keys were generated once for this target with `openssl genpkey` (EC P-256, RSA 2048). They
// sign nothing but fuzz inputs.
#include "auth/jwt.hpp"

#include "fuzz_check.hpp"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace {

const int64_t now = 1700000000; // 2023-11-14; the seed tokens expire in 2096
const int leeway = 30;
const char hs256_secret[] = "querygate-fuzz-hs256-secret-0123456789abcdef";
const char issuer[] = "https://issuer.example";
const char audience[] = "querygate";

const char ec_pem[] = R"(
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgB96dIL20Y3mQUaqc
IObPkkuwq8eL5FmbHMbB73BY60uhRANCAAStJvdnxCVuoUEm/EcXYcTtQ6bsl0Hq
LEC6TdoZjefQhFvMj3hobhsK8d1sa6I5bBiQ7jEu0jkVQl88IdZvZEg8
-----END PRIVATE KEY-----
)";

const char rsa_pem[] = R"(
-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC3g7etkNfCKOl4
d7aERUVrWZr6WUidj4qL9XDApQtvkuGgf9PNzrHbf/W/7qtrkjzaxjv3o8OrgEeO
qZ8CLaJ+BpUxJ5XEuCiy89t7ps6SGbtj3O0AzGdl7/AL5ns7db+19bJkwJDaBxCj
1TZSk5Hj8mNlpp2GCUA7VF98ces4FnVnV+eCnQ0LpzU59Bcwdx2JFGqwP078sC75
dbnBTp/TMcOwimvsv19XOFvk4bggcmQM+X9PmRRHnd3k4TF8RXPOLHMLj4uMoAtz
U7gd4OwOurd4Nmx8eRvuSYeTcnbUI6VIJK0oIlJzjXH97HcZx0AtXxQ6Z2TAQHKI
CeHSS9epAgMBAAECggEAAWBq8zG+FponNzTBsSASZ13gll5vV6Q9JDPjBMTwLyX1
TJaM5JM3fReqhKYyEcBi9bqtNjw7omiX0NOHqnTkbkjXG2tqOZOulXoUFEtB6zFn
eRYuDnaaE3cPcE1qMP3fAmrNi+kwZPxO1QXLTqcF/gViVr+/WIMvAMrvHPA/VRg9
vu1/KmyW7zQGxF18NeV/sW8qQ0K6CysJmGmEqckPuEgfGg26V9EQhoaxcoEPp45e
CVjfpzHhaLBqZCujvhQj46ZlfUrXX33tdTSRsbUuWnA3tND9JtWui1EOOx9OVDGq
iWV871T5ySL2+YRNK/Y3WTd4jyoOuTL6/Obr1qiEsQKBgQD8KteLaG8FMGeU4mfX
yTrCi5XoCop1QEDCbo/8dt2tMczikvak1QKcyFuu2tUCmUKCaXFIovTkm61m1FfH
ouxcxMP4dkC2hXjKgdYxXqkCd0AbgF6Qyzy1IF/La1HfVNcv1Esw5Ril2f3CiAR9
RyeGtBTh9xKkFyBQ0KG+PEFd2QKBgQC6TcETcAf2IS0Gp7zlUJsD3oUcsIRUfGjH
G/1T8mMlWjPtU4+JGoTt/bogeMOHtWPGcxYs4AuPg2oTsSnXWOvBSr16riFgzGpj
To4tO927DhoBS8Xo7rPnv7yJnoHcsC8c9le32R4NIqQhgiEoOaey/+zok1TPoMC9
/ohdFaCWUQKBgEO2RVa73kPocYf7G6NH961Ryhka6378l+cdxTAnwvLE0p1slSpB
wIfVDTlwrY4bFU7rfW3hxBy26OMZ1dBXoVxvwaewKURZpsvJ/XgYUQ3Gc8Juv/Xl
fRGt9csrsDpmD7paKS6h9fJjDM71sy7osmZraMgcjjbdtuG8hBIPIAZRAoGAC68A
osVt2mOuPTKbyA3MCuwTkP8I7Xt33rTEqFUVHqyPgRyybbi6CWrWF187c/FONo3V
IC9UykVFi8KaiyTKdC7Jvz3YXgezzFKK3A9bEnYJ73bfDIKbybbejgrgvgRWkAxq
59634b8AaBGPHsSu3azrIJLMyNCeBcxGpP/MOGECgYEAgRI9zUfg2F5gsnvSeaMI
Pffq9pC6NabaNvfJs/pEgL233fIu9nHGoNKiQtXc3s55oO3AtKw06C2mqBtGjHAf
NtX/YYPl3LPMkHhno6pKYej9FKQuYQ6Wg3Kb2FN+j5zwPeTUtE8o+v6RHE7xHrGg
rh6cqXIG7i6e4rUEKl9+Sp8=
-----END PRIVATE KEY-----
)";

struct JsonDeleter {
    void operator()(json_t *j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

JsonPtr load_json(std::string_view text)
{
    json_error_t err;
    return JsonPtr(json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &err));
}

std::string b64url(std::string_view in)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    unsigned acc = 0;
    int bits = 0;
    for (unsigned char c : in) {
        acc = (acc << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += alphabet[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        out += alphabet[(acc << (6 - bits)) & 63];
    return out;
}

// Lenient (padding and stray bits ignored): only for reading back tokens that verified.
bool b64url_decode(std::string_view in, std::string &out)
{
    out.clear();
    unsigned acc = 0;
    int bits = 0;
    for (char ch : in) {
        const char *p =
            std::strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", ch);
        if (ch == '\0' || p == nullptr)
            return false;
        acc = (acc << 6) |
              static_cast<unsigned>(
                  p - "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    return true;
}

EVP_PKEY *read_key(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    FUZZ_CHECK(key != nullptr);
    return key;
}

std::string bn_param(EVP_PKEY *key, const char *name)
{
    BIGNUM *bn = nullptr;
    FUZZ_CHECK(EVP_PKEY_get_bn_param(key, name, &bn) == 1);
    std::string bytes(static_cast<size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char *>(&bytes[0]));
    BN_free(bn);
    return b64url(bytes);
}

struct Setup {
    EVP_PKEY *ec = read_key(ec_pem);
    EVP_PKEY *rsa = read_key(rsa_pem);
    std::string jwks;
    jwt::Verifier plain, strict, scratch;
    jwt::Config plain_config;
    std::string good_hs256, good_es256; // tokens valid for the plain configuration

    Setup()
    {
        unsigned char point[65];
        size_t point_len = 0;
        FUZZ_CHECK(EVP_PKEY_get_octet_string_param(ec, OSSL_PKEY_PARAM_PUB_KEY, point,
                                                   sizeof(point), &point_len) == 1 &&
                   point_len == 65);
        std::string x = b64url(std::string_view(reinterpret_cast<char *>(point) + 1, 32));
        std::string y = b64url(std::string_view(reinterpret_cast<char *>(point) + 33, 32));
        std::string n = bn_param(rsa, OSSL_PKEY_PARAM_RSA_N);
        std::string e = bn_param(rsa, OSSL_PKEY_PARAM_RSA_E);
        jwks = R"({"keys":[{"kty":"RSA","kid":"rsa-1","use":"sig","alg":"RS256","n":")" + n +
               R"(","e":")" + e + R"("},{"kty":"EC","kid":"ec-1","crv":"P-256","x":")" + x +
               R"(","y":")" + y + R"("},{"kty":"RSA","kid":"enc-1","use":"enc","n":")" + n +
               R"(","e":")" + e + R"("},{"kty":"oct","kid":"oct-1","k":"c2VjcmV0"}]})";
        plain_config.hs256_secrets = {hs256_secret};
        plain_config.jwks_json = jwks;
        plain_config.leeway_seconds = leeway;
        jwt::Config strict_config = plain_config;
        strict_config.issuer = issuer;
        strict_config.audience = audience;
        std::string error;
        FUZZ_CHECK(plain.configure(plain_config, error));
        FUZZ_CHECK(strict.configure(strict_config, error));
        good_hs256 = sign('H', R"({"alg":"HS256"})", R"({"exp":4000000000,"sub":"fuzz"})");
        good_es256 = sign('E', R"({"alg":"ES256","kid":"ec-1"})", R"({"exp":4000000000})");
        if (std::getenv("QUERYGATE_FUZZ_PRINT_JWKS") != nullptr) // to write seeds
            std::printf("%s\n", jwks.c_str());
    }

    std::string signature(char alg, std::string_view input) const
    {
        if (alg == 'H') {
            unsigned char mac[EVP_MAX_MD_SIZE];
            unsigned int len = 0;
            FUZZ_CHECK(HMAC(EVP_sha256(), hs256_secret, sizeof(hs256_secret) - 1,
                            reinterpret_cast<const unsigned char *>(input.data()), input.size(),
                            mac, &len) != nullptr);
            return std::string(reinterpret_cast<char *>(mac), len);
        }
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        size_t len = 0;
        FUZZ_CHECK(EVP_DigestSignInit_ex(ctx, nullptr, "SHA256", nullptr, nullptr,
                                         alg == 'E' ? ec : rsa, nullptr) == 1);
        FUZZ_CHECK(EVP_DigestSign(ctx, nullptr, &len,
                                  reinterpret_cast<const unsigned char *>(input.data()),
                                  input.size()) == 1);
        std::string sig(len, '\0');
        FUZZ_CHECK(EVP_DigestSign(ctx, reinterpret_cast<unsigned char *>(&sig[0]), &len,
                                  reinterpret_cast<const unsigned char *>(input.data()),
                                  input.size()) == 1);
        EVP_MD_CTX_free(ctx);
        sig.resize(len);
        if (alg == 'R')
            return sig;
        // ES256 in JWS is r || s, 32 bytes each; OpenSSL signs DER.
        const unsigned char *p = reinterpret_cast<const unsigned char *>(sig.data());
        ECDSA_SIG *ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
        FUZZ_CHECK(ecdsa != nullptr);
        unsigned char rs[64];
        FUZZ_CHECK(BN_bn2binpad(ECDSA_SIG_get0_r(ecdsa), rs, 32) == 32 &&
                   BN_bn2binpad(ECDSA_SIG_get0_s(ecdsa), rs + 32, 32) == 32);
        ECDSA_SIG_free(ecdsa);
        return std::string(reinterpret_cast<char *>(rs), 64);
    }

    std::string sign(char alg, std::string_view header, std::string_view payload) const
    {
        std::string input = b64url(header) + "." + b64url(payload);
        return input + "." + b64url(signature(alg, input));
    }
};

Setup &setup()
{
    static Setup s;
    return s;
}

const char *alg_of(char mode)
{
    return mode == 'H' ? "HS256" : mode == 'E' ? "ES256" : "RS256";
}

// now < t + leeway and t - leeway <= now, in exact arithmetic.
bool not_expired(const json_t *t)
{
    if (json_is_integer(t))
        return static_cast<__int128>(now) < static_cast<__int128>(json_integer_value(t)) + leeway;
    return static_cast<double>(now) < json_real_value(t) + leeway;
}
bool not_in_future(const json_t *t)
{
    if (json_is_integer(t))
        return static_cast<__int128>(json_integer_value(t)) - leeway <= now;
    return json_real_value(t) - leeway <= static_cast<double>(now);
}

bool has_string(const json_t *v, const char *s)
{
    return json_is_string(v) &&
           std::string_view(json_string_value(v), json_string_length(v)) == std::string_view(s);
}

bool aud_matches(const json_t *aud)
{
    if (!json_is_array(aud))
        return has_string(aud, audience);
    size_t i;
    json_t *v;
    json_array_foreach(aud, i, v)
    {
        if (has_string(v, audience))
            return true;
    }
    return false;
}

// What a verified token must be.
void check_verified(std::string_view token, const jwt::Claims &claims, bool strict)
{
    FUZZ_CHECK(token.size() <= 8192);
    size_t dot1 = token.find('.'), dot2 = token.find('.', dot1 + 1);
    FUZZ_CHECK(dot1 != std::string_view::npos && dot2 != std::string_view::npos &&
               token.find('.', dot2 + 1) == std::string_view::npos);
    std::string header_text, payload_text;
    FUZZ_CHECK(b64url_decode(token.substr(0, dot1), header_text));
    FUZZ_CHECK(b64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), payload_text));
    JsonPtr header = load_json(header_text), payload = load_json(payload_text);
    FUZZ_CHECK(header && json_is_object(header.get()));
    const json_t *alg = json_object_get(header.get(), "alg");
    FUZZ_CHECK(has_string(alg, "HS256") || has_string(alg, "RS256") || has_string(alg, "ES256"));
    FUZZ_CHECK(json_object_get(header.get(), "crit") == nullptr);
    FUZZ_CHECK(payload && json_is_object(payload.get()));
    const json_t *p = payload.get();
    const json_t *exp = json_object_get(p, "exp");
    FUZZ_CHECK(json_is_number(exp) && not_expired(exp));
    for (const char *name : {"nbf", "iat"}) {
        const json_t *t = json_object_get(p, name);
        FUZZ_CHECK(t == nullptr || (json_is_number(t) && not_in_future(t)));
    }
    if (strict) {
        FUZZ_CHECK(has_string(json_object_get(p, "iss"), issuer));
        FUZZ_CHECK(aud_matches(json_object_get(p, "aud")));
    }
    JsonPtr written = load_json(claims.json);
    FUZZ_CHECK(written && json_equal(written.get(), payload.get()));
    size_t scalars = 0;
    const char *name;
    json_t *value;
    json_object_foreach(payload.get(), name, value)
    {
        auto it = claims.scalars.find(name);
        if (json_is_string(value)) {
            scalars++;
            FUZZ_CHECK(it != claims.scalars.end() && has_string(value, it->second.c_str()));
        } else if (json_is_number(value)) {
            scalars++;
            FUZZ_CHECK(it != claims.scalars.end() && !it->second.empty());
        }
    }
    FUZZ_CHECK(claims.scalars.size() == scalars);
}

// Verifies with one Verifier; returns whether it verified, after checking what that implies.
bool verify(const jwt::Verifier &verifier, std::string_view token, bool strict)
{
    jwt::Claims claims;
    std::string reason;
    bool ok = verifier.verify(token, now, claims, reason);
    if (ok)
        check_verified(token, claims, strict);
    else
        FUZZ_CHECK(!reason.empty());
    return ok;
}

// A token signed here: verified only under its own alg and key, and verified whenever its header
// and payload are plainly valid.
void signed_token(char mode, std::string_view rest)
{
    size_t nl = rest.find('\n');
    std::string_view header_text = rest.substr(0, nl);
    std::string_view payload_text =
        nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    std::string token = setup().sign(mode, header_text, payload_text);

    JsonPtr header = load_json(header_text), payload = load_json(payload_text);
    const json_t *kid = header ? json_object_get(header.get(), "kid") : nullptr;
    const char *own_kid = mode == 'H' ? nullptr : mode == 'E' ? "ec-1" : "rsa-1";
    bool header_ok =
        header && json_is_object(header.get()) &&
        has_string(json_object_get(header.get(), "alg"), alg_of(mode)) &&
        json_object_get(header.get(), "crit") == nullptr &&
        (kid == nullptr || (json_is_string(kid) && (mode == 'H' || has_string(kid, own_kid))));
    const json_t *p = payload ? payload.get() : nullptr;
    bool payload_ok = p != nullptr && json_is_object(p) &&
                      json_is_number(json_object_get(p, "exp")) &&
                      not_expired(json_object_get(p, "exp"));
    for (const char *name : {"nbf", "iat"}) {
        const json_t *t = p ? json_object_get(p, name) : nullptr;
        payload_ok = payload_ok && (t == nullptr || (json_is_number(t) && not_in_future(t)));
    }
    bool claims_ok = payload_ok && has_string(json_object_get(p, "iss"), issuer) &&
                     aud_matches(json_object_get(p, "aud"));
    bool short_enough = token.size() <= 8192;

    for (bool strict : {false, true}) {
        bool ok = verify(strict ? setup().strict : setup().plain, token, strict);
        if (ok) {
            FUZZ_CHECK(has_string(json_object_get(header.get(), "alg"), alg_of(mode)));
            FUZZ_CHECK(kid == nullptr || mode == 'H' || has_string(kid, own_kid));
        }
        if (header_ok && payload_ok && short_enough && (!strict || claims_ok))
            FUZZ_CHECK(ok);
    }
}

// A JWKS from the input: a refused one keeps the configuration that was there.
void jwks(std::string_view rest)
{
    Setup &s = setup();
    size_t nl = rest.find('\n');
    jwt::Config config = s.plain_config;
    config.jwks_json = std::string(rest.substr(0, nl));
    std::string token(nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1));
    std::string error;
    FUZZ_CHECK(s.scratch.configure(s.plain_config, error));
    error.clear();
    bool configured = s.scratch.configure(config, error);
    FUZZ_CHECK(configured == error.empty());
    FUZZ_CHECK(verify(s.scratch, s.good_hs256, false));
    if (!configured)
        FUZZ_CHECK(verify(s.scratch, s.good_es256, false));
    verify(s.scratch, token, false);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::string_view input(reinterpret_cast<const char *>(data), size);
    char mode = size > 0 ? input[0] : '\0';
    std::string_view rest = size > 0 ? input.substr(1) : input;
    switch (mode) {
    case 'H':
    case 'E':
    case 'R':
        signed_token(mode, rest);
        break;
    case 'K':
        jwks(rest);
        break;
    default: {
        std::string_view token = mode == 'T' ? rest : input;
        verify(setup().plain, token, false);
        verify(setup().strict, token, true);
    }
    }
    return 0;
}
