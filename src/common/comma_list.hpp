// Lists the catalog reads as text joined by commas (array_to_string(..., ',')): oids, names made of
// [A-Za-z0-9_] and write operations, none of which can hold a comma. Plain C++.
#pragma once

#include <string>
#include <vector>

namespace comma_list {

// The items of a list; none for NULL or an empty string.
inline std::vector<std::string> split(const char *list)
{
    std::vector<std::string> out;
    if (list == nullptr || *list == '\0')
        return out;
    const char *start = list;
    for (const char *p = list;; p++)
        if (*p == ',' || *p == '\0') {
            out.emplace_back(start, p - start);
            if (*p == '\0')
                return out;
            start = p + 1;
        }
}

} // namespace comma_list
