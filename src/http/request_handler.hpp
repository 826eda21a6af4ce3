// Routes an HTTP request and turns it into a call, and a call's result into an HTTP response:
// GET /health, GET|POST /q/{name}. Parameters come from the query string or a JSON body; paging
// options are validated here, before any transaction starts. Pure C++: no PostgreSQL header.
#pragma once

#include "http/http_types.hpp"
#include "http/client_address.hpp"
#include "call/query_runner.hpp"

#include <cstdint>

class RequestHandler {
  public:
    explicit RequestHandler(QueryRunner &runner);

    void handle(const HttpRequest &request, HttpResponse &response);
    // A request refused before it was read whole (413), or by libmicrohttpd itself (431, 400,
    // 505 ...: own_answers.hpp): the same JSON error shape.
    void refuse(const HttpRequest &request, int status, HttpResponse &response);

  private:
    std::string request_id(const HttpRequest &request);
    void handle_health(HttpResponse &response);
    void handle_query(const HttpRequest &request, const std::string &name, HttpResponse &response,
                      const std::string &id);

    // The caller's address, behind querygate.trusted_proxies.
    std::string client_ip(const HttpRequest &request);

    QueryRunner &runner_;
    std::vector<client_address::Cidr> trusted_;
    unsigned long trusted_generation_ = 0;
    uint64_t id_state_; // request-id generator (xorshift, seeded from OpenSSL once)
};

// The error body {"error","code","request_id"[,"errors"]} with its status and headers.
void write_error(HttpResponse &response, const ApiError &error, const std::string &request_id);
