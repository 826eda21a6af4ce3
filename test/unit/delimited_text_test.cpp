// CSV and TSV fields (src/common/delimited_text.hpp), as COPY writes and reads them.
#include "common/delimited_text.hpp"
#include "tap.hpp"

#include <string>

using tap::is;

namespace {

std::string field(delimited_text::Kind k, std::string_view v)
{
    std::string out;
    delimited_text::field(k, v, [&out](const char *d, std::size_t n) { out.append(d, n); });
    return out;
}

std::string null_field(delimited_text::Kind k)
{
    std::string out;
    delimited_text::null_field(k, [&out](const char *d, std::size_t n) { out.append(d, n); });
    return out;
}

} // namespace

int main()
{
    using K = delimited_text::Kind;
    is(field(K::csv, "plain"), std::string("plain"), "CSV: a plain value as it is");
    is(field(K::csv, ""), std::string("\"\""), "CSV: the empty string is quoted");
    is(null_field(K::csv), std::string(""), "CSV: NULL is nothing");
    is(field(K::csv, "a,b"), std::string("\"a,b\""), "CSV: a comma is quoted");
    is(field(K::csv, "say \"hi\""), std::string("\"say \"\"hi\"\"\""),
       "CSV: quotes are doubled inside quotes");
    is(field(K::csv, "\""), std::string("\"\"\"\""), "CSV: a lone quote");
    is(field(K::csv, "a\r\nb"), std::string("\"a\r\nb\""), "CSV: CR LF is quoted as it is");
    is(field(K::csv, "a\nb"), std::string("\"a\nb\""), "CSV: LF is quoted");
    is(field(K::csv, " x "), std::string(" x "), "CSV: spaces are data (RFC 4180)");
    is(field(K::csv, "a\tb\\c"), std::string("a\tb\\c"), "CSV: tab and backslash need nothing");
    is(field(K::csv, "\\."), std::string("\"\\.\""), "CSV: \\. is quoted, as COPY does");
    is(field(K::csv, "\xc3\xbc"), std::string("\xc3\xbc"), "CSV: UTF-8 as it is");
    is(std::string(1, delimited_text::separator(K::csv)) +
           std::string(delimited_text::record_end(K::csv)),
       std::string(",\r\n"), "CSV: comma and CRLF");

    is(field(K::tsv, "plain"), std::string("plain"), "TSV: a plain value as it is");
    is(field(K::tsv, ""), std::string(""), "TSV: the empty string is nothing");
    is(null_field(K::tsv), std::string("\\N"), "TSV: NULL is \\N");
    is(field(K::tsv, "a\tb"), std::string("a\\tb"), "TSV: a tab is \\t");
    is(field(K::tsv, "a\r\nb"), std::string("a\\r\\nb"), "TSV: CR LF is \\r\\n");
    is(field(K::tsv, "a\\b"), std::string("a\\\\b"), "TSV: a backslash is doubled");
    is(field(K::tsv, "\\N"), std::string("\\\\N"), "TSV: the text \\N is not NULL");
    is(field(K::tsv, "\\"), std::string("\\\\"), "TSV: a lone backslash");
    is(field(K::tsv, "a,\"b\""), std::string("a,\"b\""), "TSV: commas and quotes need nothing");
    is(std::string(1, delimited_text::separator(K::tsv)) +
           std::string(delimited_text::record_end(K::tsv)),
       std::string("\t\n"), "TSV: tab and LF");
    return tap::done();
}
