// A tiny TAP producer for the unit tests in test/unit, with no dependency. Each check prints
// "ok N - name" or "not ok N - name" (with "# " diagnostics after a failure); done() prints the
// plan "1..N" and a one-line summary, and returns the exit status for main.
//
//   tap::ok(cond, "name");                   // passes when cond is true
//   tap::is(got, expected, "name");          // passes when got == expected; shows both if not
//   tap::like(text, "part", "name");         // passes when text contains part
//   return tap::done();
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace tap {

inline int count = 0;
inline int failed = 0;

// Prints text as diagnostic lines ("# ..."), which TAP consumers show and never count.
inline void diag(const std::string &text)
{
    size_t start = 0;
    while (start <= text.size()) {
        size_t nl = text.find('\n', start);
        std::string line = text.substr(start, nl == std::string::npos ? nl : nl - start);
        std::printf("# %s\n", line.c_str());
        if (nl == std::string::npos)
            break;
        start = nl + 1;
    }
}

// A value as diagnostics show it: strings quoted, with bytes outside printable ASCII as \xNN.
inline std::string show(std::string_view s)
{
    static const char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (char ch : s) {
        unsigned char c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(ch);
        } else if (c >= 0x20 && c < 0x7f) {
            out.push_back(ch);
        } else {
            out += "\\x";
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out + "\"";
}

template <class T> std::string show(const T &v)
{
    if constexpr (std::is_null_pointer_v<T>) {
        return "null";
    } else if constexpr (std::is_convertible_v<const T &, std::string_view>) {
        if constexpr (std::is_pointer_v<T>)
            if (v == nullptr)
                return "null";
        return show(std::string_view(v));
    } else if constexpr (std::is_same_v<T, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::is_enum_v<T>) {
        return std::to_string(static_cast<long long>(v));
    } else if constexpr (std::is_pointer_v<T>) {
        return v == nullptr ? "null" : "a non-null pointer";
    } else {
        std::ostringstream s;
        s << v;
        return s.str();
    }
}

// got == expected, with integers compared by value whatever their signedness.
template <class A, class B> bool equal(const A &a, const B &b)
{
    if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> &&
                  !std::is_same_v<B, bool>) {
        if constexpr (std::is_signed_v<A> == std::is_signed_v<B>)
            return a == b;
        else if constexpr (std::is_signed_v<A>)
            return a >= 0 && static_cast<std::make_unsigned_t<A>>(a) == b;
        else
            return b >= 0 && a == static_cast<std::make_unsigned_t<B>>(b);
    } else {
        return a == b;
    }
}

inline bool ok(bool pass, const std::string &name, const std::string &why = "")
{
    ++count;
    std::printf("%s %d - %s\n", pass ? "ok" : "not ok", count, name.c_str());
    if (!pass) {
        ++failed;
        if (!why.empty())
            diag(why);
    }
    std::fflush(stdout);
    return pass;
}

template <class A, class B> bool is(const A &got, const B &expected, const std::string &name)
{
    bool pass = equal(got, expected);
    return ok(pass, name, pass ? "" : "     got: " + show(got) + "\nexpected: " + show(expected));
}

inline bool like(std::string_view text, std::string_view part, const std::string &name)
{
    bool pass = text.find(part) != std::string_view::npos;
    return ok(pass, name, pass ? "" : show(text) + "\ndoes not contain " + show(part));
}

// The plan and a summary; the exit status for main: 0 when every check passed.
inline int done()
{
    std::printf("1..%d\n", count);
    if (failed > 0)
        std::printf("# %d of %d failed\n", failed, count);
    else
        std::printf("# all %d passed\n", count);
    std::fflush(stdout);
    return failed > 0 ? 1 : 0;
}

} // namespace tap
