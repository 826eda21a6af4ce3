// GET|POST /q/{name}: see query_endpoint.hpp.
#include "api/query_endpoint.hpp"

#include "api/call_arguments.hpp"
#include "http/answer_encoding.hpp"
#include "http/error_body.hpp"
#include "api/limit_headers.hpp"

void QueryEndpoint::handle(Exchange &ex, const std::string &name)
{
    const HttpRequest &request = ex.request;
    if (request.method != "GET" && request.method != "POST") {
        ApiError e =
            api_errors::make(error_code::method_not_allowed, "use GET or POST on /q/{name}");
        e.allow = "GET, POST";
        write_error(ex.response, e, ex.id);
        return;
    }
    CallRequest call = path_.start_call(ex, name);
    call.safe_method = request.method == "GET";
    if (path_.refused_without_credentials(ex, call))
        return;
    if (ApiError error = call_arguments::from_request(request, call); error.set()) {
        write_error(ex.response, error, ex.id);
        return;
    }
    CallResult result = path_.run(ex, call);
    if (ex.response.later != 0)
        return; // answered when the helper's result is back
    answer(result, CallPath::shape_of(request, call), ex.response, ex.id, result.export_slot);
}

void QueryEndpoint::answer(CallResult &result, const CallPath::Shape &shape, HttpResponse &response,
                           const std::string &id, int export_slot)
{
    answer_call(result, shape, response, id);
    if (response.file.present())
        response.on_done = [this, export_slot] { calls_.release_export(export_slot); };
    else
        calls_.release_export(export_slot); // an error, or nothing to send: it is done
}

void QueryEndpoint::answer_call(CallResult &result, const CallPath::Shape &shape,
                                HttpResponse &response, const std::string &id)
{
    // The answer depends on Accept and Accept-Encoding as well as on the URL (a cache keeps one
    // per format and coding).
    response.add_header("Vary", "Accept, Accept-Encoding");
    if (result.error.set()) {
        write_error(response, result.error, id);
        limit_headers::add(response, result.limits);
        // Another worker, or this one restarted; an export's place, freed within a second or so.
        if (result.error.code == error_code::shutting_down.code ||
            result.error.code == error_code::too_many_exports.code)
            response.add_header("Retry-After", "1");
        return;
    }
    limit_headers::add(response, result.limits);
    response.status = 200;
    response.content_type = answer_format::of(shape.format).content_type;
    if (result.file.present()) {
        // An export: every row, sent from its file; a download, with a name.
        response.file = std::move(result.file);
        const std::string &name = shape.name.empty() ? std::string("sql") : shape.name;
        response.add_header("Content-Disposition", "attachment; filename=\"" + name + "." +
                                                       answer_format::of(shape.format).name + "\"");
        return;
    }
    response.body = std::move(result.body);
    response.add_header("X-Page", std::to_string(shape.page));
    response.add_header("X-Page-Size", std::to_string(shape.page_size));
    response.add_header("X-Has-More", result.has_more ? "true" : "false");
    std::string tag = answer_encoding::etag(response.body);
    const bool unchanged =
        shape.conditional && answer_encoding::none_match(&shape.if_none_match, tag);
    response.add_header("ETag", std::move(tag));
    std::string compressed;
    if (shape.gzip && response.body.size() >= answer_encoding::gzip_threshold &&
        answer_encoding::gzip(response.body, compressed)) {
        response.body.swap(compressed);
        if (!unchanged)
            response.add_header("Content-Encoding", "gzip");
    }
    if (unchanged) {
        // The caller has this answer already: the head alone. libmicrohttpd sends no body after
        // a 304 but says the body's length, which is so the 200's, as RFC 9110 (15.4.5) allows;
        // no Content-Type or Content-Encoding, which describe a body.
        response.status = 304;
        response.content_type.clear();
    }
}
