// A call's page and page_size: see paging_args.hpp.
#include "http/paging_args.hpp"

#include "common/chars.hpp"
#include "common/settings.hpp"

namespace paging_args {

namespace {

long max_for(const std::string &name)
{
    return name == "page" ? max_page : settings::max_page_size;
}

ApiError invalid(const std::string &name)
{
    return api_errors::make(error_code::invalid_paging, name +
                                                            " must be a whole number from 1 to " +
                                                            std::to_string(max_for(name)));
}

// Digits only, at most 12 of them, 1 to max.
bool parse_positive(const std::string &text, long max, long &out)
{
    if (text.empty() || text.size() > 12)
        return false;
    long v = 0;
    for (char c : text) {
        if (!chars::is_digit(c))
            return false;
        v = v * 10 + (c - '0');
    }
    if (v < 1 || v > max)
        return false;
    out = v;
    return true;
}

} // namespace

bool is_paging(const std::string &name)
{
    return name == "page" || name == "page_size";
}

ApiError from_text(const std::string &name, const std::string &text, CallRequest &call)
{
    if (!parse_positive(text, max_for(name), name == "page" ? call.page : call.page_size))
        return invalid(name);
    return ApiError();
}

ApiError from_json(const std::string &name, const json_body::Value &value, CallRequest &call)
{
    // A number's text is its lexeme as written: "2.0" and "2e0" are not digits only.
    if (value.kind != json_body::Value::Kind::number)
        return invalid(name);
    return from_text(name, value.text, call);
}

} // namespace paging_args
