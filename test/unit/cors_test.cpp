// CORS (src/http/cors.hpp): the list, the preflight and the headers of an answer.
#include "http/cors.hpp"
#include "tap.hpp"

#include <cstring>

using tap::is;
using tap::ok;

namespace {

const std::string *find(const HttpResponse &r, const char *name)
{
    for (const auto &h : r.headers)
        if (std::strcmp(h.name, name) == 0)
            return &h.value;
    return nullptr;
}

} // namespace

int main()
{
    cors::Origins none = cors::parse(nullptr);
    ok(!none.enabled() && !cors::parse("").enabled() && !cors::parse(" , ,").enabled(),
       "no setting, an empty one, or only commas: off");
    cors::Origins list = cors::parse(" https://App.Example , http://localhost:3000/ ,");
    is(list.listed.size(), std::size_t(2), "two origins listed");
    ok(list.enabled() && !list.any, "a list: on, not any");
    ok(cors::allowed(list, "https://app.example"), "a listed origin");
    ok(cors::allowed(list, "HTTPS://APP.EXAMPLE"), "in another case");
    ok(cors::allowed(list, "http://localhost:3000"), "listed with a trailing slash");
    ok(!cors::allowed(list, "https://app.example.evil"), "not one that starts like it");
    ok(!cors::allowed(list, "http://app.example"), "not another scheme");
    ok(!cors::allowed(list, "https://app.example:8443"), "not another port");
    ok(!cors::allowed(list, ""), "not an empty Origin");
    ok(!cors::allowed(list, "null"), "not the opaque origin null");
    cors::Origins any = cors::parse("https://a.example, *");
    ok(any.any && cors::allowed(any, "https://whoever.example"), "* lets any origin in");
    ok(!cors::allowed(any, ""), "but not a request without Origin");

    HttpRequest pre;
    pre.method = "OPTIONS";
    pre.headers = {{"origin", "https://app.example"}, {"access-control-request-method", "POST"}};
    ok(cors::is_preflight(pre), "OPTIONS with Origin and Access-Control-Request-Method");
    HttpRequest options = pre;
    options.headers.pop_back();
    ok(!cors::is_preflight(options), "OPTIONS without Access-Control-Request-Method is not one");
    HttpRequest get = pre;
    get.method = "GET";
    ok(!cors::is_preflight(get), "nor is a GET");

    HttpResponse r;
    cors::answer_preflight(list, "https://app.example", r);
    is(r.status, 204, "a preflight: 204");
    ok(find(r, "Access-Control-Allow-Origin") &&
           *find(r, "Access-Control-Allow-Origin") == "https://app.example",
       "the origin as it was sent");
    ok(find(r, "Access-Control-Allow-Methods") && find(r, "Access-Control-Allow-Headers") &&
           find(r, "Access-Control-Max-Age"),
       "with methods, headers and how long to keep them");
    HttpResponse refused;
    cors::answer_preflight(list, "https://evil.example", refused);
    ok(refused.status == 204 && !find(refused, "Access-Control-Allow-Origin") &&
           !find(refused, "Access-Control-Allow-Methods"),
       "an origin not listed: 204 and nothing it may do");

    HttpResponse answer;
    cors::add_answer_headers(list, "https://app.example", answer);
    ok(find(answer, "Access-Control-Allow-Origin") &&
           find(answer, "Access-Control-Expose-Headers") && find(answer, "Vary") &&
           *find(answer, "Vary") == "Origin",
       "an answer to a listed origin: who may read it, what, and Vary: Origin");
    HttpResponse other;
    cors::add_answer_headers(list, "https://evil.example", other);
    ok(!find(other, "Access-Control-Allow-Origin") && find(other, "Vary"),
       "to another origin: only Vary");
    HttpResponse star;
    cors::add_answer_headers(any, "https://whoever.example", star);
    ok(find(star, "Access-Control-Allow-Origin") &&
           *find(star, "Access-Control-Allow-Origin") == "*" && !find(star, "Vary"),
       "with *: told *, and the answer does not vary by origin");
    return tap::done();
}
