// What SQL a caller writes may use (src/common/schema_description.hpp) and GET /schema's answer
// (src/http/schema_document.hpp): a table's DDL as the caller may see it, a table's name read as
// SQL reads one, and the answer's JSON with and without the DDL.
#include "common/schema_description.hpp"
#include "http/schema_document.hpp"
#include "rules/write_ops.hpp"
#include "tap.hpp"

#include <jansson.h>

#include <string>

using tap::is;
using tap::like;
using tap::ok;

namespace {

using namespace schema_description;

Column column(const char *name, const char *type, bool nullable,
              masking::Action mask = masking::Action::none)
{
    Column c;
    c.name = c.quoted = name;
    c.type = type;
    c.nullable = nullable;
    c.mask = mask;
    c.filterable = mask == masking::Action::none;
    return c;
}

Table accounts()
{
    Table t;
    t.schema = "public";
    t.name = "accounts";
    t.quoted = "public.accounts";
    t.columns = {column("aid", "integer", false), column("bid", "integer", true),
                 column("owner", "character varying(20)", true, masking::Action::hash)};
    t.primary_key = {"aid"};
    return t;
}

void ddl_tests()
{
    is(ddl(accounts()),
       std::string("CREATE TABLE public.accounts (\n"
                   "    aid integer NOT NULL,\n"
                   "    bid integer,\n"
                   "    owner character varying(20),\n"
                   "    PRIMARY KEY (aid)\n"
                   ");"),
       "a table: its columns, types, NOT NULL and primary key");
    Table t = accounts();
    t.primary_key.clear();
    t.columns.resize(1);
    is(ddl(t), std::string("CREATE TABLE public.accounts (\n    aid integer NOT NULL\n);"),
       "no key shown: none written");
    t.primary_key = {"aid", "\"Two Words\""};
    t.columns.push_back(column("\"Two Words\"", "text", false));
    like(ddl(t), "    \"Two Words\" text NOT NULL,\n    PRIMARY KEY (aid, \"Two Words\")\n);",
         "a quoted name as SQL writes it, and a key of two columns in its order");
    t.kind = Kind::view;
    t.primary_key.clear();
    is(ddl(t).substr(0, 28), std::string("CREATE VIEW public.accounts "), "a view's keyword");
    t.kind = Kind::materialized_view;
    is(ddl(t).substr(0, 25), std::string("CREATE MATERIALIZED VIEW "), "a materialized view's");
    t.kind = Kind::foreign_table;
    is(ddl(t).substr(0, 21), std::string("CREATE FOREIGN TABLE "), "a foreign table's");
    t.columns.clear();
    t.kind = Kind::table;
    is(ddl(t), std::string("CREATE TABLE public.accounts (\n);"), "no column shown");
}

void names()
{
    std::string schema, name;
    ok(parse_name("accounts", schema, name) && schema.empty() && name == "accounts", "a bare name");
    ok(parse_name("Public.Accounts", schema, name) && schema == "public" && name == "accounts",
       "a qualified one, folded to lower case");
    ok(parse_name(" \"My Schema\" . \"A\"\"b\" ", schema, name) && schema == "My Schema" &&
           name == "A\"b",
       "quoted parts kept as written, a doubled quote one quote, blanks around ignored");
    ok(parse_name("\"a.b\"", schema, name) && schema.empty() && name == "a.b",
       "a dot inside quotes is part of the name");
    ok(!parse_name("", schema, name), "nothing");
    ok(!parse_name("a.b.c", schema, name), "three parts");
    ok(!parse_name("a.", schema, name), "an empty part");
    ok(!parse_name(".a", schema, name), "an empty schema");
    ok(!parse_name("\"a", schema, name), "an unclosed quote");
    ok(!parse_name("\"\"", schema, name), "an empty quoted name");
    ok(!parse_name("a b", schema, name), "two words");
    ok(!parse_name("a\"b\"", schema, name), "a quote inside an unquoted name");
}

json_t *member(json_t *object, const char *key)
{
    return json_object_get(object, key);
}

std::string text(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : std::string("(not a string)");
}

void document()
{
    Schema schema;
    schema.search_path = "pg_catalog, public";
    schema.tables.push_back(accounts());
    schema.write_ops = WRITE_UPDATE;
    json_t *doc = json_loads(schema_document::json(schema, true).c_str(), 0, nullptr);
    ok(doc != nullptr, "the answer is JSON");
    is(text(member(doc, "search_path")), std::string("pg_catalog, public"), "its search_path");
    json_t *table = json_array_get(member(doc, "tables"), 0);
    is(text(member(table, "kind")), std::string("table"), "a table's kind");
    json_t *owner = json_array_get(member(table, "columns"), 2);
    is(text(member(owner, "mask")), std::string("hash"), "a masked column's action");
    ok(json_is_false(member(owner, "filterable")), "not filterable");
    json_t *aid = json_array_get(member(table, "columns"), 0);
    ok(json_is_null(member(aid, "mask")) && json_is_true(member(aid, "filterable")) &&
           json_is_false(member(aid, "nullable")),
       "an unmasked column: mask null, filterable, NOT NULL");
    is(text(member(table, "ddl")), ddl(accounts()), "the table's DDL");
    is(text(json_array_get(member(doc, "write_ops"), 0)), std::string("update"), "the writes");
    is(text(member(doc, "functions")), std::string(functions), "the functions");
    json_decref(doc);
    doc = json_loads(schema_document::json(schema, false).c_str(), 0, nullptr);
    ok(member(json_array_get(member(doc, "tables"), 0), "ddl") == nullptr, "without the DDL");
    json_decref(doc);

    json_t *with = json_loads(
        json_schema::dump(schema_document::json_schema_of(true), false).c_str(), 0, nullptr);
    json_t *table_props =
        member(member(member(member(with, "properties"), "tables"), "items"), "properties");
    ok(member(table_props, "ddl") != nullptr, "its JSON Schema names the DDL when it is given");
    json_t *required =
        member(member(member(member(with, "properties"), "tables"), "items"), "required");
    ok(json_array_size(required) == 5, "and requires every member of a table");
    json_decref(with);
    json_t *without = json_loads(
        json_schema::dump(schema_document::json_schema_of(false), false).c_str(), 0, nullptr);
    ok(member(
           member(member(member(member(without, "properties"), "tables"), "items"), "properties"),
           "ddl") == nullptr,
       "and not when it is not");
    json_decref(without);
}

} // namespace

int main()
{
    ddl_tests();
    names();
    document();
    return tap::done();
}
