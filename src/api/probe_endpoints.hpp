// The probes and the metrics: GET /health and /live (the worker's loop is alive: no SPI, no
// catalog), GET /ready (a call could be served now, and whether this server is a primary or a
// standby and how far behind), GET /metrics (every worker's statistics in the Prometheus text
// format, behind a token). Plain C++.
#pragma once

#include "api/exchange.hpp"
#include "api/services.hpp"

#include <string>

// GET /health, /live and /ready: the probes, never logged when they succeed.
bool is_probe(const std::string &path);

class ProbeEndpoints {
  public:
    explicit ProbeEndpoints(services::Health &health) : health_(health) {}
    // A probe's path (is_probe).
    void handle_probe(Exchange &ex);
    // GET /metrics: 404 unless querygate.metrics_token_file names tokens, 401 without one of them.
    void handle_metrics(Exchange &ex);

  private:
    static void health(HttpResponse &response, const char *status);
    void ready(HttpResponse &response, const std::string &id);

    services::Health &health_;
};
