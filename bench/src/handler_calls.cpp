// The HTTP side of a call, alone: GET /q/fixed with a key, N times, through the request handler
// over the fake database side (test/fakes), for bench/handler-instructions. Prints a checksum so
// that nothing is optimized away.
#include "api/request_handler.hpp"
#include "fakes/fake_database.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv)
{
    const long n = argc > 1 ? std::atol(argv[1]) : 1;
    RequestHandler handler(fake_database::instance());
    HttpRequest r;
    r.method = "GET";
    r.path = "/q/fixed";
    r.headers = {{"x-api-key", "k"}, {"accept", "application/json"}};
    r.args = {{"id", "1"}};
    r.client_address = "192.0.2.1";
    std::size_t sum = 0;
    for (long i = 0; i < n; i++) {
        HttpResponse response;
        handler.handle(r, response);
        sum += response.body.size() + static_cast<std::size_t>(response.status);
    }
    std::printf("%zu\n", sum);
    return 0;
}
