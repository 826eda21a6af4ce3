// The probes and the metrics: see probe_endpoints.hpp.
#include "api/probe_endpoints.hpp"

#include "common/version.hpp"
#include "http/credentials.hpp"
#include "http/error_body.hpp"
#include "http/prometheus_text.hpp"

#include <cstdio>

bool is_probe(const std::string &path)
{
    return path == "/health" || path == "/live" || path == "/ready";
}

void ProbeEndpoints::handle_probe(Exchange &ex)
{
    const std::string &path = ex.request.path;
    if (ex.request.method != "GET" && ex.request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on " + path);
        e.allow = "GET, HEAD";
        write_error(ex.response, e, ex.id);
        return;
    }
    if (path == "/ready")
        ready(ex.response, ex.id);
    else
        health(ex.response, path == "/live" ? "live" : "ok");
}

// /health and /live answer without touching SPI or the catalog: they say the worker's loop is
// alive.
void ProbeEndpoints::health(HttpResponse &response, const char *status)
{
    response.status = 200;
    response.body.assign("{\"status\":\"");
    response.body.append(status);
    response.body.append("\",\"version\":\"" QUERYGATE_VERSION_TEXT "\"}");
}

// /ready: a transaction starts and the catalog is loaded, so calls can be served.
void ProbeEndpoints::ready(HttpResponse &response, const std::string &id)
{
    services::Health::Role role;
    ApiError not_ready = health_.ready(&role);
    if (not_ready.set()) {
        write_error(response, not_ready, id);
        return;
    }
    health(response, "ready");
    // What a load balancer routes by: a primary takes writes; a standby answers reads, this far
    // behind (a check can match "role":"primary" in the body).
    response.body.pop_back();
    if (!role.standby) {
        response.body.append(",\"role\":\"primary\"}");
        return;
    }
    response.body.append(",\"role\":\"standby\",\"replay_lag_bytes\":")
        .append(std::to_string(role.replay_lag_bytes))
        .append(",\"replayed_ago_s\":");
    if (role.replayed_ago_s < 0) {
        response.body.append("null}");
    } else {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%.3f", role.replayed_ago_s);
        response.body.append(seconds).append("}");
    }
}

// /metrics: what every worker counted, in the Prometheus text format. Never public by default:
// with no token set it is an endpoint that does not exist, and a wrong or missing token hears
// what a wrong key does (401), compared in constant time.
void ProbeEndpoints::handle_metrics(Exchange &ex)
{
    const HttpRequest &request = ex.request;
    HttpResponse &response = ex.response;
    const std::string &id = ex.id;
    // Without an Authorization header the token is empty, which no line of the file is.
    std::string presented;
    credentials::bearer_token(request, presented);
    bool configured = false;
    const bool accepted = health_.metrics_token_accepted(presented, configured);
    if (!configured) {
        write_error(response, api_errors::make(error_code::not_found, "no such endpoint"), id);
        return;
    }
    if (request.method != "GET" && request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on /metrics");
        e.allow = "GET, HEAD";
        write_error(response, e, id);
        return;
    }
    if (!accepted) {
        write_error(
            response,
            api_errors::make(error_code::unauthorized,
                             "a valid bearer token (querygate.metrics_token_file) is required"),
            id);
        return;
    }
    metrics::Snapshot snapshot;
    if (ApiError failed = health_.metrics(snapshot); failed.set()) {
        write_error(response, failed, id);
        return;
    }
    response.status = 200;
    response.content_type = prometheus_text::content_type;
    prometheus_text::render(snapshot, response.body);
}
