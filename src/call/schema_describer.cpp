// What a caller may use in SQL of its own: see schema_describer.hpp.
#include "call/schema_describer.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "call/role_subtransaction.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"
#include "policy/policy_decision.hpp"
#include "policy/query_analysis.hpp"
#include "policy/stored_copies.hpp"

#include <algorithm>
#include <tuple>

namespace {

using schema_description::Kind;

// A column as the catalog has it, in palloc'd plain data.
struct ColumnRow {
    AttrNumber attnum;
    char *name;
    char *quoted;
    char *type;
    bool not_null;
    bool readable; // the role may SELECT it
};

// A relation of the allow-list as the catalog has it, in palloc'd plain data.
struct RelationRow {
    bool found; // false: dropped since the list was read
    char relkind;
    char *schema;
    char *name;
    char *quoted;
    int ncolumns;
    ColumnRow *columns;
    int nkey;
    AttrNumber *key; // the primary key's columns, in its order
    // Its ancestors (partitioned tables, inheritance parents): a mask rule on one's same-named
    // column covers this table's, as a call's lineage has it.
    int nancestors;
    char **ancestor_schemas;
    char **ancestor_names;
};

// Whether a role may SELECT a column: on the whole table, or on the column itself.
// PostgreSQL-style.
bool readable(Oid relid, AttrNumber attnum, Oid role, bool whole_table)
{
    bool missing = false;
    return whole_table ||
           pg_attribute_aclcheck_ext(relid, attnum, role, ACL_SELECT, &missing) == ACLCHECK_OK;
}

// The relation's columns that are not dropped, in order. PostgreSQL-style.
void read_columns(Oid relid, int natts, Oid role, RelationRow *out)
{
    bool missing = false;
    const bool whole_table =
        pg_class_aclcheck_ext(relid, role, ACL_SELECT, &missing) == ACLCHECK_OK;
    out->columns = static_cast<ColumnRow *>(palloc0(sizeof(ColumnRow) * Max(natts, 1)));
    for (AttrNumber attnum = 1; attnum <= natts; attnum++) {
        HeapTuple tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
        if (!HeapTupleIsValid(tuple))
            continue;
        Form_pg_attribute a = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));
        if (!a->attisdropped) {
            ColumnRow *c = &out->columns[out->ncolumns++];
            c->attnum = attnum;
            c->name = pstrdup(NameStr(a->attname));
            c->quoted = pstrdup(quote_identifier(c->name));
            c->type = format_type_with_typemod(a->atttypid, a->atttypmod);
            c->not_null = a->attnotnull;
            c->readable = readable(relid, attnum, role, whole_table);
        }
        ReleaseSysCache(tuple);
    }
}

// The relation's primary key, in its order, from pg_constraint (as get_primary_key_attnos reads
// it, which keeps no order). PostgreSQL-style.
void read_primary_key(Oid relid, RelationRow *out)
{
    Relation constraints = table_open(ConstraintRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relid));
    SysScanDesc scan =
        systable_beginscan(constraints, ConstraintRelidTypidNameIndexId, true, nullptr, 1, &key);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        if (reinterpret_cast<Form_pg_constraint>(GETSTRUCT(tuple))->contype != CONSTRAINT_PRIMARY)
            continue;
        bool isnull = false;
        const Datum datum =
            heap_getattr(tuple, Anum_pg_constraint_conkey, RelationGetDescr(constraints), &isnull);
        if (isnull)
            break;
        ArrayType *array = DatumGetArrayTypeP(datum);
        const int n = ARR_DIMS(array)[0];
        out->key = static_cast<AttrNumber *>(palloc(sizeof(AttrNumber) * Max(n, 1)));
        memcpy(out->key, ARR_DATA_PTR(array), sizeof(AttrNumber) * n);
        out->nkey = n;
        break;
    }
    systable_endscan(scan);
    table_close(constraints, AccessShareLock);
}

void read_ancestors(Oid relid, RelationRow *out)
{
    const List *ancestors = relation_ancestors(relid);
    const int n = list_length(ancestors);
    out->ancestor_schemas = static_cast<char **>(palloc0(sizeof(char *) * Max(n, 1)));
    out->ancestor_names = static_cast<char **>(palloc0(sizeof(char *) * Max(n, 1)));
    ListCell *lc;
    foreach (lc, ancestors) {
        const Oid parent = lfirst_oid(lc);
        char *name = get_rel_name(parent);
        char *schema = get_namespace_name(get_rel_namespace(parent));
        if (name == nullptr || schema == nullptr)
            continue;
        out->ancestor_schemas[out->nancestors] = schema;
        out->ancestor_names[out->nancestors++] = name;
    }
}

// What the catalog says of relation relid, as role sees it. PostgreSQL-style.
void read_relation(Oid relid, Oid role, RelationRow *out)
{
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tuple))
        return; // found stays false
    Form_pg_class rel = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple));
    out->relkind = rel->relkind;
    out->name = pstrdup(NameStr(rel->relname));
    const Oid nspid = rel->relnamespace;
    const int natts = rel->relnatts;
    ReleaseSysCache(tuple);
    out->schema = get_namespace_name(nspid);
    if (out->schema == nullptr)
        return;
    out->quoted = quote_qualified_identifier(out->schema, out->name);
    out->found = true;
    read_columns(relid, natts, role, out);
    read_primary_key(relid, out);
    read_ancestors(relid, out);
}

// The relation a statement would read by this name: a bare one in the search_path (the
// current user's: a schema it may not use is passed over), a qualified one in its schema;
// InvalidOid for none. Nothing is raised for a name of nothing. PostgreSQL-style.
Oid resolve(const char *schema, const char *name)
{
    if (schema[0] == '\0')
        return RelnameGetRelid(name);
    const Oid nspid = get_namespace_oid(schema, true);
    return OidIsValid(nspid) ? get_relname_relid(name, nspid) : InvalidOid;
}

bool kind_of(char relkind, Kind &kind)
{
    switch (relkind) {
    case RELKIND_RELATION:
        kind = Kind::table;
        return true;
    case RELKIND_PARTITIONED_TABLE:
        kind = Kind::partitioned_table;
        return true;
    case RELKIND_VIEW:
        kind = Kind::view;
        return true;
    case RELKIND_MATVIEW:
        kind = Kind::materialized_view;
        return true;
    case RELKIND_FOREIGN_TABLE:
        kind = Kind::foreign_table;
        return true;
    default:
        return false; // a sequence, say: nothing a statement reads rows from
    }
}

// The strictest of the rules matching the column by its table's name or an ancestor's.
masking::Action mask_of(const std::vector<masking::Rule> &rules, const RelationRow &rel,
                        const char *column)
{
    masking::Action strictest = masking::action_for(rules, rel.schema, rel.name, column);
    for (int i = 0; i < rel.nancestors; i++)
        strictest = std::max(strictest, masking::action_for(rules, rel.ancestor_schemas[i],
                                                            rel.ancestor_names[i], column));
    return strictest;
}

// The masks of a view's (or materialized view's) columns by lineage, as a call that reads them
// all has them (policy/policy_decision.hpp): the rules on the view's own names and on every
// column its values come from. In a subtransaction of its own: false when the view cannot be
// analysed now (its schema is not the role's to use, say), and its own names' rules are used.
bool masks_by_lineage(const CachedPolicy &policy, const RelationRow &rel,
                      std::vector<masking::Action> &out)
{
    const std::string sql = std::string("SELECT * FROM ") + rel.quoted;
    return in_role_subtransaction(policy.run_as, policy.adhoc_search_path.c_str(), [&] {
        QueryAnalysis analysis;
        pg::guard([&] { analyze_query(sql.c_str(), 0, nullptr, policy.run_as, &analysis); });
        out = decide(analysis, policy.adhoc_rules).column_actions;
    });
}

// What the policy's role reads of the allow-list (of its relation `only`, when valid).
struct Read {
    RelationRow *rows = nullptr;
    int nrows = 0;
    // Per row: its columns' masks by lineage, for a view with masks to apply; else empty.
    std::vector<std::vector<masking::Action>> lineage;
};

// The relations, as the policy's role reads them; `table` names the one to read (as
// parse_name's parts), or is null for all. Throws pg::PgError.
void read_allowed(const CachedPolicy &policy, const std::string *table, const std::string &schema,
                  const std::string &name, Read &out)
{
    const std::vector<RelationId> &allowed = policy.adhoc_rules.allowed_tables;
    const int nallowed = static_cast<int>(allowed.size());
    pg::PgError failed;
    const bool read = in_role_subtransaction(
        policy.run_as, policy.adhoc_search_path.c_str(),
        [&] {
            pg::guard([&] {
                const Oid only =
                    table != nullptr ? resolve(schema.c_str(), name.c_str()) : InvalidOid;
                out.rows =
                    static_cast<RelationRow *>(palloc0(sizeof(RelationRow) * Max(nallowed, 1)));
                for (int i = 0; i < nallowed; i++)
                    if (table == nullptr || allowed[i] == only)
                        read_relation(allowed[i], policy.run_as, &out.rows[out.nrows++]);
            });
            out.lineage.resize(out.nrows);
            for (int i = 0; i < out.nrows; i++) {
                const RelationRow &rel = out.rows[i];
                if (rel.found && !policy.adhoc_rules.masks.empty() &&
                    (rel.relkind == RELKIND_VIEW || rel.relkind == RELKIND_MATVIEW) &&
                    !masks_by_lineage(policy, rel, out.lineage[i]))
                    out.lineage[i].clear();
            }
        },
        &failed);
    if (!read)
        throw failed;
}

// The relation as the caller may see it; false when it is nothing a statement reads from.
// `lineage`: its columns' masks by lineage, or empty.
bool described(const RelationRow &rel, const std::vector<masking::Action> &lineage,
               const PolicyRules &rules, schema_description::Table &out)
{
    if (!rel.found || !kind_of(rel.relkind, out.kind))
        return false;
    out.schema = rel.schema;
    out.name = rel.name;
    out.quoted = rel.quoted;
    const bool traced = lineage.size() == static_cast<std::size_t>(rel.ncolumns);
    std::vector<AttrNumber> shown;
    for (int i = 0; i < rel.ncolumns; i++) {
        const ColumnRow &c = rel.columns[i];
        const masking::Action mask = std::max(mask_of(rules.masks, rel, c.name),
                                              traced ? lineage[i] : masking::Action::none);
        if (!c.readable || mask == masking::Action::drop)
            continue;
        schema_description::Column column;
        column.name = c.name;
        column.quoted = c.quoted;
        column.type = c.type;
        column.nullable = !c.not_null;
        column.mask = mask;
        column.filterable = mask == masking::Action::none || rules.mask_predicates_allowed;
        out.columns.push_back(std::move(column));
        shown.push_back(c.attnum);
    }
    for (int i = 0; i < rel.nkey; i++) {
        const auto at = std::find(shown.begin(), shown.end(), rel.key[i]);
        if (at == shown.end()) {
            out.primary_key.clear(); // a key column the caller may not see: no key shown
            break;
        }
        out.primary_key.push_back(out.columns[at - shown.begin()].quoted);
    }
    return true;
}

ApiError refused_name()
{
    return api_errors::make(error_code::name_not_allowed,
                            "the table named is not one this caller's policy may use in SQL of "
                            "its own, or does not exist");
}

} // namespace

ApiError describe_schema(const CachedPolicy &policy, const std::string *table,
                         schema_description::Schema &out)
{
    if (!policy.adhoc)
        return api_errors::make(error_code::sql_not_allowed,
                                "this caller's policy takes no SQL of its own: its saved queries "
                                "are at /catalog");
    std::string schema_part, name_part;
    if (table != nullptr && !schema_description::parse_name(*table, schema_part, name_part))
        return refused_name();
    Read read;
    read_allowed(policy, table, schema_part, name_part, read);
    out.search_path = policy.adhoc_search_path;
    // While writes are off the server refuses every write, whatever the policy is granted.
    out.write_ops = settings::allow_writes ? policy.adhoc_rules.write_ops : 0;
    out.tables.clear();
    for (int i = 0; i < read.nrows; i++) {
        schema_description::Table t;
        if (described(read.rows[i], read.lineage[i], policy.adhoc_rules, t))
            out.tables.push_back(std::move(t));
    }
    if (table != nullptr && out.tables.empty())
        return refused_name();
    const auto name_of = [](const schema_description::Table &t) {
        return std::tie(t.schema, t.name);
    };
    std::sort(out.tables.begin(), out.tables.end(),
              [&](const auto &a, const auto &b) { return name_of(a) < name_of(b); });
    // A relation listed twice is described once.
    out.tables.erase(
        std::unique(out.tables.begin(), out.tables.end(),
                    [&](const auto &a, const auto &b) { return name_of(a) == name_of(b); }),
        out.tables.end());
    return ApiError();
}
