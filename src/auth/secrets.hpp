// Key secrets: generation, encoding and hashing (OpenSSL). Pure C++, no PostgreSQL header, nothing
// that throws: callable from PostgreSQL-style code without crossing the boundary. (The hashes keep
// OpenSSL's algorithm and context from their first call for the process's life: secrets.cpp.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace secrets {

constexpr const char *key_prefix = "qg_";
constexpr std::size_t key_random_bytes = 32;                                // 256 bits
constexpr std::size_t key_text_length = 3 + (key_random_bytes * 4 + 2) / 3; // "qg_" + 43
constexpr std::size_t sha256_length = 32;

// Writes a new secret ("qg_" + 43 base64url characters) and a NUL into out[key_text_length + 1].
// Returns false if the system's random source failed.
bool new_key(char *out);

// Fills out with n bytes from OpenSSL's CSPRNG; false if it failed.
bool random_bytes(unsigned char *out, std::size_t n);

void sha256(const void *data, std::size_t len, unsigned char out[sha256_length]);

// HMAC-SHA-256 of data under key.
void hmac_sha256(const void *key, std::size_t key_len, const void *data, std::size_t len,
                 unsigned char out[sha256_length]);

// Lower-case hex of len bytes into out[2 * len + 1].
void to_hex(const unsigned char *data, std::size_t len, char *out);

// Whether a presented secret is the expected one, in time that depends on neither (both are
// hashed first, so not even the length shows).
bool same_secret(std::string_view presented, std::string_view expected);

// Overwrites each secret's bytes, then empties the vector.
void wipe(std::vector<std::string> &secrets);

} // namespace secrets
