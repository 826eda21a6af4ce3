// A request's headers: see http_types.hpp.
#include "http/http_types.hpp"

const std::string *HttpRequest::header(const char *lower_name) const
{
    for (const auto &h : headers)
        if (h.first == lower_name)
            return &h.second;
    return nullptr;
}

bool HttpRequest::header_list(const char *lower_name, std::string &out) const
{
    bool found = false;
    out.clear();
    for (const auto &h : headers)
        if (h.first == lower_name) {
            if (found)
                out += ", ";
            out += h.second;
            found = true;
        }
    return found;
}
