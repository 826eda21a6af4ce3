// OpenAPI 3.1 and the catalog: see openapi.hpp.
#include "http/openapi.hpp"

#include "common/answer_format.hpp"
#include "common/api_error.hpp"
#include "common/version.hpp"
#include "http/json_schema.hpp"
#include "http/openapi_parts.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace openapi {

using api_description::Column;
using api_description::Param;
using api_description::Query;
using namespace json_schema;

Owned reference(const std::string &to)
{
    Owned r = object();
    set(r, "$ref", str(to));
    return r;
}

Owned json_content(Owned schema)
{
    Owned media = object();
    set(media, "schema", std::move(schema));
    Owned content = object();
    set(content, "application/json", std::move(media));
    return content;
}

Owned header(const char *type, const char *description)
{
    Owned h = object();
    Owned s = object();
    set(s, "type", str(type));
    set(h, "schema", std::move(s));
    set(h, "description", str(description));
    return h;
}

namespace {

// An answer in a text format (NDJSON, CSV, TSV) whose rows are as row_ref says.
Owned text_schema(AnswerFormat format, const std::string &row_ref)
{
    Owned schema = object();
    set(schema, "type", str("string"));
    if (format == AnswerFormat::ndjson)
        set(schema, "description",
            str("one JSON object a line, each as " + row_ref + ", each line ended by LF"));
    else
        set(schema, "description",
            str(std::string("a header row of the column names, then a record a row, each "
                            "value its text output as COPY writes it (") +
                (format == AnswerFormat::csv ? "RFC 4180, NULL an empty field"
                                             : "COPY's text format, NULL \\N") +
                ")"));
    return schema;
}

} // namespace

Owned answer_content(Owned json, const std::string &row_ref)
{
    Owned content = object();
    for (const auto &e : answer_format::all) {
        Owned media = object();
        set(media, "schema",
            e.format == AnswerFormat::json ? Owned(json_incref(json.v))
                                           : text_schema(e.format, row_ref));
        set(content, e.media_type, std::move(media));
    }
    return content;
}

Owned answer_headers()
{
    Owned headers = object();
    set(headers, "X-Request-Id", header("string", "the call's id, in its error body too"));
    set(headers, "X-Page", header("integer", "the page answered (not on a stream)"));
    set(headers, "X-Page-Size", header("integer", "its size"));
    set(headers, "X-Has-More", header("boolean", "whether another page follows"));
    set(headers, "ETag", header("string", "a weak tag of the answer, for If-None-Match"));
    set(headers, "RateLimit", reference("#/components/headers/RateLimit"));
    return headers;
}

// The statuses a call may answer with an error, by the codes that carry them.
Owned error_responses(Owned responses)
{
    std::vector<int> statuses;
    for (const ErrorCode &e : error_code::all)
        if (e.status != 499) // a caller that hung up hears nothing
            statuses.push_back(e.status);
    std::sort(statuses.begin(), statuses.end());
    statuses.erase(std::unique(statuses.begin(), statuses.end()), statuses.end());
    for (int status : statuses)
        set(responses, std::to_string(status),
            reference(status == 429   ? "#/components/responses/Refused"
                      : status == 503 ? "#/components/responses/Unavailable"
                                      : "#/components/responses/Error"));
    return responses;
}

namespace {

// An optional request header a call reads, as a string.
Owned header_parameter(const char *name, const char *description)
{
    Owned p = object();
    set(p, "name", str(name));
    set(p, "in", str("header"));
    set(p, "required", boolean(false));
    Owned schema = object();
    set(schema, "type", str("string"));
    set(p, "schema", std::move(schema));
    set(p, "description", str(description));
    return p;
}

Owned ok_response(const Query &q)
{
    Owned r = object();
    set(r, "description",
        str(q.writes && !q.returns_rows ? "the rows the write changed"
                                        : "the rows, a page of them unless "
                                          "stream=true"));
    const std::string row_ref = "#/components/schemas/" + q.name + ".row";
    Owned json = q.writes && !q.returns_rows ? reference(row_ref) : object();
    if (!(q.writes && !q.returns_rows)) {
        set(json, "type", str("array"));
        set(json, "items", reference(row_ref));
    }
    set(r, "content", answer_content(std::move(json), row_ref));
    set(r, "headers", answer_headers());
    return r;
}

Owned operation(const Query &q, bool post)
{
    Owned op = object();
    set(op, "operationId", str(post ? q.name + "_post" : q.name));
    set(op, "summary", str(q.description.empty() ? "the saved query " + q.name : q.description));
    Owned tags = array();
    append(tags, str("queries"));
    set(op, "tags", std::move(tags));
    Owned params = array();
    for (const char *option : {"page", "page_size", "format", "timeout", "stream"})
        append(params, reference(std::string("#/components/parameters/") + option));
    append(params, reference("#/components/parameters/Accept"));
    if (!post) {
        append(params, reference("#/components/parameters/If-None-Match"));
        for (const Param &p : q.params) {
            Owned param = object();
            set(param, "name", str(p.name));
            set(param, "in", str("query"));
            set(param, "required", boolean(required(p)));
            set(param, "schema", param_schema(p));
            append(params, std::move(param));
        }
    } else {
        Owned body = object();
        // An empty body is a call whose parameters are in the query string (or that has none).
        set(body, "required", boolean(false));
        Owned content = object();
        Owned media = object();
        Owned schema = object();
        set(schema, "type", str("object"));
        Owned props = object();
        // null is SQL NULL where the parameter's rules allow it (param_rules::accepts_null).
        Owned pschema = params_schema(q);
        set(props, "params", std::move(pschema));
        for (const char *option : {"page", "page_size", "format", "timeout", "stream"})
            set(props, option, reference(std::string("#/components/schemas/option.") + option));
        set(schema, "properties", std::move(props));
        set(schema, "additionalProperties", boolean(false));
        set(media, "schema", std::move(schema));
        set(content, "application/json", std::move(media));
        set(body, "content", std::move(content));
        set(op, "requestBody", std::move(body));
    }
    set(op, "parameters", std::move(params));
    Owned responses = object();
    set(responses, "200", ok_response(q));
    if (!post) {
        Owned not_modified = object();
        set(not_modified, "description", str("unchanged since the tag If-None-Match names"));
        set(responses, "304", std::move(not_modified));
    }
    set(op, "responses", error_responses(std::move(responses)));
    return op;
}

Owned option_schema(const char *name)
{
    Owned s = object();
    const std::string n = name;
    if (n == "page" || n == "page_size") {
        set(s, "type", str("integer"));
        set(s, "minimum", integer(1));
        set(s, "description", str(n == "page" ? "the page, from 1" : "rows a page"));
    } else if (n == "format") {
        set(s, "type", str("string"));
        Owned values = array();
        for (const auto &e : answer_format::all)
            append(values, str(e.name));
        set(s, "enum", std::move(values));
        set(s, "description", str("the answer's format; wins over Accept"));
    } else if (n == "timeout") {
        set(s, "type", str("number"));
        set(s, "exclusiveMinimum", integer(0));
        set(s, "description",
            str("seconds the query may run at most; it can only shorten the server's limit"));
    } else {
        set(s, "type", str("boolean"));
        set(s, "description", str("every row as a download rather than a page (no paging)"));
    }
    return s;
}

// The error body's schema.
Owned error_schema()
{
    Owned error = object();
    set(error, "type", str("object"));
    Owned eprops = object();
    Owned string_schema = object();
    set(string_schema, "type", str("string"));
    set(eprops, "error", Owned(json_deep_copy(string_schema.v)));
    Owned code = object();
    set(code, "type", str("string"));
    set(code, "description", str("stable: the README's Errors table"));
    set(eprops, "code", std::move(code));
    set(eprops, "request_id", Owned(json_deep_copy(string_schema.v)));
    Owned problems = object();
    set(problems, "type", str("object"));
    set(problems, "additionalProperties", std::move(string_schema));
    set(problems, "description", str("a problem per parameter or field, by its name"));
    set(eprops, "errors", std::move(problems));
    set(error, "properties", std::move(eprops));
    Owned ereq = array();
    for (const char *k : {"error", "code", "request_id"})
        append(ereq, str(k));
    set(error, "required", std::move(ereq));
    return error;
}

Owned schemas(const api_description::Api &api)
{
    Owned schemas = object();
    set(schemas, "Error", error_schema());
    for (const char *option : {"page", "page_size", "format", "timeout", "stream"})
        set(schemas, std::string("option.") + option, option_schema(option));
    for (const Query &q : api.queries)
        set(schemas, q.name + ".row", row_schema(q));
    return schemas;
}

// An answer with the error body, described, and the headers it declares (name, schema).
Owned error_response(const char *description, std::vector<std::pair<const char *, Owned>> headers)
{
    Owned r = object();
    set(r, "description", str(description));
    set(r, "content", json_content(reference("#/components/schemas/Error")));
    if (!headers.empty()) {
        Owned declared = object();
        for (auto &h : headers)
            set(declared, h.first, std::move(h.second));
        set(r, "headers", std::move(declared));
    }
    return r;
}

// The error answers the operations refer to: Error, Refused and Unavailable.
Owned responses()
{
    Owned err = error_response("an error, with its stable code", {});
    // A refusal by a limit: the error, and where the caller stands (http/limit_fields.hpp).
    std::vector<std::pair<const char *, Owned>> refused_headers;
    refused_headers.emplace_back("Retry-After",
                                 header("integer", "seconds until a call can be admitted again"));
    refused_headers.emplace_back("RateLimit", reference("#/components/headers/RateLimit"));
    refused_headers.emplace_back("RateLimit-Policy",
                                 reference("#/components/headers/RateLimit-Policy"));
    Owned refused = error_response(
        "a call refused by the caller's rate limit or quota (rate_limited, quota_exceeded), "
        "before anything of it ran",
        std::move(refused_headers));
    // The server cannot serve it now: stopping, overloaded, no room (a Retry-After when trying
    // again soon helps; none when it will not, as on a standby for a write).
    std::vector<std::pair<const char *, Owned>> unavailable_headers;
    unavailable_headers.emplace_back(
        "Retry-After", header("integer", "seconds after which the call may be tried again"));
    Owned unavailable = error_response(
        "the server cannot serve the call now (stopping, overloaded, no room for it); "
        "Retry-After, when sent, says when to try again",
        std::move(unavailable_headers));
    Owned responses = object();
    set(responses, "Error", std::move(err));
    set(responses, "Refused", std::move(refused));
    set(responses, "Unavailable", std::move(unavailable));
    return responses;
}

// The IETF draft's fields (draft-ietf-httpapi-ratelimit-headers), Structured Fields (RFC 9651)
// sent to a caller with a rate or a quota.
Owned limit_headers()
{
    Owned limit_headers = object();
    set(limit_headers, "RateLimit",
        header("string", "where a caller with a rate or a quota stands, as the IETF draft's "
                         "RateLimit field (a Structured Field): \"rate\", \"daily\" or "
                         "\"monthly\", with r the calls left and t the seconds until they are "
                         "all back, e.g. \"rate\";r=49;t=1"));
    set(limit_headers, "RateLimit-Policy",
        header("string", "the policy the RateLimit field speaks of (a Structured Field): q calls "
                         "over a window of w seconds, e.g. \"rate\";q=50;w=1"));
    return limit_headers;
}

// The options every call takes in its query string, and the request headers it reads.
Owned parameters()
{
    Owned parameters = object();
    for (const char *option : {"page", "page_size", "format", "timeout", "stream"}) {
        Owned p = object();
        set(p, "name", str(option));
        set(p, "in", str("query"));
        set(p, "required", boolean(false));
        set(p, "schema", reference(std::string("#/components/schemas/option.") + option));
        set(parameters, option, std::move(p));
    }
    set(parameters, "Accept",
        header_parameter("Accept", "the answer's format by media type, with q-values"));
    set(parameters, "If-None-Match",
        header_parameter("If-None-Match",
                         "a tag of an answer the caller has: 304 while it is unchanged"));
    return parameters;
}

Owned security_schemes()
{
    Owned security = object();
    Owned key = object();
    set(key, "type", str("apiKey"));
    set(key, "in", str("header"));
    set(key, "name", str("X-API-Key"));
    set(key, "description", str("a key made with querygate.create_key"));
    set(security, "apiKey", std::move(key));
    Owned bearer = object();
    set(bearer, "type", str("http"));
    set(bearer, "scheme", str("bearer"));
    set(bearer, "bearerFormat", str("JWT"));
    set(bearer, "description", str("a signed JWT, or a key as a bearer token"));
    set(security, "bearer", std::move(bearer));
    return security;
}

Owned components(const api_description::Api &api)
{
    Owned c = object();
    set(c, "schemas", schemas(api));
    set(c, "responses", responses());
    set(c, "headers", limit_headers());
    set(c, "parameters", parameters());
    set(c, "securitySchemes", security_schemes());
    return c;
}

} // namespace

std::string document(const api_description::Api &api)
{
    Owned doc = object();
    set(doc, "openapi", str("3.1.0"));
    // Said, not left to the reader: a validator that assumes an older draft (Prism reads draft 7
    // without it) would skip 2020-12's keywords.
    set(doc, "jsonSchemaDialect", str("https://json-schema.org/draft/2020-12/schema"));
    Owned info = object();
    set(info, "title", str("querygate"));
    set(info, "version", str(QUERYGATE_VERSION_TEXT));
    set(info, "description",
        str("The saved queries this caller may call, as its key or token sees them: each "
            "parameter's rules, and each column as its policy serves it; and, when its policy "
            "takes SQL of its own, POST /sql and GET /schema."));
    Owned license = object();
    set(license, "name", str("PostgreSQL License"));
    set(license, "identifier", str("PostgreSQL"));
    set(info, "license", std::move(license));
    set(doc, "info", std::move(info));
    Owned servers = array();
    Owned server = object();
    set(server, "url", str("/"));
    append(servers, std::move(server));
    set(doc, "servers", std::move(servers));
    Owned security = array();
    for (const char *scheme : {"apiKey", "bearer"}) {
        Owned req = object();
        set(req, scheme, array());
        append(security, std::move(req));
    }
    set(doc, "security", std::move(security));
    Owned tags = array();
    Owned tag = object();
    set(tag, "name", str("queries"));
    set(tag, "description", str("saved queries"));
    append(tags, std::move(tag));
    Owned paths = object();
    for (const Query &q : api.queries) {
        Owned item = object();
        if (!q.writes) // a GET never writes (405, Allow: POST)
            set(item, "get", operation(q, false));
        set(item, "post", operation(q, true));
        set(paths, "/q/" + q.name, std::move(item));
    }
    Owned parts = components(api);
    if (api.adhoc) {
        Owned schemas(json_incref(json_object_get(parts.v, "schemas")));
        add_sql_paths(paths, schemas, tags);
    }
    set(doc, "tags", std::move(tags));
    set(doc, "paths", std::move(paths));
    set(doc, "components", std::move(parts));
    return dump(doc, true);
}

std::string catalog(const api_description::Api &api)
{
    Owned doc = object();
    // Who asks: its limits, as the RateLimit-Policy field a 429 carries says them.
    Owned caller = object();
    if (!api.limit_policies.empty())
        set(caller, "RateLimit-Policy", str(api.limit_policies));
    set(doc, "caller", std::move(caller));
    Owned queries = array();
    for (const Query &q : api.queries) {
        Owned entry = object();
        set(entry, "name", str(q.name));
        set(entry, "description", q.description.empty() ? Owned(json_null()) : str(q.description));
        set(entry, "version", integer(q.version));
        set(entry, "writes", boolean(q.writes));
        Owned methods = array();
        if (!q.writes)
            append(methods, str("GET"));
        append(methods, str("POST"));
        set(entry, "methods", std::move(methods));
        Owned params = array();
        for (const Param &p : q.params) {
            Owned pe = object();
            set(pe, "name", str(p.name));
            set(pe, "type", str(kind_name(p.type.kind)));
            set(pe, "postgres_type", str(p.type.postgres));
            set(pe, "required", boolean(required(p)));
            Owned rules = param_schema(p);
            json_object_del(rules.v, "type");
            json_object_del(rules.v, "format");
            json_object_del(rules.v, "description");
            if (p.has_rule && !p.rule.description.empty())
                set(pe, "description", str(p.rule.description));
            set(pe, "rules", std::move(rules));
            append(params, std::move(pe));
        }
        set(entry, "parameters", std::move(params));
        Owned columns = array();
        for (const Column &c : q.columns) {
            if (c.action == masking::Action::drop)
                continue;
            Owned ce = object();
            set(ce, "name", str(c.name));
            set(ce, "type", str(served_kind_name(c)));
            set(ce, "postgres_type", str(c.type.postgres));
            set(ce, "mask",
                c.action == masking::Action::none ? Owned(json_null())
                                                  : str(masking::action_name(c.action)));
            append(columns, std::move(ce));
        }
        set(entry, "columns", std::move(columns));
        Owned formats = array();
        for (const auto &e : answer_format::all)
            append(formats, str(e.name));
        set(entry, "formats", std::move(formats));
        append(queries, std::move(entry));
    }
    set(doc, "queries", std::move(queries));
    return dump(doc, true);
}

} // namespace openapi
