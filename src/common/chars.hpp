// ASCII character classes. The C library's are locale-dependent, and the server's LC_CTYPE may
// count bytes of multibyte characters as letters; names and placeholders are ASCII by definition.
#pragma once

#include <cstddef>
#include <string_view>

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
// Without the optional whitespace (spaces and tabs) around it, as HTTP's field values and lists
// have it (RFC 9110 5.6.3).
inline std::string_view trim_ows(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}
// Equal but for ASCII case.
inline bool iequals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); i++)
        if (to_lower(a[i]) != to_lower(b[i]))
            return false;
    return true;
}
// Whether `s` starts with `lower_prefix` (written in lower case) in any case.
inline bool istarts_with(std::string_view s, std::string_view lower_prefix)
{
    if (s.size() < lower_prefix.size())
        return false;
    for (std::size_t i = 0; i < lower_prefix.size(); i++)
        if (to_lower(s[i]) != lower_prefix[i])
            return false;
    return true;
}

} // namespace chars
