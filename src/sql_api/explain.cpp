// querygate.explain(policy, query): what a saved query touches, writes and returns under a policy,
// each output column's base sources and mask, and whether and why the policy refuses it.
//
// It analyzes exactly as an HTTP call does: the saved query's prepared SQL and parameter types, as
// the policy's run_as role, with the query's stored search_path; and it decides with the same
// decide() the worker uses. PostgreSQL-style code, except decide_plain(), which runs the plain C++
// decision without any PostgreSQL call and hands back plain data.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"
extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
}

#include "sql_api/catalog_access.hpp"
#include "rules/mask_rules.hpp"
#include "policy/policy_decision.hpp"
#include "policy/query_analysis.hpp"

#include <cstdio>
#include <cstring>

namespace {

// The policy and saved query, read from the catalog (plain palloc'd data).
struct ExplainInputs {
    Oid run_as;
    PolicyRow rules;
    bool granted;
    char *prepared_sql;
    int nparams;
    Oid *param_types;
    char **param_names; // nparams of them
    char *search_path;
    Oid saved_by;
};

char *required_text(FunctionCallInfo fcinfo, int n, const char *what)
{
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", what)));
    return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

// Oids of an oid[]-like array datum (regclass[], regtype[]), in the current memory context.
Oid *oid_array(Datum datum, Oid element_type, int *n)
{
    Datum *items;
    bool *nulls;
    deconstruct_array(DatumGetArrayTypeP(datum), element_type, sizeof(Oid), true, TYPALIGN_INT,
                      &items, &nulls, n);
    Oid *out = static_cast<Oid *>(palloc(sizeof(Oid) * Max(*n, 1)));
    int kept = 0;
    for (int i = 0; i < *n; i++)
        if (!nulls[i])
            out[kept++] = DatumGetObjectId(items[i]);
    *n = kept;
    return out;
}

// Reads the policy, its mask rules, the saved query and the grant. Inside a catalog session; the
// results are copied into `into`, which outlives the session.
void read_inputs(const char *policy, const char *query, MemoryContext into, ExplainInputs *in)
{
    const char *policy_arg[1] = {policy};
    const char *query_arg[1] = {query};
    const char *both_args[2] = {policy, query};
    bool isnull;

    if (catalog_exec_texts("SELECT run_as FROM querygate.policy WHERE name = $1", 1, policy_arg) ==
        0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("policy \"%s\" does not exist", policy)));
    MemoryContext spi = MemoryContextSwitchTo(into);
    {
        HeapTuple tuple = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        in->run_as = DatumGetObjectId(SPI_getbinval(tuple, desc, 1, &isnull));
    }
    MemoryContextSwitchTo(spi);
    catalog_read_policy_row(policy, into, &in->rules);

    if (catalog_exec_texts("SELECT prepared_sql, param_types, search_path, saved_by, param_names "
                           "FROM querygate.saved_query WHERE name = $1",
                           1, query_arg) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("saved query \"%s\" does not exist", query)));
    MemoryContextSwitchTo(into);
    {
        HeapTuple tuple = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        in->prepared_sql = SPI_getvalue(tuple, desc, 1);
        Datum types = SPI_getbinval(tuple, desc, 2, &isnull);
        in->param_types = isnull ? static_cast<Oid *>(palloc0(sizeof(Oid)))
                                 : oid_array(types, REGTYPEOID, &in->nparams);
        in->search_path = SPI_getvalue(tuple, desc, 3);
        if (in->search_path == nullptr)
            in->search_path = pstrdup("");
        in->saved_by = DatumGetObjectId(SPI_getbinval(tuple, desc, 4, &isnull));
        in->param_names = static_cast<char **>(palloc0(sizeof(char *) * Max(in->nparams, 1)));
        Datum names = SPI_getbinval(tuple, desc, 5, &isnull);
        if (!isnull) {
            Datum *items;
            bool *nulls;
            int n;
            deconstruct_array(DatumGetArrayTypeP(names), TEXTOID, -1, false, TYPALIGN_INT, &items,
                              &nulls, &n);
            for (int i = 0; i < n && i < in->nparams; i++)
                if (!nulls[i])
                    in->param_names[i] = TextDatumGetCString(items[i]);
        }
    }
    MemoryContextSwitchTo(spi);

    in->granted = catalog_exec_texts("SELECT 1 FROM querygate.query_grant "
                                     "WHERE policy = $1 AND query = $2",
                                     2, both_args) > 0;
}

void append_json_string(StringInfo buf, const char *s)
{
    if (s == nullptr)
        appendStringInfoString(buf, "null");
    else
        escape_json(buf, s);
}

void append_column_name(StringInfo buf, const SourceColumn *c)
{
    char *text = psprintf("%s.%s.%s", c->schema, c->table, c->column);
    escape_json(buf, text);
    pfree(text);
}

// , "key": [columns as schema.table.column]
void append_columns(StringInfo buf, const char *key, const SourceColumn *columns, int n)
{
    appendStringInfo(buf, ", \"%s\": [", key);
    for (int s = 0; s < n; s++) {
        if (s > 0)
            appendStringInfoString(buf, ", ");
        append_column_name(buf, &columns[s]);
    }
    appendStringInfoChar(buf, ']');
}

// , "key": the action's name, or null for none
void append_action(StringInfo buf, const char *key, masking::Action action)
{
    appendStringInfo(buf, ", \"%s\": ", key);
    append_json_string(buf, action == masking::Action::none ? nullptr
                                                            : masking::action_name(action).c_str());
}

// As the call would: the policy's role, the query's search_path; then the decision, with the
// actions of every output and parameter.
void analyze_and_decide(const ExplainInputs &in, QueryAnalysis *analysis, PlainDecision *decision)
{
    QueryContext context;
    query_context_begin(&context, in.run_as, in.search_path);
    analyze_query(in.prepared_sql, in.nparams, in.param_types, in.saved_by, analysis);
    query_context_end(&context);

    memset(decision, 0, sizeof(*decision));
    decision->actions = static_cast<masking::Action *>(
        palloc0(sizeof(masking::Action) * Max(analysis->noutputs, 1)));
    decision->param_actions = static_cast<masking::Action *>(
        palloc0(sizeof(masking::Action) * Max(analysis->nparams, 1)));
    decide_plain(analysis, &in.rules, decision);
    if (decision->failed)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s", decision->message)));
}

// , "tables": [...], "writes": [...], "returns_rows": ...
void append_tables(StringInfo buf, const QueryAnalysis &analysis)
{
    appendStringInfoString(buf, ", \"tables\": [");
    for (int i = 0; i < analysis.nrelations; i++) {
        if (i > 0)
            appendStringInfoString(buf, ", ");
        char *name = psprintf("%s.%s", analysis.relations[i].schema, analysis.relations[i].name);
        escape_json(buf, name);
    }
    appendStringInfoString(buf, "], \"writes\": [");
    bool first = true;
    for (const write_ops::Op &op : write_ops::all)
        if (analysis.write_ops & op.bit) {
            appendStringInfo(buf, "%s\"%s\"", first ? "" : ", ", op.name);
            first = false;
        }
    appendStringInfo(buf, "], \"returns_rows\": %s", analysis.returns_rows ? "true" : "false");
}

// , "columns": [...], "params": [...]
void append_outputs(StringInfo buf, const ExplainInputs &in, const QueryAnalysis &analysis,
                    const PlainDecision &decision)
{
    appendStringInfoString(buf, ", \"columns\": [");
    for (int i = 0; i < analysis.noutputs; i++) {
        const OutputLineage *out = &analysis.outputs[i];
        appendStringInfoString(buf, i > 0 ? ", {\"name\": " : "{\"name\": ");
        escape_json(buf, out->name);
        append_columns(buf, "sources", out->sources, out->nsources);
        append_action(buf, "mask", decision.actions[i]);
        appendStringInfoString(buf, ", \"unresolvable\": ");
        append_json_string(buf, out->unresolvable);
        appendStringInfoChar(buf, '}');
    }
    // What each parameter meets, and how the run history masks its value (policies that record
    // parameters: set_policy(history_params => true)).
    appendStringInfoString(buf, "], \"params\": [");
    for (int i = 0; i < analysis.nparams; i++) {
        const ParamLineage *param = &analysis.params[i];
        appendStringInfoString(buf, i > 0 ? ", {\"name\": " : "{\"name\": ");
        append_json_string(buf, in.param_names[i]);
        append_columns(buf, "meets", param->sources, param->nsources);
        append_action(buf, "history", decision.param_actions[i]);
        appendStringInfoChar(buf, '}');
    }
    appendStringInfoChar(buf, ']');
}

// , "predicates": [...], "row_checks": [...]
void append_comparisons(StringInfo buf, const QueryAnalysis &analysis)
{
    appendStringInfoString(buf, ", \"predicates\": [");
    for (int i = 0; i < analysis.npredicates; i++) {
        if (i > 0)
            appendStringInfoString(buf, ", ");
        append_column_name(buf, &analysis.predicates[i]);
    }
    // What the database checks on the rows a write changes, and the column each reads as stored
    // ("stored": true) or as the write assigns it; null for a check that can read anything.
    appendStringInfoString(buf, "], \"row_checks\": [");
    for (int i = 0; i < analysis.nrow_checks; i++) {
        const RowCheck &check = analysis.row_checks[i];
        appendStringInfoString(buf, i > 0 ? ", {\"by\": " : "{\"by\": ");
        escape_json(buf, check.by);
        appendStringInfoString(buf, ", \"column\": ");
        if (check.any_column)
            appendStringInfoString(buf, "null");
        else
            append_column_name(buf, &check.column);
        appendStringInfoString(buf,
                               check.existing ? ", \"stored\": true}" : ", \"stored\": false}");
    }
    appendStringInfoChar(buf, ']');
}

// , "computed": [...]: where a value is computed with: on its way to an output (the output's
// name), to a written column (its name), or where no output shows it (null). Under a masking
// policy a masked one is refused (mask_expression).
void append_computed(StringInfo buf, const QueryAnalysis &analysis)
{
    appendStringInfoString(buf, ", \"computed\": [");
    bool first_computed = true;
    const int nlists = analysis.noutputs + analysis.nwrites + 1;
    for (int i = 0; i < nlists; i++) {
        const bool output = i < analysis.noutputs;
        const bool write = !output && i < nlists - 1;
        const WriteLineage *w = write ? &analysis.writes[i - analysis.noutputs] : nullptr;
        const int n = output  ? analysis.outputs[i].nsources
                      : write ? w->nsources
                              : analysis.nunselected;
        const SourceColumn *sources = output  ? analysis.outputs[i].sources
                                      : write ? w->sources
                                              : analysis.unselected;
        for (int s = 0; s < n; s++) {
            if (sources[s].computed == nullptr)
                continue;
            appendStringInfoString(buf, first_computed ? "{\"column\": " : ", {\"column\": ");
            first_computed = false;
            if (output)
                escape_json(buf, analysis.outputs[i].name);
            else if (write)
                append_column_name(buf, &w->target);
            else
                appendStringInfoString(buf, "null");
            appendStringInfoString(buf, ", \"source\": ");
            append_column_name(buf, &sources[s]);
            appendStringInfoString(buf, ", \"by\": ");
            escape_json(buf, sources[s].computed);
            appendStringInfoChar(buf, '}');
        }
    }
    appendStringInfoChar(buf, ']');
}

// , "predicate_unresolvable", "untrusted", "missing_privilege", "refused": the decision's code and
// reason, or null.
void append_verdict(StringInfo buf, const QueryAnalysis &analysis, const PlainDecision &decision)
{
    appendStringInfoString(buf, ", \"predicate_unresolvable\": ");
    append_json_string(buf, analysis.predicate_unresolvable);
    appendStringInfoString(buf, ", \"untrusted\": ");
    append_json_string(buf, analysis.untrusted);
    appendStringInfoString(buf, ", \"missing_privilege\": ");
    append_json_string(buf, analysis.missing_privilege);

    appendStringInfoString(buf, ", \"refused\": ");
    if (decision.code[0] == '\0') {
        appendStringInfoString(buf, "null");
    } else {
        appendStringInfoString(buf, "{\"code\": ");
        escape_json(buf, decision.code);
        appendStringInfoString(buf, ", \"reason\": ");
        escape_json(buf, decision.message);
        appendStringInfoChar(buf, '}');
    }
}

} // namespace

QUERYGATE_SQL_FUNCTION(querygate_explain)
{
    require_admin();
    char *policy = required_text(fcinfo, 0, "the policy name");
    char *query = required_text(fcinfo, 1, "the query name");

    ExplainInputs in;
    memset(&in, 0, sizeof(in));
    MemoryContext caller = CurrentMemoryContext;
    // The analysis runs as the policy's role (a type's input function may run in it), so only
    // someone who may act as that role may ask.
    CatalogSession session;
    catalog_session_begin(&session);
    catalog_require_policy_actor(&session, policy);
    read_inputs(policy, query, caller, &in);
    catalog_session_end(&session);

    char *run_as = GetUserNameFromId(in.run_as, true);
    if (run_as == nullptr)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("the run_as role of policy \"%s\" no longer exists", policy)));

    QueryAnalysis analysis;
    PlainDecision decision;
    analyze_and_decide(in, &analysis, &decision);

    StringInfoData buf;
    initStringInfo(&buf);
    appendStringInfoString(&buf, "{\"query\": ");
    escape_json(&buf, query);
    appendStringInfoString(&buf, ", \"policy\": ");
    escape_json(&buf, policy);
    appendStringInfoString(&buf, ", \"run_as\": ");
    escape_json(&buf, run_as);
    appendStringInfo(&buf, ", \"granted\": %s", in.granted ? "true" : "false");
    append_tables(&buf, analysis);
    append_outputs(&buf, in, analysis, decision);
    append_comparisons(&buf, analysis);
    append_computed(&buf, analysis);
    append_verdict(&buf, analysis, decision);
    appendStringInfoChar(&buf, '}');

    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
