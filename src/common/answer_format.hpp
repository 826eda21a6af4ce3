// The formats a call's rows are answered in, by their names in `?format=` and their media types.
// Errors are JSON whatever the format. Plain C++.
#pragma once

#include <cstddef>
#include <string_view>

enum class AnswerFormat : unsigned char { json, ndjson, csv, tsv };

namespace answer_format {

struct Entry {
    AnswerFormat format;
    const char *name;         // ?format=
    const char *media_type;   // what Accept names (lowercase)
    const char *content_type; // what the answer says
};

// In order of preference: where Accept allows several equally (*/*), the first wins.
inline constexpr Entry all[] = {
    {AnswerFormat::json, "json", "application/json", "application/json"},
    {AnswerFormat::ndjson, "ndjson", "application/x-ndjson", "application/x-ndjson"},
    {AnswerFormat::csv, "csv", "text/csv", "text/csv; charset=utf-8; header=present"},
    {AnswerFormat::tsv, "tsv", "text/tab-separated-values",
     "text/tab-separated-values; charset=utf-8"},
};

inline const Entry &of(AnswerFormat f)
{
    return all[static_cast<std::size_t>(f)];
}

// The format named `name` in ?format=; false for any other name.
inline bool by_name(std::string_view name, AnswerFormat &out)
{
    for (const Entry &e : all)
        if (name == e.name) {
            out = e.format;
            return true;
        }
    return false;
}

} // namespace answer_format
