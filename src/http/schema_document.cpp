// GET /schema's answer and its JSON Schema: see schema_document.hpp.
#include "http/schema_document.hpp"

#include "rules/write_ops.hpp"

#include <utility>

namespace schema_document {

namespace {

using namespace json_schema;
using schema_description::Column;
using schema_description::Schema;
using schema_description::Table;

Owned column_json(const Column &c)
{
    Owned out = object();
    set(out, "name", str(c.name));
    set(out, "type", str(c.type));
    set(out, "nullable", boolean(c.nullable));
    set(out, "mask",
        c.mask == masking::Action::none ? Owned(json_null()) : str(masking::action_name(c.mask)));
    set(out, "filterable", boolean(c.filterable));
    return out;
}

Owned table_json(const Table &t, bool with_ddl)
{
    Owned out = object();
    set(out, "schema", str(t.schema));
    set(out, "name", str(t.name));
    set(out, "kind", str(schema_description::kind_name(t.kind)));
    Owned columns = array();
    for (const Column &c : t.columns)
        append(columns, column_json(c));
    set(out, "columns", std::move(columns));
    if (with_ddl)
        set(out, "ddl", str(schema_description::ddl(t)));
    return out;
}

Owned column_schema()
{
    Owned p = object();
    set(p, "name", typed("string", "the column's name"));
    set(p, "type", typed("string", "its PostgreSQL type, as format_type gives it"));
    set(p, "nullable", typed("boolean", "whether it may be NULL (no NOT NULL)"));
    Owned mask = object();
    Owned kinds = array();
    for (const char *k : {"string", "null"}) {
        Owned one = object();
        set(one, "type", str(k));
        append(kinds, std::move(one));
    }
    set(mask, "anyOf", std::move(kinds));
    set(mask, "description",
        str("how the caller's policy masks its values (hash, mask, mask_email, null, "
            "partial(lead,trail)), or null when it serves them as they are"));
    set(p, "mask", std::move(mask));
    set(p, "filterable",
        typed("boolean", "whether a statement may compare, group or sort by it (a masked column "
                         "only when the policy allows mask predicates)"));
    return complete_object(std::move(p));
}

Owned table_schema(bool with_ddl)
{
    Owned p = object();
    set(p, "schema", typed("string", "the table's schema"));
    set(p, "name", typed("string", "its name"));
    Owned kind = typed("string", "what it is");
    Owned kinds = array();
    for (auto k : {schema_description::Kind::table, schema_description::Kind::partitioned_table,
                   schema_description::Kind::view, schema_description::Kind::materialized_view,
                   schema_description::Kind::foreign_table})
        append(kinds, str(schema_description::kind_name(k)));
    set(kind, "enum", std::move(kinds));
    set(p, "kind", std::move(kind));
    Owned columns = typed("array", "the columns the caller may read, in the table's order");
    set(columns, "items", column_schema());
    set(p, "columns", std::move(columns));
    if (with_ddl)
        set(p, "ddl",
            typed("string", "the table as the caller may see it, as a CREATE statement: the "
                            "columns shown, their types and NOT NULL, and the primary key when "
                            "all its columns are shown"));
    return complete_object(std::move(p));
}

} // namespace

std::string json(const Schema &schema, bool with_ddl)
{
    Owned doc = object();
    set(doc, "search_path", str(schema.search_path));
    Owned tables = array();
    for (const Table &t : schema.tables)
        append(tables, table_json(t, with_ddl));
    set(doc, "tables", std::move(tables));
    Owned ops = array();
    for (const write_ops::Op &op : write_ops::all)
        if (schema.write_ops & op.bit)
            append(ops, str(op.name));
    set(doc, "write_ops", std::move(ops));
    set(doc, "functions", str(schema_description::functions));
    return dump(doc, false);
}

Owned json_schema_of(bool with_ddl)
{
    Owned p = object();
    set(p, "search_path",
        typed("string", "where the statement's unqualified names resolve, in order"));
    Owned tables = typed("array", "the tables of the policy's allow-list, by schema and name");
    set(tables, "items", table_schema(with_ddl));
    set(p, "tables", std::move(tables));
    Owned ops = typed("array", "what the SQL may write; empty: it only reads");
    Owned op = object();
    set(op, "type", str("string"));
    Owned names = array();
    for (const write_ops::Op &o : write_ops::all)
        append(names, str(o.name));
    set(op, "enum", std::move(names));
    set(ops, "items", std::move(op));
    set(p, "write_ops", std::move(ops));
    set(p, "functions", typed("string", "which functions the SQL may call"));
    return complete_object(std::move(p));
}

} // namespace schema_document
