// GET /schema: see schema_endpoint.hpp.
#include "api/schema_endpoint.hpp"

#include "api/limit_headers.hpp"
#include "http/error_body.hpp"
#include "http/schema_document.hpp"

void SchemaEndpoint::handle(Exchange &ex)
{
    const HttpRequest &request = ex.request;
    HttpResponse &response = ex.response;
    if (request.method != "GET" && request.method != "HEAD") {
        ApiError e = api_errors::make(error_code::method_not_allowed, "use GET on /schema");
        e.allow = "GET, HEAD";
        write_error(response, e, ex.id);
        return;
    }
    CallRequest call = path_.start_call(ex, std::string());
    if (path_.refused_without_credentials(ex, call))
        return;
    // Every other argument is ignored, as /catalog ignores them: none changes the answer.
    // The first ?table= is the one (a repeated one is not a second table).
    const std::string *table = nullptr;
    for (const auto &arg : request.args)
        if (arg.first == "table" && table == nullptr)
            table = &arg.second;
    LimitReport limits;
    schema_description::Schema schema;
    ApiError error = schemas_.describe_schema(call, table, schema, limits);
    if (error.set()) {
        write_error(response, error, ex.id);
    } else {
        response.status = 200;
        response.content_type = "application/json";
        response.body = schema_document::json(schema, true);
    }
    limit_headers::add(response, limits); // after the status, which says which fields go
}
