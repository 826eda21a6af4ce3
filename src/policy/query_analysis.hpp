// What a saved query touches, writes and returns, found by PostgreSQL's own analyzer and rewriter:
// the relations it reads or writes at every level (for table allow-lists), the writes it makes
// (for write grants), the base columns each output column derives from (for masking by lineage),
// and the base columns its predicates use (for mask_predicate). Computed once per kept plan.
// PostgreSQL-style code: analyze_query ereports on error and allocates in CurrentMemoryContext.
#pragma once

#include "pg/pg_headers.hpp"
#include "rules/write_ops.hpp"
extern "C" {
#include "access/attnum.h"
#include "nodes/parsenodes.h"
}

#include "policy/code_trust.hpp"

// A base column: a relation's attribute, with names for rules and messages.
struct SourceColumn {
    Oid relid;
    AttrNumber attnum; // > 0
    char *schema;
    char *table;
    char *column;
    // In an output's lineage: NULL when the value reaches the output unchanged; else what computed
    // with it on the way (value_use.hpp: "lower()", "operator +", ...).
    const char *computed;
};

// A column a write assigns (INSERT, UPDATE SET, ON CONFLICT DO UPDATE, MERGE) and the base columns
// its value derives from (`computed` set when computed with on the way).
struct WriteLineage {
    SourceColumn target;
    int nsources;
    SourceColumn *sources;
    char *unresolvable;
};

// A check the database makes on a row a write changes (row_checks.hpp). `by` names it
// ("constraint staff_cap on public.staff"). It reads `column`, or, with `any_column`, runs code
// that can read anything (a trigger; a row-level security check with a subquery). With `existing`,
// the value it reads is one the call did not write (a row already stored, another row an index
// compares with); otherwise it is the value the write assigns, whose sources are the write's.
struct RowCheck {
    char *by;
    bool any_column;
    bool existing;
    SourceColumn column;
};

struct RelationRef {
    Oid relid;
    char *schema;
    char *name;
};

// A value read from a table that can reach an output: the names it goes by, as indexes into the
// output's sources, the column read first, then its table's ancestors' same-named columns, then
// the view and materialized view columns it is read through. A rule on any of them applies to it.
struct HeldValue {
    int n;
    int *sources;
};

struct OutputField {
    char *made;
    int nheld;
    HeldValue *held;
};

struct OutputLineage {
    char *name; // the output column's name, as in the response
    int nsources;
    SourceColumn *sources; // deduplicated; none for a constant or count(*)
    char *unresolvable;    // NULL, or why its sources cannot be known (a function in FROM, ...)
    // NULL when every value it can carry is a source column's, unchanged; else the first other
    // value that reaches it: "a parameter", "a constant", or what computed it ("lower()", ...).
    char *made;
    // Every value read from a table that can reach it (deduplicated).
    int nheld;
    HeldValue *held;
    // A whole row's fields (of every whole row in it): what reaches each, as made and held above
    // (whose sources are among the output's).
    int nfields;
    OutputField *fields;
};

// What a parameter meets (column_uses.hpp): its value is masked in the run history as strictly
// as these columns are.
struct ParamLineage {
    int nsources;
    SourceColumn *sources; // deduplicated
    char *unresolvable;    // NULL, or why a column it meets cannot be known
};

struct QueryAnalysis {
    // Every relation read or written at any level (joins, subqueries in FROM, WHERE and the select
    // list, CTEs, LATERAL, set operations, DML targets, RETURNING), views counted as themselves:
    // from the analyzed tree, before view expansion. Deduplicated.
    int nrelations;
    RelationRef *relations;
    int write_ops;     // WriteOp bits at any level (data-modifying CTEs included)
    bool returns_rows; // a SELECT or VALUES, or a write with RETURNING
    // The top-level statement's output columns (RETURNING for a write), in order, traced through
    // the rewritten tree (views expanded) to base columns.
    int noutputs;
    OutputLineage *outputs;
    // Base columns used in WHERE, JOIN conditions, GROUP BY, HAVING, ORDER BY, DISTINCT (ON or
    // not), window PARTITION BY / ORDER BY, LIMIT / OFFSET, the arguments of functions in FROM,
    // ON CONFLICT targets, MERGE conditions, every column of a UNION, INTERSECT or EXCEPT (not
    // UNION ALL), at every level of the rewritten tree. Deduplicated. (What constraints compare
    // when a row is written is in row_checks.)
    int npredicates;
    SourceColumn *predicates;
    char *predicate_unresolvable; // NULL, or why a predicate's columns cannot be known
    // Base columns computed with in expressions that run although no output shows them (every
    // output of a CTE; set-returning or volatile outputs of subqueries), with what computed.
    int nunselected;
    SourceColumn *unselected;
    // Every column a write assigns, at any level (data-modifying CTEs, rule actions), with the
    // lineage of its value.
    int nwrites;
    WriteLineage *writes;
    // What the database checks on the rows those writes (and deletes) change: constraints,
    // indexes, foreign keys, row-level security, triggers (row_checks.hpp).
    int nrow_checks;
    RowCheck *row_checks;
    // One per parameter ($1..$n): the columns it meets.
    int nparams;
    ParamLineage *params;
    // Every relation in the rewritten tree, views and base tables: when any of them changes, this
    // analysis is stale.
    int ndepends;
    Oid *depends;
    // Why the statement runs code the current user may not trust (code_trust.hpp), or NULL; and the
    // functions and domains that judgement depends on.
    char *untrusted;
    TrustDepends trust_depends;
    // The first privilege on a table or view the current user lacks ("SELECT on public.films",
    // privilege_check.hpp), or NULL: every call would be 403 permission_denied.
    char *missing_privilege;
    // The first function the statement itself calls (views count as themselves) that can read the
    // database by itself (function_effects.hpp), as "name()", or NULL.
    char *reads_database;
    // The first function anywhere in the rewritten statement that writes where a read-only
    // transaction does not stop it, or NULL.
    char *writes_outside;
    // A catalog relation holding copies of column values (pg_statistic, pg_statistic_ext_data)
    // that the rewritten statement reads, or NULL.
    char *value_copies;
};

// Analyzes sql ($1..$n of the given types) as the current user, with the current search_path; code
// trust (code_trust.hpp) is judged for the current user and a query saved by saved_by.
void analyze_query(const char *sql, int nparams, const Oid *param_types, Oid saved_by,
                   QueryAnalysis *out);

// A statement parsed and analysed already: the raw statement as the parser made it (a copy taken
// before parse analysis, which changes its input) and parse analysis's Query of it.
struct ParsedStatement {
    RawStmt *raw;
    Query *query;
};

// Called with the statement as the rewriter left it, before the analysis reads it.
typedef void (*RewrittenHook)(List *rewritten, void *arg);

// The same for a statement already parsed and analysed (parse analysis's Query of sql, with those
// parameter types), which it consumes: the rewriter changes it in place. `on_rewritten` (when not
// null) sees the rewritten statement first, to make a plan of it.
void analyze_analysed_query(Query *query, const char *sql, int nparams, const Oid *param_types,
                            Oid saved_by, QueryAnalysis *out, RewrittenHook on_rewritten,
                            void *arg);
