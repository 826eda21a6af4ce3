// Tests of src/http/paging_args.hpp: page and page_size from a query string's text and from JSON
// (a POST body's fields, an MCP tool's arguments): whole numbers in range, else invalid_paging
// naming which and its range.
#include "http/paging_args.hpp"
#include "tap.hpp"

#include <string>

namespace settings {
int max_page_size = 1000; // the setting's default
} // namespace settings

namespace {

using tap::is;
using tap::like;
using tap::ok;

json_body::Value json(const std::string &text)
{
    json_body::Value v;
    std::string error;
    if (!json_body::parse(text, v, error))
        tap::ok(false, "test JSON parses: " + text);
    return v;
}

void from_text()
{
    CallRequest call;
    ok(!paging_args::from_text("page", "3", call).set(), "page=3");
    is(call.page, 3L, "sets the page");
    ok(!paging_args::from_text("page_size", "1000", call).set(), "page_size at its maximum");
    is(call.page_size, 1000L, "sets the page size");
    const ApiError over = paging_args::from_text("page_size", "1001", call);
    is(over.status, 400, "page_size over querygate.max_page_size: 400");
    is(over.code, std::string("invalid_paging"), "invalid_paging");
    is(over.message, std::string("page_size must be a whole number from 1 to 1000"),
       "naming it and its range");
    is(call.page_size, 1000L, "and the page size is left as it was");
    for (const char *bad :
         {"0", "-1", "", "1.5", "2e0", " 2", "0x10", "1000000001", "9999999999999"})
        ok(paging_args::from_text("page", bad, call).set(),
           std::string("page=") + bad + " is refused");
    like(paging_args::from_text("page", "0", call).message,
         "page must be a whole number from 1 to 1000000000", "page's own range");
    ok(!paging_args::from_text("page", "1000000000", call).set(), "page at its maximum");
    is(call.page, 1000000000L, "taken");
}

void from_json()
{
    CallRequest call;
    ok(!paging_args::from_json("page", json("2"), call).set(), "\"page\": 2");
    is(call.page, 2L, "sets the page");
    ok(paging_args::from_json("page", json("\"2\""), call).set(), "a string is refused");
    ok(paging_args::from_json("page", json("2.0"), call).set(), "2.0 is refused");
    ok(paging_args::from_json("page", json("null"), call).set(), "null is refused");
    ok(paging_args::from_json("page_size", json("true"), call).set(), "true is refused");
    is(paging_args::from_json("page_size", json("[1]"), call).code, std::string("invalid_paging"),
       "an array: invalid_paging");
}

void names()
{
    ok(paging_args::is_paging("page"), "page is paging");
    ok(paging_args::is_paging("page_size"), "page_size too");
    ok(!paging_args::is_paging("pages"), "pages is a parameter's name");
    ok(!paging_args::is_paging("Page"), "names are exact");
}

} // namespace

int main()
{
    from_text();
    from_json();
    names();
    return tap::done();
}
