// Key secrets. The randomness comes from OpenSSL's CSPRNG (RAND_bytes), the hash from OpenSSL's
// SHA-256: well-kept implementations, never our own.
#include "auth/secrets.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <climits>
#include <cstring>

namespace secrets {

namespace {

const char base64url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// Unpadded base64url; out must hold (len * 4 + 2) / 3 characters plus a NUL.
void base64url(const unsigned char *in, std::size_t len, char *out)
{
    std::size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        unsigned v = (in[i] << 16) | (in[i + 1] << 8) | in[i + 2];
        out[o++] = base64url_alphabet[(v >> 18) & 63];
        out[o++] = base64url_alphabet[(v >> 12) & 63];
        out[o++] = base64url_alphabet[(v >> 6) & 63];
        out[o++] = base64url_alphabet[v & 63];
    }
    if (len - i == 1) {
        unsigned v = in[i] << 16;
        out[o++] = base64url_alphabet[(v >> 18) & 63];
        out[o++] = base64url_alphabet[(v >> 12) & 63];
    } else if (len - i == 2) {
        unsigned v = (in[i] << 16) | (in[i + 1] << 8);
        out[o++] = base64url_alphabet[(v >> 18) & 63];
        out[o++] = base64url_alphabet[(v >> 12) & 63];
        out[o++] = base64url_alphabet[(v >> 6) & 63];
    }
    out[o] = '\0';
}

// OpenSSL 3's one-shot SHA256() and HMAC() look their algorithm up, and allocate and free a
// context, on every call (EVP_Q_digest, EVP_Q_mac). A worker hashes the presented key on every
// call and every value of a hashed column it serves, so each algorithm is fetched once per
// process and one context kept (a worker has one thread). Should a fetch or an allocation fail,
// the one-shot functions are used instead: slower, the same result.
struct Digest {
    EVP_MD *md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
};

Digest &digest()
{
    static Digest d;
    return d;
}

// The HMAC context keeps the last key it was given: the mask secret, the same for every value.
struct Mac {
    EVP_MAC *mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX *ctx = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
    unsigned char key[64]; // keys longer than a block are hashed first (hmac_sha256)
    std::size_t key_len = 0;
    bool keyed = false; // ctx holds key[0, key_len)
};

Mac &mac()
{
    static Mac m;
    return m;
}

bool hmac_with_context(const void *key, std::size_t key_len, const void *data, std::size_t len,
                       unsigned char out[sha256_length])
{
    Mac &m = mac();
    if (m.ctx == nullptr || key_len > sizeof(m.key))
        return false;
    const bool same = m.keyed && m.key_len == key_len && std::memcmp(m.key, key, key_len) == 0;
    if (same) {
        // A NULL key starts a new message under the key the context already holds.
        if (EVP_MAC_init(m.ctx, nullptr, 0, nullptr) != 1)
            return false;
    } else {
        m.keyed = false;
        char sha256_name[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha256_name, 0),
            OSSL_PARAM_construct_end()};
        if (EVP_MAC_init(m.ctx, static_cast<const unsigned char *>(key), key_len, params) != 1)
            return false;
        std::memcpy(m.key, key, key_len);
        m.key_len = key_len;
        m.keyed = true;
    }
    std::size_t out_len = 0;
    return EVP_MAC_update(m.ctx, static_cast<const unsigned char *>(data), len) == 1 &&
           EVP_MAC_final(m.ctx, out, &out_len, sha256_length) == 1 && out_len == sha256_length;
}

} // namespace

bool new_key(char *out)
{
    unsigned char raw[key_random_bytes];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return false;
    std::size_t plen = std::strlen(key_prefix);
    std::memcpy(out, key_prefix, plen);
    base64url(raw, sizeof(raw), out + plen);
    OPENSSL_cleanse(raw, sizeof(raw));
    return true;
}

bool random_bytes(unsigned char *out, std::size_t n)
{
    if (n > static_cast<std::size_t>(INT_MAX)) // OpenSSL counts in int
        return false;
    return RAND_bytes(out, static_cast<int>(n)) == 1;
}

void sha256(const void *data, std::size_t len, unsigned char out[sha256_length])
{
    Digest &d = digest();
    unsigned int out_len = 0;
    if (d.md != nullptr && d.ctx != nullptr && EVP_DigestInit_ex2(d.ctx, d.md, nullptr) == 1 &&
        EVP_DigestUpdate(d.ctx, data, len) == 1 && EVP_DigestFinal_ex(d.ctx, out, &out_len) == 1 &&
        out_len == sha256_length)
        return;
    SHA256(static_cast<const unsigned char *>(data), len, out);
}

void hmac_sha256(const void *key, std::size_t key_len, const void *data, std::size_t len,
                 unsigned char out[sha256_length])
{
    // A key longer than SHA-256's block is replaced by its hash (RFC 2104, as HMAC itself does),
    // here rather than by OpenSSL: its int length would wrap for a key of 2^31 bytes or more.
    unsigned char hashed[sha256_length];
    if (key_len > 64) {
        sha256(key, key_len, hashed);
        key = hashed;
        key_len = sha256_length;
    }
    if (hmac_with_context(key, key_len, data, len, out))
        return;
    unsigned int out_len = sha256_length;
    HMAC(EVP_sha256(), key, static_cast<int>(key_len), static_cast<const unsigned char *>(data),
         len, out, &out_len);
}

void to_hex(const unsigned char *data, std::size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < len; i++) {
        out[2 * i] = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 15];
    }
    out[2 * len] = '\0';
}

bool same_secret(std::string_view presented, std::string_view expected)
{
    unsigned char a[sha256_length], b[sha256_length];
    sha256(presented.data(), presented.size(), a);
    sha256(expected.data(), expected.size(), b);
    return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

void wipe(std::vector<std::string> &secrets)
{
    for (std::string &s : secrets)
        if (!s.empty())
            OPENSSL_cleanse(&s[0], s.size());
    secrets.clear();
}

} // namespace secrets
