// ASCII character classes. The C library's are locale-dependent, and the server's LC_CTYPE may
// count bytes of multibyte characters as letters; names and placeholders are ASCII by definition.
#pragma once

namespace chars {

inline bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
inline bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_alnum(char c)
{
    return is_alpha(c) || is_digit(c);
}
// ASCII only, whatever the locale.
inline char to_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

} // namespace chars
