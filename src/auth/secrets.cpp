// Key secrets. The randomness comes from OpenSSL's CSPRNG (RAND_bytes), the hash from OpenSSL's
// SHA-256: well-kept implementations, never our own.
#include "auth/secrets.hpp"

#include <openssl/hmac.h>
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

} // namespace secrets
