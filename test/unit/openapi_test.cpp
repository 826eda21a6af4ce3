// OpenAPI 3.1 and the catalog (src/http/openapi.hpp): the patterns it trusts, and the documents'
// shape for a described API.
#include "http/json_schema.hpp"
#include "http/openapi.hpp"
#include "tap.hpp"

#include <jansson.h>

#include <string>

using tap::is;
using tap::ok;

namespace {

json_t *parse(const std::string &text)
{
    json_error_t error;
    return json_loads(text.c_str(), 0, &error);
}

const char *text_at(json_t *root, const char *path)
{
    // A '/'-separated path of object keys (no escaping: the keys here have no '/').
    json_t *v = root;
    std::string p = path;
    std::size_t start = 0;
    while (v != nullptr && start <= p.size()) {
        std::size_t slash = p.find('/', start);
        std::string key =
            p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        v = json_object_get(v, key.c_str());
        if (slash == std::string::npos)
            break;
        start = slash + 1;
    }
    return v && json_is_string(v) ? json_string_value(v) : nullptr;
}

api_description::Api sample()
{
    api_description::Api api;
    api_description::Query q;
    q.name = "people";
    q.description = "one person";
    api_description::Param id;
    id.name = "id";
    id.type.kind = api_description::Kind::integer;
    id.has_rule = true;
    id.rule.has_min = true;
    id.rule.min = 1;
    id.rule.enum_values = {"1", "2"};
    q.params.push_back(id);
    api_description::Column ssn;
    ssn.name = "ssn";
    ssn.action = masking::Action::hash;
    api_description::Column secret;
    secret.name = "secret";
    secret.action = masking::Action::drop;
    q.columns = {ssn, secret};
    api.queries.push_back(q);
    return api;
}

} // namespace

int main()
{
    ok(json_schema::ecma_compatible("[A-Za-z0-9_]+"), "a class and a quantifier");
    ok(json_schema::ecma_compatible("^\\d{3}-\\d{4}$"), "\\d, anchors and counts");
    ok(json_schema::ecma_compatible("(a|b)+\\.c"), "groups, alternation, an escaped dot");
    ok(!json_schema::ecma_compatible("[[:alpha:]]+"), "a POSIX class is PostgreSQL's only");
    ok(!json_schema::ecma_compatible("\\mword\\M"), "\\m and \\M are PostgreSQL's only");
    ok(!json_schema::ecma_compatible("(?i)abc"), "embedded options differ");
    ok(!json_schema::ecma_compatible("\\b"),
       "\\b is a backspace in a PostgreSQL ARE, a word boundary in ECMA");
    ok(!json_schema::ecma_compatible("[]a]"), "a leading ] differs");
    ok(!json_schema::ecma_compatible("[abc"), "an open class");
    ok(!json_schema::ecma_compatible("abc\\"), "a trailing backslash");

    const std::string doc = openapi::document(sample());
    json_t *root = parse(doc);
    ok(root != nullptr, "the document is JSON");
    is(std::string(text_at(root, "openapi") ? text_at(root, "openapi") : ""), std::string("3.1.0"),
       "OpenAPI 3.1.0");
    json_t *path = json_object_get(json_object_get(root, "paths"), "/q/people");
    ok(path && json_object_get(path, "get") && json_object_get(path, "post"),
       "GET and POST for the query");
    json_t *row = json_object_get(
        json_object_get(json_object_get(json_object_get(root, "components"), "schemas"),
                        "people.row"),
        "properties");
    ok(row && json_object_get(row, "ssn") && !json_object_get(row, "secret"),
       "the row has the hashed column and not the dropped one");
    is(std::string(json_string_value(json_object_get(json_object_get(row, "ssn"), "pattern"))),
       std::string("^[0-9a-f]{64}$"), "a hash is 64 hex digits");
    json_t *params = json_object_get(json_object_get(path, "get"), "parameters");
    json_t *id = nullptr;
    for (size_t i = 0; i < json_array_size(params); i++)
        if (json_object_get(json_array_get(params, i), "name") &&
            std::string(json_string_value(json_object_get(json_array_get(params, i), "name"))) ==
                "id")
            id = json_array_get(params, i);
    json_t *schema = json_object_get(id, "schema");
    ok(id && json_is_integer(json_object_get(schema, "minimum")) &&
           json_integer_value(json_object_get(schema, "minimum")) == 1,
       "a whole minimum is an integer");
    json_t *values = json_object_get(schema, "enum");
    ok(json_array_size(values) == 2 && json_is_integer(json_array_get(values, 0)),
       "an integer's enum values are numbers");
    json_decref(root);

    ok(json_object_get(json_object_get(root = parse(doc), "paths"), "/sql") == nullptr,
       "no /sql for a caller without SQL of its own");
    json_decref(root);
    api_description::Api adhoc = sample();
    adhoc.adhoc = true;
    root = parse(openapi::document(adhoc));
    json_t *paths = json_object_get(root, "paths");
    ok(json_object_get(json_object_get(paths, "/sql"), "post") != nullptr &&
           json_object_get(json_object_get(paths, "/schema"), "get") != nullptr,
       "with it: POST /sql and GET /schema");
    json_t *components = json_object_get(json_object_get(root, "components"), "schemas");
    ok(json_object_get(components, "querygate.sql_body") != nullptr &&
           json_object_get(components, "querygate.schema") != nullptr,
       "and the schemas they name");
    ok(json_object_get(
           json_object_get(json_object_get(json_object_get(paths, "/sql"), "post"), "responses"),
           "403") != nullptr,
       "with the error answers");
    json_decref(root);

    json_t *cat = parse(openapi::catalog(sample()));
    json_t *first = json_array_get(json_object_get(cat, "queries"), 0);
    ok(first && std::string(json_string_value(json_object_get(first, "name"))) == "people",
       "the catalog names the query");
    ok(json_array_size(json_object_get(first, "columns")) == 1,
       "and its columns, the dropped one left out");
    json_decref(cat);
    return tap::done();
}
