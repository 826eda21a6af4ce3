// Strict base64url and JSON for JWS and JWKS: see jose.hpp.
#include "auth/jose.hpp"

namespace jwt {

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

JsonPtr parse_json(std::string_view text)
{
    json_error_t err;
    return JsonPtr(json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &err));
}

} // namespace jwt
