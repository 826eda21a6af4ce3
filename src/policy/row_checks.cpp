// What the database checks on each row a write changes: see row_checks.hpp.
#include "policy/row_checks.hpp"
#include "policy/lineage.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_policy.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rowsecurity.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace row_checks {

namespace {

// Column numbers in a Bitmapset as pull_varattnos writes them (offset so system columns fit).
inline int bit(AttrNumber attno)
{
    return attno - FirstLowInvalidHeapAttributeNumber;
}
inline AttrNumber attno_of(int member)
{
    return static_cast<AttrNumber>(member + FirstLowInvalidHeapAttributeNumber);
}

// The columns of relation 1 an expression reads, from a tree or from its nodeToString text as the
// catalog keeps it.
Bitmapset *columns_of(Node *expr)
{
    Bitmapset *columns = nullptr;
    if (expr != nullptr)
        pull_varattnos(expr, 1, &columns);
    return columns;
}

Bitmapset *columns_of_text(const char *node_text)
{
    return node_text == nullptr ? nullptr
                                : columns_of(static_cast<Node *>(stringToNode(node_text)));
}

struct Collector {
    Relation rel;
    Write write;
    Bitmapset *changed; // bit(): the columns whose new value the write sets (generated included)
    List **checks;
    char *table; // schema.table, for the names of checks
};

// A stored generated column stands for the columns its expression reads.
Bitmapset *generated_expression(Relation rel, AttrNumber attno)
{
    TupleConstr *constr = RelationGetDescr(rel)->constr;
    for (int d = 0; constr != nullptr && d < constr->num_defval; d++)
        if (constr->defval[d].adnum == attno)
            return columns_of_text(constr->defval[d].adbin);
    return nullptr;
}

bool is_generated(Relation rel, AttrNumber attno)
{
    return attno > 0 && attno <= RelationGetDescr(rel)->natts &&
           TupleDescAttr(RelationGetDescr(rel), attno - 1)->attgenerated != '\0';
}

void add_check(Collector *c, Oid relid, AttrNumber attno, bool existing, const char *by)
{
    RowCheck *check = static_cast<RowCheck *>(palloc0(sizeof(RowCheck)));
    check->by = pstrdup(by);
    check->existing = existing;
    if (attno == InvalidAttrNumber) {
        check->any_column = true;
    } else {
        lineage::ColumnSet one;
        memset(&one, 0, sizeof(one));
        lineage::add_column(&one, relid, attno);
        check->column = lineage::named_columns(&one)[0];
    }
    *c->checks = lappend(*c->checks, check);
}

// A check over `columns` (bit()s) of the written table: each is read as the write left it, that
// is, the value the write sets when it changed it, else the value stored (an update's other
// columns; an insert's are defaults, which hide nothing). `others`: it also compares the columns'
// values in other rows (an index), which are always stored values. Generated columns are read
// through the columns of their expressions.
void add_own_columns(Collector *c, Bitmapset *columns, bool others, const char *by)
{
    const Oid relid = RelationGetRelid(c->rel);
    // Generated columns first give way to the columns they are computed from (which are never
    // generated themselves: PostgreSQL refuses that).
    Bitmapset *read = nullptr;
    int m = -1;
    while ((m = bms_next_member(columns, m)) >= 0) {
        if (is_generated(c->rel, attno_of(m)))
            read = bms_union(read, generated_expression(c->rel, attno_of(m)));
        else
            read = bms_add_member(read, m);
    }
    m = -1;
    while ((m = bms_next_member(read, m)) >= 0) {
        const AttrNumber attno = attno_of(m);
        if (attno <= 0)
            continue;
        const bool changed = bms_is_member(m, c->changed);
        if (changed)
            add_check(c, relid, attno, false, by);
        if (others || (!changed && c->write == Write::update))
            add_check(c, relid, attno, true, by);
    }
}

// CHECK constraints over a column the write changes.
void check_constraints(Collector *c)
{
    TupleConstr *constr = RelationGetDescr(c->rel)->constr;
    for (int k = 0; constr != nullptr && k < constr->num_check; k++) {
        Bitmapset *columns = columns_of_text(constr->check[k].ccbin);
        if (!bms_overlap(columns, c->changed))
            continue;
        add_own_columns(c, columns, false,
                        psprintf("constraint %s on %s", constr->check[k].ccname, c->table));
    }
}

// Unique and exclusion indexes over a column the write changes: the new row's key is compared with
// every other row's.
void indexes(Collector *c)
{
    ListCell *lc;
    foreach (lc, RelationGetIndexList(c->rel)) {
        const Oid index_oid = lfirst_oid(lc);
        HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
        if (!HeapTupleIsValid(tuple))
            continue;
        Form_pg_index index = reinterpret_cast<Form_pg_index>(GETSTRUCT(tuple));
        Bitmapset *columns = nullptr;
        if (index->indisunique || index->indisexclusion) {
            for (int k = 0; k < index->indnatts; k++)
                if (index->indkey.values[k] > 0)
                    columns = bms_add_member(columns, bit(index->indkey.values[k]));
            const int parts[] = {Anum_pg_index_indexprs, Anum_pg_index_indpred};
            for (int part : parts) {
                bool isnull;
                Datum value = SysCacheGetAttr(INDEXRELID, tuple, part, &isnull);
                if (!isnull)
                    columns = bms_union(columns, columns_of_text(TextDatumGetCString(value)));
            }
        }
        ReleaseSysCache(tuple);
        if (bms_overlap(columns, c->changed))
            add_own_columns(c, columns, true,
                            psprintf("index %s on %s", get_rel_name(index_oid), c->table));
    }
}

// Foreign keys from this table whose columns the write changes: the referenced rows are looked up.
void keys_out(Collector *c)
{
    ListCell *lc;
    foreach (lc, RelationGetFKeyList(c->rel)) {
        ForeignKeyCacheInfo *fk = lfirst_node(ForeignKeyCacheInfo, lc);
        Bitmapset *columns = nullptr;
        for (int k = 0; k < fk->nkeys; k++)
            columns = bms_add_member(columns, bit(fk->conkey[k]));
        if (!bms_overlap(columns, c->changed))
            continue;
        char *by = psprintf("foreign key %s on %s", get_constraint_name(fk->conoid), c->table);
        add_own_columns(c, columns, false, by);
        for (int k = 0; k < fk->nkeys; k++)
            add_check(c, fk->confrelid, fk->confkey[k], true, by);
    }
}

// Foreign keys of other tables that reference a row this write changes the key of, or deletes:
// the referencing rows are looked up (an error, or a cascade, follows from what they hold).
void keys_in(Collector *c)
{
    if (c->write == Write::insert)
        return;
    const Oid relid = RelationGetRelid(c->rel);
    Relation constraints = table_open(ConstraintRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_constraint_confrelid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(constraints, InvalidOid, false, nullptr, 1, &key);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        Form_pg_constraint con = reinterpret_cast<Form_pg_constraint>(GETSTRUCT(tuple));
        if (con->contype != CONSTRAINT_FOREIGN)
            continue;
        AttrNumber conkey[INDEX_MAX_KEYS], confkey[INDEX_MAX_KEYS];
        Oid equality[INDEX_MAX_KEYS];
        int nkeys = 0;
        DeconstructFkConstraintRow(tuple, &nkeys, conkey, confkey, equality, nullptr, nullptr,
                                   nullptr, nullptr);
        bool touched = c->write == Write::remove;
        for (int k = 0; k < nkeys && !touched; k++)
            touched = bms_is_member(bit(confkey[k]), c->changed);
        if (!touched)
            continue;
        char *by = psprintf("foreign key %s on %s.%s", NameStr(con->conname),
                            get_namespace_name(get_rel_namespace(con->conrelid)),
                            get_rel_name(con->conrelid));
        for (int k = 0; k < nkeys; k++) {
            add_check(c, con->conrelid, conkey[k], true, by);
            add_check(c, relid, confkey[k], true, by);
        }
    }
    systable_endscan(scan);
    table_close(constraints, AccessShareLock);
}

// Row-level security: the WITH CHECK (or, without one, the USING) expression of each policy that
// applies to this kind of write checks the row as written.
void row_security(Collector *c)
{
    if (c->write == Write::remove || !c->rel->rd_rel->relrowsecurity ||
        c->rel->rd_rsdesc == nullptr)
        return;
    const char cmd = c->write == Write::insert ? ACL_INSERT_CHR : ACL_UPDATE_CHR;
    ListCell *lc;
    foreach (lc, c->rel->rd_rsdesc->policies) {
        RowSecurityPolicy *policy = static_cast<RowSecurityPolicy *>(lfirst(lc));
        if (policy->polcmd != '*' && policy->polcmd != cmd)
            continue;
        Node *expr = reinterpret_cast<Node *>(policy->with_check_qual);
        if (expr == nullptr && c->write == Write::update)
            expr = reinterpret_cast<Node *>(policy->qual);
        if (expr == nullptr)
            continue;
        char *by = psprintf("row-level security policy %s on %s", policy->policy_name, c->table);
        // A subquery in it reads other tables, which no column list covers (and its tree is not
        // one pull_varattnos may walk).
        if (policy->hassublinks)
            add_check(c, InvalidOid, InvalidAttrNumber, true, by);
        else
            add_own_columns(c, columns_of(expr), false, by);
    }
}

// A user trigger's code can read anything: the write's outcome may follow any value.
void triggers(Collector *c)
{
    TriggerDesc *desc = c->rel->trigdesc;
    for (int t = 0; desc != nullptr && t < desc->numtriggers; t++) {
        const Trigger *trigger = &desc->triggers[t];
        if (trigger->tgisinternal || trigger->tgenabled == TRIGGER_DISABLED)
            continue;
        const int16 type = trigger->tgtype;
        const bool fires = c->write == Write::insert   ? TRIGGER_FOR_INSERT(type)
                           : c->write == Write::update ? TRIGGER_FOR_UPDATE(type)
                                                       : TRIGGER_FOR_DELETE(type);
        if (fires)
            add_check(c, InvalidOid, InvalidAttrNumber, true,
                      psprintf("trigger %s on %s", trigger->tgname, c->table));
    }
}

} // namespace

void collect(Oid relid, Write write, const Bitmapset *assigned, List **checks)
{
    Relation rel = relation_open(relid, AccessShareLock);
    Collector c = {rel, write, nullptr, checks,
                   psprintf("%s.%s", get_namespace_name(RelationGetNamespace(rel)),
                            RelationGetRelationName(rel))};
    TupleDesc desc = RelationGetDescr(rel);
    for (int a = 1; a <= desc->natts; a++) {
        if (TupleDescAttr(desc, a - 1)->attisdropped)
            continue;
        const bool set = write == Write::insert || bms_is_member(a, assigned);
        if (set)
            c.changed = bms_add_member(c.changed, bit(a));
    }
    // A stored generated column changes with any column its expression reads.
    for (int a = 1; write == Write::update && a <= desc->natts; a++)
        if (is_generated(rel, a) && bms_overlap(generated_expression(rel, a), c.changed))
            c.changed = bms_add_member(c.changed, bit(a));
    check_constraints(&c);
    indexes(&c);
    keys_out(&c);
    keys_in(&c);
    row_security(&c);
    triggers(&c);
    relation_close(rel, AccessShareLock);
}

} // namespace row_checks
