// GET /openapi.json and GET /catalog: see describe_endpoint.hpp.
#include "api/describe_endpoint.hpp"

#include "http/credentials.hpp"
#include "http/error_body.hpp"
#include "api/limit_headers.hpp"
#include "http/openapi.hpp"

void DescribeEndpoint::handle(Exchange &ex, bool openapi_document)
{
    const HttpRequest &request = ex.request;
    HttpResponse &response = ex.response;
    const std::string &id = ex.id;
    if (request.method != "GET" && request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on " + request.path);
        e.allow = "GET, HEAD";
        write_error(response, e, id);
        return;
    }
    CallRequest call;
    credentials::presented(request, call);
    call.client_ip = path_.client_ip(request);
    call.request_id = id;
    LimitReport limits;
    if (call.secret.empty() && call.bearer_token.empty()) {
        ApiError limited = calls_.limit_anonymous(call.client_ip, limits);
        write_error(response, limited.set() ? limited : api_errors::unauthorized(), id);
        limit_headers::add(response, limits);
        return;
    }
    api_description::Api api;
    if (ApiError error = describer_.describe(call, api, limits); error.set()) {
        write_error(response, error, id);
        limit_headers::add(response, limits);
        return;
    }
    limit_headers::add(response, limits);
    response.status = 200;
    response.body = openapi_document ? openapi::document(api) : openapi::catalog(api);
}
