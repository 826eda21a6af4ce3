// Tests of src/http/framing.hpp: the body framings refused before the body is read.
#include "http/framing.hpp"
#include "tap.hpp"

#include <string>
#include <utility>
#include <vector>

namespace {

using tap::is;

int refusal(std::vector<std::pair<std::string, std::string>> headers)
{
    HttpRequest r;
    r.method = "POST";
    r.headers = std::move(headers);
    return framing::refusal(r);
}

void lengths()
{
    is(refusal({}), 0, "no body framing at all");
    is(refusal({{"content-length", "12"}}), 0, "one Content-Length");
    is(refusal({{"content-length", "12"}, {"content-length", "17"}}), 400,
       "two different Content-Length lines");
    is(refusal({{"content-length", "12"}, {"content-length", "12"}}), 400,
       "two equal Content-Length lines, refused as well");
    is(refusal({{"host", "x"}, {"content-length", "0"}, {"x-a", "b"}, {"content-length", "0"}}),
       400, "repeated among other headers");
}

void encodings()
{
    is(refusal({{"transfer-encoding", "chunked"}}), 0, "chunked");
    is(refusal({{"transfer-encoding", " Chunked "}}), 0, "chunked in another case, spaced");
    is(refusal({{"transfer-encoding", "chunked"}, {"content-length", "5"}}), 400,
       "chunked beside Content-Length");
    is(refusal({{"content-length", "5"}, {"transfer-encoding", "chunked"}}), 400,
       "Content-Length before chunked");
    is(refusal({{"transfer-encoding", "chunked"}, {"transfer-encoding", "chunked"}}), 400,
       "two Transfer-Encoding lines");
    is(refusal({{"transfer-encoding", "gzip, chunked"}}), 501, "a coding before chunked: 501");
    is(refusal({{"transfer-encoding", "chunked, gzip"}}), 400,
       "chunked not last: the length cannot be known");
    is(refusal({{"transfer-encoding", "gzip"}}), 400, "no chunked at all");
    is(refusal({{"transfer-encoding", ""}}), 400, "an empty Transfer-Encoding");
    is(refusal({{"transfer-encoding", " , chunked ,"}}), 0, "empty list items dropped");
    is(refusal({{"transfer-encoding", "chunkedx"}}), 400, "a coding that only starts as chunked");
}

} // namespace

int main()
{
    lengths();
    encodings();
    return tap::done();
}
