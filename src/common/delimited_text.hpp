// Fields of the delimited text formats, written as the tools that read them expect. Plain C++;
// `put(const char *, size_t)` receives the bytes.
//
// CSV (RFC 4180, as PostgreSQL's COPY ... CSV writes it): fields separated by commas, records by
// CRLF (COPY ends them with LF alone); a field holding a comma, a double quote, CR or LF is
// enclosed in double quotes with each double quote doubled. NULL is an empty field and an empty
// string a quoted one (""), so the two stay apart; a value that is exactly \. is quoted too, as
// COPY does.
//
// TSV (text/tab-separated-values, as PostgreSQL's COPY text format writes it): fields separated by
// tabs, records by LF; a backslash, tab, LF and CR in a value are written \\, \t, \n and \r, and
// NULL is \N. The IANA registration allows no tab or newline in a field at all: this escaping is
// how every reader of COPY's output (and "linear TSV") takes them back.
#pragma once

#include <cstddef>
#include <string_view>

namespace delimited_text {

enum class Kind { csv, tsv };

inline char separator(Kind k)
{
    return k == Kind::csv ? ',' : '\t';
}
inline std::string_view record_end(Kind k)
{
    return k == Kind::csv ? std::string_view("\r\n", 2) : std::string_view("\n", 1);
}

template <typename Put> void null_field(Kind k, Put &&put)
{
    if (k == Kind::tsv)
        put("\\N", 2);
}

template <typename Put> void field(Kind k, std::string_view v, Put &&put)
{
    if (k == Kind::csv) {
        bool quote = v.empty() || v == "\\.";
        for (char c : v)
            if (c == ',' || c == '"' || c == '\r' || c == '\n') {
                quote = true;
                break;
            }
        if (!quote) {
            put(v.data(), v.size());
            return;
        }
        put("\"", 1);
        std::size_t from = 0;
        for (std::size_t i = 0; i < v.size(); i++)
            if (v[i] == '"') {
                put(v.data() + from, i + 1 - from); // up to and with the quote
                put("\"", 1);                       // doubled
                from = i + 1;
            }
        put(v.data() + from, v.size() - from);
        put("\"", 1);
        return;
    }
    std::size_t from = 0;
    for (std::size_t i = 0; i < v.size(); i++) {
        const char *escaped = v[i] == '\\'   ? "\\\\"
                              : v[i] == '\t' ? "\\t"
                              : v[i] == '\n' ? "\\n"
                              : v[i] == '\r' ? "\\r"
                                             : nullptr;
        if (escaped == nullptr)
            continue;
        put(v.data() + from, i - from);
        put(escaped, 2);
        from = i + 1;
    }
    put(v.data() + from, v.size() - from);
}

} // namespace delimited_text
