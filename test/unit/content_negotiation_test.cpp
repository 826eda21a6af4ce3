// Content negotiation (src/http/content_negotiation.hpp): Accept read as RFC 9110 says.
#include "http/content_negotiation.hpp"
#include "tap.hpp"

using tap::is;
using tap::ok;

namespace {

// The format's ?format= name for an Accept value, or "406".
std::string pick(const char *accept)
{
    const std::string header = accept ? accept : "";
    AnswerFormat f = AnswerFormat::json;
    if (!content_negotiation::from_accept(accept ? &header : nullptr, f))
        return "406";
    return answer_format::of(f).name;
}

} // namespace

int main()
{
    is(pick(nullptr), std::string("json"), "no Accept: JSON");
    is(pick(""), std::string("json"), "an empty Accept: JSON");
    is(pick("  "), std::string("json"), "an Accept of spaces: JSON");
    is(pick("application/json"), std::string("json"), "application/json");
    is(pick("application/x-ndjson"), std::string("ndjson"), "application/x-ndjson");
    is(pick("text/csv"), std::string("csv"), "text/csv");
    is(pick("text/tab-separated-values"), std::string("tsv"), "text/tab-separated-values");
    is(pick("*/*"), std::string("json"), "*/*: JSON, the first we offer");
    is(pick("text/*"), std::string("csv"), "text/*: CSV before TSV");
    is(pick("application/*"), std::string("json"), "application/*: JSON before NDJSON");
    is(pick("TEXT/CSV"), std::string("csv"), "types are case-insensitive");
    is(pick(" text/csv ; charset=utf-8 "), std::string("csv"),
       "parameters other than q are not compared");
    is(pick("text/csv;q=0.5, application/x-ndjson;q=0.8"), std::string("ndjson"),
       "the higher q wins");
    is(pick("text/csv, application/json"), std::string("csv"), "equal q: the first named wins");
    is(pick("application/json, text/csv"), std::string("json"), "equal q, the other order");
    is(pick("application/json;q=0, */*"), std::string("ndjson"),
       "q=0 refuses what a wildcard allows");
    is(pick("text/*;q=0.2, text/tab-separated-values, application/json;q=0.5"), std::string("tsv"),
       "the most specific range decides a format's quality");
    is(pick("text/csv;q=1, text/*;q=0"), std::string("csv"),
       "a wildcard at 0 leaves what is named");
    is(pick("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), std::string("json"),
       "a browser's Accept: JSON");
    is(pick("application/xml"), std::string("406"), "only what we do not make: 406");
    is(pick("text/csv;q=0"), std::string("406"), "the only type named at q=0: 406");
    is(pick("*/*;q=0"), std::string("406"), "everything at q=0: 406");
    is(pick("text/csv;q=2, application/json;q=0.1"), std::string("json"),
       "a q over 1 is not a q: its range is ignored");
    is(pick("text/csv;q=0.1234"), std::string("406"), "a q of four decimals is not one either");
    is(pick("text/csv;q=0.001"), std::string("csv"), "the smallest q still accepts");
    is(pick("text/csv;q=1.000"), std::string("csv"), "q=1.000");
    is(pick("text/csv;foo=bar;q=0"), std::string("406"), "q after another parameter");
    is(pick("text/csv;q=0;foo=bar, application/json"), std::string("json"),
       "an extension after q is not q");
    is(pick(",,, text/csv ,"), std::string("csv"), "empty elements are skipped");
    is(pick("text"), std::string("406"), "a range without a slash matches nothing");
    is(pick("*/csv"), std::string("406"), "*/subtype is not a range");
    std::string offered = content_negotiation::offered();
    is(offered,
       std::string("application/json, application/x-ndjson, text/csv, text/tab-separated-values"),
       "what a 406 names");
    AnswerFormat f;
    ok(answer_format::by_name("csv", f) && f == AnswerFormat::csv, "?format=csv");
    ok(!answer_format::by_name("CSV", f) && !answer_format::by_name("xml", f) &&
           !answer_format::by_name("", f),
       "?format= names are lowercase and known");
    return tap::done();
}
