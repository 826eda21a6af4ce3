// What a saved query touches, writes and returns: see query_analysis.hpp.
//
// Two trees. The relations a statement reads or writes (for table allow-lists) and the writes it
// makes come from the analyzed tree before the rewriter runs, so that a view counts as itself.
// The lineage of the output columns, the columns predicates use and the relations the analysis
// depends on come from the rewritten tree, where views are expanded into their defining queries,
// so that a rule on a view's base table applies through the view.
//
// The lineage of outputs and writes is lineage.cpp's; what a statement does with columns besides
// returning them (predicates, unselected computations, writes) is column_uses.cpp's.
//
// PostgreSQL-style code: palloc'd plain data only, so ereport may jump out of any of it.
#include "policy/query_analysis.hpp"
#include "policy/code_trust.hpp"
#include "policy/column_uses.hpp"
#include "policy/function_effects.hpp"
#include "pg/pg_guard.hpp"
#include "policy/lineage.hpp"
#include "policy/privilege_check.hpp"
#include "policy/saved_query_analysis.hpp"
#include "policy/tree_walker.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_statistic_ext_data.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

#include <cstring>

using lineage::ColumnSet;
using lineage::Uses;

namespace {

// ------------------------------------------------------------------ relations before rewrite

struct RelationCollector {
    int n;
    int capacity;
    Oid *oids;
    int write_ops;
};

void add_oid(RelationCollector *c, Oid relid)
{
    for (int i = 0; i < c->n; i++)
        if (c->oids[i] == relid)
            return;
    if (c->n == c->capacity) {
        c->capacity = c->capacity ? c->capacity * 2 : 8;
        c->oids = static_cast<Oid *>(c->oids ? repalloc(c->oids, sizeof(Oid) * c->capacity)
                                             : palloc(sizeof(Oid) * c->capacity));
    }
    c->oids[c->n++] = relid;
}

int write_op_of(CmdType type)
{
    switch (type) {
    case CMD_INSERT:
        return WRITE_INSERT;
    case CMD_UPDATE:
        return WRITE_UPDATE;
    case CMD_DELETE:
        return WRITE_DELETE;
    case CMD_MERGE:
        return WRITE_MERGE;
    default:
        return 0;
    }
}

// Every RTE_RELATION of every Query reachable from node (range tables, subqueries in FROM,
// sublinks anywhere, CTEs), and the command type of every Query. securityQuals are walked too
// (they are empty before rewrite; in the rewritten tree, what row-level security reads is still
// something the analysis depends on).
bool relation_walker(Node *node, RelationCollector *c)
{
    if (node == nullptr)
        return false;
    if (IsA(node, RangeTblEntry)) {
        RangeTblEntry *rte = reinterpret_cast<RangeTblEntry *>(node);
        if (rte->rtekind == RTE_RELATION)
            add_oid(c, rte->relid);
        return false; // range_table_walker goes on into the entry's contents
    }
    if (IsA(node, Query)) {
        Query *query = reinterpret_cast<Query *>(node);
        c->write_ops |= write_op_of(query->commandType);
        return query_tree_walker(query, WALKER(relation_walker), c, QTW_EXAMINE_RTES_BEFORE);
    }
    return expression_tree_walker(node, WALKER(relation_walker), c);
}

// Values kept in a set (ValueNames) as indexes into its columns, in the order named_columns gives
// them.
HeldValue *held_values(const ColumnSet *set, List *held, int *n)
{
    *n = list_length(held);
    HeldValue *out = static_cast<HeldValue *>(palloc0(sizeof(HeldValue) * Max(*n, 1)));
    int i = 0;
    ListCell *lc;
    foreach (lc, held) {
        const lineage::ValueNames *names = static_cast<const lineage::ValueNames *>(lfirst(lc));
        HeldValue *value = &out[i++];
        value->sources = static_cast<int *>(palloc(sizeof(int) * Max(names->n, 1)));
        for (int k = 0; k < names->n; k++)
            for (int c = 0; c < set->n; c++)
                if (set->cols[c].relid == names->cols[k].relid &&
                    set->cols[c].attnum == names->cols[k].attnum) {
                    value->sources[value->n++] = c;
                    break;
                }
    }
    return out;
}

// What reaches an output: its made value, its values, and its whole rows' fields'.
void output_values(const ColumnSet *set, OutputLineage *out)
{
    out->made = set->made ? pstrdup(set->made) : nullptr;
    out->held = held_values(set, set->held, &out->nheld);
    out->nfields = list_length(set->fields);
    out->fields = static_cast<OutputField *>(palloc0(sizeof(OutputField) * Max(out->nfields, 1)));
    int i = 0;
    ListCell *lc;
    foreach (lc, set->fields) {
        const lineage::Field *field = static_cast<const lineage::Field *>(lfirst(lc));
        OutputField *f = &out->fields[i++];
        f->made = field->made ? pstrdup(field->made) : nullptr;
        f->held = held_values(set, field->held, &f->nheld);
    }
}

// The one statement of sql, parsed and analyzed.
Query *parse_one(const char *sql, int nparams, const Oid *param_types)
{
    List *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
    if (list_length(raw) != 1)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("a saved query must be exactly one SQL statement"),
                        errdetail("The text holds %d statements.", list_length(raw))));
    Query *query =
        parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, param_types, nparams, nullptr);
    if (query->commandType == CMD_UTILITY)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("a saved query must be SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE")));
    return query;
}

// Before rewrite: whose code it runs (code_trust.hpp), what it names (views as themselves), what
// it writes, and whether it calls a function that reads the database by itself.
void analyze_named(Query *query, Oid saved_by, const Oid *param_types, int nparams,
                   QueryAnalysis *out)
{
    out->untrusted =
        untrusted_code(query, GetUserId(), saved_by, param_types, nparams, &out->trust_depends);
    out->reads_database =
        first_function_where(reinterpret_cast<Node *>(query), function_reads_database);
    RelationCollector named = {0, 0, nullptr, 0};
    (void)relation_walker(reinterpret_cast<Node *>(query), &named);
    out->nrelations = named.n;
    out->relations = static_cast<RelationRef *>(palloc0(sizeof(RelationRef) * Max(named.n, 1)));
    for (int i = 0; i < named.n; i++) {
        out->relations[i].relid = named.oids[i];
        char *schema = get_namespace_name(get_rel_namespace(named.oids[i]));
        char *name = get_rel_name(named.oids[i]);
        out->relations[i].schema = schema ? schema : pstrdup("?");
        out->relations[i].name = name ? name : pstrdup("?");
    }
    out->write_ops = named.write_ops;
    out->returns_rows = query->commandType == CMD_SELECT || query->returningList != NIL;
}

// After rewrite (views expanded): what every rewritten query depends on, does with columns
// (uses) and writes outside the tables, the privileges it lacks, and the statistics it reads.
// Returns the query that is the statement's own (canSetTag), or null.
Query *analyze_rewritten(List *rewritten, Uses *uses, QueryAnalysis *out)
{
    Query *top = nullptr;
    RelationCollector depends = {0, 0, nullptr, 0};
    ListCell *lc;
    foreach (lc, rewritten) {
        Query *q = lfirst_node(Query, lc);
        if (q->canSetTag && top == nullptr)
            top = q;
        (void)relation_walker(reinterpret_cast<Node *>(q), &depends);
        lineage::collect_uses(q, nullptr, uses, false);
        if (out->writes_outside == nullptr)
            out->writes_outside =
                first_function_where(reinterpret_cast<Node *>(q), function_writes_outside);
    }
    out->missing_privilege = first_missing_privilege(rewritten);
    out->ndepends = depends.n;
    out->depends = depends.oids ? depends.oids : static_cast<Oid *>(palloc0(sizeof(Oid)));
    // Statistics hold copies of column values (histogram bounds, most common values), which no
    // lineage can connect to the columns they were taken from: pg_stats, pg_stats_ext and
    // pg_stats_ext_exprs read these two.
    for (int i = 0; i < depends.n && out->value_copies == nullptr; i++)
        if (depends.oids[i] == StatisticRelationId || depends.oids[i] == StatisticExtDataRelationId)
            out->value_copies = psprintf("pg_catalog.%s", get_rel_name(depends.oids[i]));
    return top;
}

// What the statement does with columns besides returning them (column_uses.hpp).
void record_uses(const Uses *uses, QueryAnalysis *out)
{
    out->npredicates = uses->predicates.n;
    out->predicates = lineage::named_columns(&uses->predicates);
    out->predicate_unresolvable =
        uses->predicates.unresolvable ? pstrdup(uses->predicates.unresolvable) : nullptr;
    out->nunselected = uses->unselected.n;
    out->unselected = lineage::named_columns(&uses->unselected);
    out->nwrites = uses->nwrites;
    out->writes =
        uses->writes ? uses->writes : static_cast<WriteLineage *>(palloc0(sizeof(WriteLineage)));
    out->nrow_checks = list_length(uses->row_checks);
    out->row_checks = static_cast<RowCheck *>(palloc0(sizeof(RowCheck) * Max(out->nrow_checks, 1)));
    for (int i = 0; i < out->nrow_checks; i++)
        out->row_checks[i] = *static_cast<RowCheck *>(list_nth(uses->row_checks, i));
}

// The outputs: the statement's own target list (or RETURNING), as the client receives it. Each is
// a site its parameters meet (column_uses.hpp).
void trace_outputs(Query *top, Uses *uses, QueryAnalysis *out)
{
    List *outputs = lineage::output_list(top);
    ListCell *lc;
    int n = 0;
    foreach (lc, outputs)
        if (!lfirst_node(TargetEntry, lc)->resjunk)
            n++;
    out->noutputs = n;
    out->outputs = static_cast<OutputLineage *>(palloc0(sizeof(OutputLineage) * Max(n, 1)));
    int i = 0;
    foreach (lc, outputs) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        if (tle->resjunk)
            continue;
        ColumnSet set;
        memset(&set, 0, sizeof(set));
        lineage::trace_query_column(top, tle->resno, nullptr, top->commandType != CMD_SELECT, &set);
        lineage::meet(uses, &set, nullptr);
        OutputLineage *o = &out->outputs[i++];
        o->name = pstrdup(tle->resname ? tle->resname : "?column?");
        o->nsources = set.n;
        o->sources = lineage::named_columns(&set);
        o->unresolvable = set.unresolvable ? pstrdup(set.unresolvable) : nullptr;
        output_values(&set, o);
    }
}

// What each parameter meets.
void record_params(const Uses *uses, QueryAnalysis *out)
{
    out->nparams = uses->nparams;
    out->params =
        static_cast<ParamLineage *>(palloc0(sizeof(ParamLineage) * Max(uses->nparams, 1)));
    for (int i = 0; i < uses->nparams; i++) {
        out->params[i].nsources = uses->met[i].n;
        out->params[i].sources = lineage::named_columns(&uses->met[i]);
        out->params[i].unresolvable =
            uses->met[i].unresolvable ? pstrdup(uses->met[i].unresolvable) : nullptr;
    }
}

} // namespace

void analyze_query(const char *sql, int nparams, const Oid *param_types, Oid saved_by,
                   QueryAnalysis *out)
{
    analyze_analysed_query(nullptr, sql, nparams, param_types, saved_by, out, nullptr, nullptr);
}

void analyze_analysed_query(Query *query, const char *sql, int nparams, const Oid *param_types,
                            Oid saved_by, QueryAnalysis *out, RewrittenHook on_rewritten, void *arg)
{
    memset(out, 0, sizeof(*out));

    ErrorContextCallback callback;
    callback.callback = analysis_error_callback;
    callback.arg = const_cast<char *>(sql);
    callback.previous = error_context_stack;
    error_context_stack = &callback;
    pg::fault_point("analysis"); // a C++ exception with a callback pushed: see pg_guard.hpp

    if (query == nullptr)
        query = parse_one(sql, nparams, param_types);
    analyze_named(query, saved_by, param_types, nparams, out);

    // After rewrite (views expanded; the rewriter works on this tree in place).
    List *rewritten = QueryRewrite(query);
    if (on_rewritten != nullptr)
        on_rewritten(rewritten, arg);
    Uses uses;
    memset(&uses, 0, sizeof(uses));
    uses.nparams = nparams;
    uses.met = static_cast<ColumnSet *>(palloc0(sizeof(ColumnSet) * Max(nparams, 1)));
    Query *top = analyze_rewritten(rewritten, &uses, out);
    record_uses(&uses, out);
    if (top != nullptr && out->returns_rows)
        trace_outputs(top, &uses, out);
    else
        out->outputs = static_cast<OutputLineage *>(palloc0(sizeof(OutputLineage)));
    record_params(&uses, out);

    error_context_stack = callback.previous;
}
