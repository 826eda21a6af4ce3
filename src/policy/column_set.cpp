// What one trace gathers: see column_set.hpp.
#include "policy/column_set.hpp"

extern "C" {
#include "utils/lsyscache.h"
}

namespace lineage {

namespace {

// Adds a name to a ValueNames, once.
void add_name(ValueNames *names, int *capacity, const ColumnRef &name)
{
    for (int i = 0; i < names->n; i++)
        if (names->cols[i].relid == name.relid && names->cols[i].attnum == name.attnum)
            return;
    if (names->n == *capacity) {
        *capacity = *capacity ? *capacity * 2 : 8;
        names->cols = static_cast<ColumnRef *>(
            names->cols ? repalloc(names->cols, sizeof(ColumnRef) * *capacity)
                        : palloc(sizeof(ColumnRef) * *capacity));
    }
    names->cols[names->n++] = name;
}

// Keeps a value's names in the set, unless a value with the same names is kept already.
void keep_value(ColumnSet *set, ValueNames *names)
{
    ListCell *lc;
    foreach (lc, set->held) {
        const ValueNames *seen = static_cast<const ValueNames *>(lfirst(lc));
        bool same = seen->n == names->n;
        for (int i = 0; same && i < names->n; i++)
            same = seen->cols[i].relid == names->cols[i].relid &&
                   seen->cols[i].attnum == names->cols[i].attnum;
        if (same)
            return;
    }
    set->held = lappend(set->held, names);
}

} // namespace

void add_column(ColumnSet *set, Oid relid, AttrNumber attnum)
{
    const char *how = set->computing ? set->how : nullptr;
    for (int i = 0; i < set->n; i++)
        if (set->cols[i].relid == relid && set->cols[i].attnum == attnum) {
            if (set->hows[i] == nullptr)
                set->hows[i] = how;
            return;
        }
    if (set->n == set->capacity) {
        set->capacity = set->capacity ? set->capacity * 2 : 8;
        set->cols = static_cast<ColumnRef *>(
            set->cols ? repalloc(set->cols, sizeof(ColumnRef) * set->capacity)
                      : palloc(sizeof(ColumnRef) * set->capacity));
        set->hows = static_cast<const char **>(
            set->hows ? repalloc(set->hows, sizeof(char *) * set->capacity)
                      : palloc(sizeof(char *) * set->capacity));
    }
    set->cols[set->n].relid = relid;
    set->cols[set->n].attnum = attnum;
    set->hows[set->n] = how;
    set->n++;
}

void add_columns(ColumnSet *to, const ColumnSet *from)
{
    const bool was_computing = to->computing;
    const char *was_how = to->how;
    for (int i = 0; i < from->n; i++) {
        to->computing = from->hows[i] != nullptr;
        to->how = from->hows[i];
        add_column(to, from->cols[i].relid, from->cols[i].attnum);
    }
    to->computing = was_computing;
    to->how = was_how;
    if (to->unresolvable == nullptr)
        to->unresolvable = from->unresolvable;
}

bool first_visit(ColumnSet *set, const void *node, int index)
{
    for (int i = 0; i < set->nvisited; i++)
        if (set->visited[i].node == node && set->visited[i].index == index &&
            set->visited[i].computing == set->computing)
            return false;
    if (set->nvisited == set->visited_capacity) {
        set->visited_capacity = set->visited_capacity ? set->visited_capacity * 2 : 8;
        set->visited = static_cast<VisitKey *>(
            set->visited ? repalloc(set->visited, sizeof(VisitKey) * set->visited_capacity)
                         : palloc(sizeof(VisitKey) * set->visited_capacity));
    }
    set->visited[set->nvisited].node = node;
    set->visited[set->nvisited].index = index;
    set->visited[set->nvisited].computing = set->computing;
    set->nvisited++;
    return true;
}

void mark_unresolvable(ColumnSet *set, const char *reason)
{
    if (set->unresolvable == nullptr)
        set->unresolvable = reason;
}

void hold_value(ColumnSet *set, Oid relid, AttrNumber attnum, const ColumnRef *ancestors,
                int nancestors)
{
    ValueNames *names = static_cast<ValueNames *>(palloc0(sizeof(ValueNames)));
    int capacity = 0;
    ColumnRef column;
    column.relid = relid;
    column.attnum = attnum;
    add_name(names, &capacity, column);
    for (int i = 0; i < nancestors; i++)
        add_name(names, &capacity, ancestors[i]);
    ListCell *lc;
    foreach (lc, set->through)
        add_name(names, &capacity, *static_cast<ColumnRef *>(lfirst(lc)));
    keep_value(set, names);
}

SourceColumn *named_columns(const ColumnSet *set)
{
    SourceColumn *out = static_cast<SourceColumn *>(palloc0(sizeof(SourceColumn) * Max(set->n, 1)));
    for (int i = 0; i < set->n; i++) {
        Oid relid = set->cols[i].relid;
        out[i].relid = relid;
        out[i].attnum = set->cols[i].attnum;
        char *schema = get_namespace_name(get_rel_namespace(relid));
        char *table = get_rel_name(relid);
        char *column = get_attname(relid, set->cols[i].attnum, true);
        out[i].schema = schema ? schema : pstrdup("?");
        out[i].table = table ? table : pstrdup("?");
        out[i].column = column ? column : psprintf("#%d", set->cols[i].attnum);
        out[i].computed = set->hows[i];
    }
    return out;
}

} // namespace lineage
