// Tests of src/auth/secrets.cpp: key generation ("qg_" + 43 base64url characters of 32 random
// bytes), random bytes, SHA-256 and HMAC-SHA-256 against published test vectors (FIPS 180-2,
// RFC 4231), and lower-case hex. Buffers carry guard bytes: nothing is written past its end.
#include "auth/secrets.hpp"
#include "tap.hpp"

#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

using tap::is;
using tap::ok;

const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string hex(const unsigned char *data, std::size_t len)
{
    std::string out(2 * len + 1, '\0');
    secrets::to_hex(data, len, &out[0]);
    out.resize(2 * len);
    return out;
}

std::string sha256(const std::string &data)
{
    unsigned char out[secrets::sha256_length];
    secrets::sha256(data.data(), data.size(), out);
    return hex(out, sizeof(out));
}

std::string hmac(const std::string &key, const std::string &data)
{
    unsigned char out[secrets::sha256_length];
    secrets::hmac_sha256(key.data(), key.size(), data.data(), data.size(), out);
    return hex(out, sizeof(out));
}

// The 32 bytes a key's 43 characters encode (test-side decoder).
std::string decode_key(const char *key)
{
    std::string out;
    unsigned acc = 0;
    int bits = 0;
    for (const char *c = key + 3; *c; c++) {
        acc = (acc << 6) | static_cast<unsigned>(alphabet.find(*c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xFF));
        }
    }
    return out;
}

void constants()
{
    is(std::string(secrets::key_prefix), "qg_", "key_prefix is qg_");
    is(secrets::key_random_bytes, 32u, "keys carry 32 random bytes");
    is(secrets::key_text_length, 46u, "a key is 46 characters: qg_ and 43");
    is(secrets::sha256_length, 32u, "SHA-256 is 32 bytes");
}

void keys()
{
    char key[secrets::key_text_length + 1 + 8];
    std::memset(key, '#', sizeof(key));
    ok(secrets::new_key(key), "new_key succeeds");
    is(std::strlen(key), secrets::key_text_length, "new_key: 46 characters then a NUL");
    is(std::string(key, 3), "qg_", "new_key: starts with qg_");
    is(std::string(key + secrets::key_text_length + 1, 8), std::string(8, '#'),
       "new_key: nothing written past the NUL");

    std::set<std::string> seen;
    int malformed = 0, non_canonical = 0, wrong_length = 0;
    std::string used;
    long ones = 0;
    for (int i = 0; i < 1000; i++) {
        char k[secrets::key_text_length + 1];
        if (!secrets::new_key(k)) {
            malformed++;
            continue;
        }
        std::string s(k);
        seen.insert(s);
        if (s.size() != secrets::key_text_length || s.compare(0, 3, "qg_") != 0 ||
            s.find_first_not_of(alphabet, 3) != std::string::npos)
            malformed++;
        // 32 bytes in 43 characters: the last carries 4 bits and two zero bits.
        else if (alphabet.find(s.back()) % 4 != 0)
            non_canonical++;
        std::string raw = decode_key(k);
        if (raw.size() != 32)
            wrong_length++;
        for (unsigned char c : raw)
            ones += __builtin_popcount(c);
        used += s.substr(3, 42);
    }
    is(malformed, 0, "1000 keys: qg_ and 43 base64url characters each");
    is(non_canonical, 0, "1000 keys: canonical base64url (no stray bits in the last character)");
    is(wrong_length, 0, "1000 keys: each decodes to 32 bytes");
    is(seen.size(), 1000u, "1000 keys: all different");
    ok(used.find_first_not_of(alphabet) == std::string::npos &&
           std::set<char>(used.begin(), used.end()).size() == 64,
       "1000 keys: every base64url character occurs");
    // 256000 random bits: half are ones, within 1% (ten standard deviations).
    ok(ones > 126720 && ones < 129280, "1000 keys: about half the bits are ones",
       std::to_string(ones) + " of 256000");
}

void random_source()
{
    unsigned char a[40], b[40];
    std::memset(a, 0, sizeof(a));
    std::memset(b, 0, sizeof(b));
    ok(secrets::random_bytes(a, 32) && secrets::random_bytes(b, 32), "random_bytes: 32 bytes");
    ok(std::memcmp(a, b, 32) != 0, "random_bytes: two draws differ");
    ok(std::memcmp(a + 32, std::string(8, '\0').data(), 8) == 0,
       "random_bytes: nothing written past n");
    unsigned char guard = 0x5A;
    ok(secrets::random_bytes(&guard, 0) && guard == 0x5A, "random_bytes: 0 bytes writes nothing");
    unsigned char big[1024] = {0};
    ok(secrets::random_bytes(big, sizeof(big)), "random_bytes: 1024 bytes");
    int zeros = 0;
    for (unsigned char c : big)
        zeros += c == 0;
    ok(zeros < 32, "random_bytes: 1024 bytes are not left zero", std::to_string(zeros) + " zeros");
}

void hashes()
{
    is(sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "sha256: empty");
    is(sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
       "sha256: abc");
    is(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
       "sha256: the 448-bit message");
    is(sha256(std::string(1000000, 'a')),
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "sha256: a million a");
    ok(sha256(std::string("a\0b", 3)) != sha256("a") &&
           sha256(std::string("a\0b", 3)) != sha256("ab"),
       "sha256: a NUL byte is hashed, not an end");
    unsigned char out[secrets::sha256_length + 4];
    std::memset(out, 0x77, sizeof(out));
    secrets::sha256("abc", 3, out);
    ok(out[32] == 0x77 && out[33] == 0x77 && out[34] == 0x77 && out[35] == 0x77,
       "sha256: nothing written past 32 bytes");

    is(hmac(std::string(20, '\x0b'), "Hi There"),
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
       "hmac_sha256: RFC 4231 case 1");
    is(hmac("Jefe", "what do ya want for nothing?"),
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
       "hmac_sha256: RFC 4231 case 2");
    is(hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
       "hmac_sha256: RFC 4231 case 3");
    is(hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
       "hmac_sha256: RFC 4231 case 6 (a key longer than a block)");
    is(hmac(std::string(131, '\xaa'),
            "This is a test using a larger than block-size key and a larger than block-size "
            "data. The key needs to be hashed before being used by the HMAC algorithm."),
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
       "hmac_sha256: RFC 4231 case 7 (key and data longer than a block)");
    is(hmac("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad",
       "hmac_sha256: empty key, empty data");
    ok(hmac("key", "data") != hmac("key", "datA") && hmac("key", "data") != hmac("kez", "data"),
       "hmac_sha256: depends on key and data");
    std::memset(out, 0x77, sizeof(out));
    secrets::hmac_sha256("k", 1, "d", 1, out);
    ok(out[32] == 0x77 && out[35] == 0x77, "hmac_sha256: nothing written past 32 bytes");

    // The context keeps the last key: the same key again, another key, a key that differs in its
    // last byte or only in length, and back, each give what a fresh computation gives.
    const std::string case2 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    bool kept = true;
    for (int i = 0; i < 3; i++)
        kept = kept && hmac("Jefe", "what do ya want for nothing?") == case2;
    ok(kept, "hmac_sha256: the same key three times in a row");
    is(hmac("Jeff", "what do ya want for nothing?"),
       hmac(std::string("Jeff"), std::string("what do ya want for nothing?")),
       "hmac_sha256: a key differing in its last byte (stable)");
    ok(hmac("Jeff", "what do ya want for nothing?") != case2,
       "hmac_sha256: a key differing in its last byte is another key");
    ok(hmac("Jef", "what do ya want for nothing?") != case2,
       "hmac_sha256: a key that is a prefix is another key");
    is(hmac("Jefe", "what do ya want for nothing?"), case2, "hmac_sha256: back to the first key");
    is(hmac(std::string(20, '\x0b'), "Hi There"),
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
       "hmac_sha256: RFC 4231 case 1 after other keys");
    is(hmac(std::string(64, 'k'), "d"), hmac(std::string(64, 'k'), "d"),
       "hmac_sha256: a key of exactly one block, twice");
    ok(hmac(std::string(64, 'k'), "d") != hmac(std::string(65, 'k'), "d"),
       "hmac_sha256: one block and one byte more are different keys");
    is(sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
       "sha256: abc again, after the HMACs");
}

void hex_text()
{
    const unsigned char data[] = {0x00, 0x01, 0x0a, 0x7f, 0x80, 0xab, 0xfe, 0xff};
    is(hex(data, sizeof(data)), "00010a7f80abfeff", "to_hex: lower case, two digits a byte");
    char out[4] = {'x', 'x', 'x', 'x'};
    secrets::to_hex(data, 0, out);
    ok(out[0] == '\0' && out[1] == 'x', "to_hex: 0 bytes is an empty string");
    char two[6] = {'x', 'x', 'x', 'x', 'x', 'x'};
    secrets::to_hex(data + 6, 2, two);
    ok(std::string(two) == "feff" && two[5] == 'x', "to_hex: a NUL after 2 * len, nothing past");
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = static_cast<unsigned char>(i);
    std::string h = hex(all, 256);
    bool right = h.size() == 512;
    for (int i = 0; right && i < 256; i++)
        right = std::stoi(h.substr(2 * i, 2), nullptr, 16) == i;
    ok(right && h.find_first_not_of("0123456789abcdef") == std::string::npos,
       "to_hex: every byte value");
}

void comparison_and_wipe()
{
    ok(secrets::same_secret("token-1", "token-1"), "same_secret: equal");
    ok(!secrets::same_secret("token-1", "token-2"), "same_secret: one byte differs");
    ok(!secrets::same_secret("token-1", "token-12"), "same_secret: a prefix is not the secret");
    ok(!secrets::same_secret("", "x"), "same_secret: empty against one byte");
    std::vector<std::string> v = {"first-secret", "second"};
    secrets::wipe(v);
    ok(v.empty(), "wipe: the vector is emptied");
}

} // namespace

int main()
{
    constants();
    keys();
    random_source();
    hashes();
    hex_text();
    comparison_and_wipe();
    return tap::done();
}
