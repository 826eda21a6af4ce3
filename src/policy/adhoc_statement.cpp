// The checks an ad-hoc statement passes before it is planned: see adhoc_statement.hpp.
#include "policy/adhoc_statement.hpp"

extern "C" {
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/pg_guard.hpp"
#include "policy/tree_walker.hpp"

#include <cstring>

namespace {

// The types whose input looks a name up in the catalogs and whose output turns an oid into one.
const Oid reg_types[] = {REGPROCOID,   REGPROCEDUREOID,  REGOPEROID,     REGOPERATOROID,
                         REGCLASSOID,  REGTYPEOID,       REGROLEOID,     REGNAMESPACEOID,
                         REGCONFIGOID, REGDICTIONARYOID, REGCOLLATIONOID};
const char *const reg_type_names[] = {"regproc",   "regprocedure",  "regoper",     "regoperator",
                                      "regclass",  "regtype",       "regrole",     "regnamespace",
                                      "regconfig", "regdictionary", "regcollation"};

// Built-ins of pg_catalog that are not immutable and read nothing of the catalogs or the server's
// state: the clock and random numbers, and functions that are stable only because they call other
// types' output or input functions (reg* expressions being refused, those read no catalog).
const char *const allowed_builtins[] = {"now",
                                        "statement_timestamp",
                                        "transaction_timestamp",
                                        "clock_timestamp",
                                        "timeofday",
                                        "random",
                                        "gen_random_uuid",
                                        "format",
                                        "concat",
                                        "concat_ws",
                                        "textanycat",
                                        "anytextcat",
                                        "quote_literal",
                                        "quote_nullable",
                                        "array_to_string",
                                        "to_char",
                                        "to_number",
                                        "to_date",
                                        "to_timestamp",
                                        "array_in",
                                        "array_out",
                                        "record_in",
                                        "record_out",
                                        "enum_in",
                                        "enum_out",
                                        "domain_in",
                                        "to_json",
                                        "to_jsonb",
                                        "row_to_json",
                                        "array_to_json",
                                        "json_agg",
                                        "jsonb_agg",
                                        "json_agg_strict",
                                        "jsonb_agg_strict",
                                        "json_object_agg",
                                        "jsonb_object_agg",
                                        "json_build_object",
                                        "json_build_array",
                                        "jsonb_build_object",
                                        "jsonb_build_array",
                                        "json_populate_record",
                                        "jsonb_populate_record",
                                        "json_populate_recordset",
                                        "jsonb_populate_recordset",
                                        "json_to_record",
                                        "jsonb_to_record",
                                        "json_to_recordset",
                                        "jsonb_to_recordset"};

bool listed(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (std::strcmp(names[i], name) == 0)
            return true;
    return false;
}

// What a value of `type` holds: through a domain to its base type, and through an array to its
// elements' (themselves through a domain).
Oid held_type(Oid type)
{
    const Oid base = getBaseType(type);
    const Oid element = get_element_type(base);
    return OidIsValid(element) ? getBaseType(element) : base;
}

bool is_reg_type(Oid type)
{
    const Oid base = held_type(type);
    for (Oid reg : reg_types)
        if (base == reg)
            return true;
    return false;
}

// The relation whose row type `type` is (itself, its elements' or its domain's base type), when
// that relation has rows of its own or shows some: a table, a view, a partition. A composite type
// made by CREATE TYPE holds none, and is judged as any other type is. InvalidOid for any other
// type.
Oid row_type_relation(Oid type)
{
    const Oid relid = get_typ_typrelid(held_type(type));
    if (!OidIsValid(relid) || get_rel_relkind(relid) == RELKIND_COMPOSITE_TYPE)
        return InvalidOid;
    return relid;
}

bool is_datetime_type(Oid type)
{
    return type == DATEOID || type == TIMEOID || type == TIMETZOID || type == TIMESTAMPOID ||
           type == TIMESTAMPTZOID || type == INTERVALOID;
}

// A stable built-in that is stable because a date or time depends on the time zone or DateStyle:
// it takes arguments, one of them or its result a date or time, and none an object's identity
// (an oid, a name, a transaction id: pg_stat_get_last_vacuum_time(oid) is not one).
bool stable_for_datetime(Oid funcid)
{
    Oid *args = nullptr;
    int nargs = 0;
    const Oid result = get_func_signature(funcid, &args, &nargs);
    bool datetime = is_datetime_type(result);
    for (int i = 0; i < nargs; i++) {
        if (args[i] == OIDOID || args[i] == XIDOID || args[i] == XID8OID || args[i] == NAMEOID ||
            is_reg_type(args[i]))
            return false;
        datetime = datetime || is_datetime_type(args[i]);
    }
    return nargs > 0 && datetime;
}

// A function, operator, aggregate, cast or type input/output that is not built-in: it can read any
// table (function_effects.hpp), which a policy with an allow-list never runs.
bool user_function(Oid funcid, void *context)
{
    if (funcid < FirstNormalObjectId)
        return false;
    *static_cast<Oid *>(context) = funcid;
    return true;
}

// Whether an ad-hoc statement may call the built-in function.
bool function_allowed(Oid funcid)
{
    const char volatility = func_volatile(funcid);
    if (volatility == PROVOLATILE_IMMUTABLE)
        return true;
    if (get_func_namespace(funcid) != PG_CATALOG_NAMESPACE)
        return false;
    const char *name = get_func_name(funcid);
    if (name == nullptr)
        return false;
    if (listed(allowed_builtins, lengthof(allowed_builtins), name))
        return true;
    return volatility == PROVOLATILE_STABLE && std::strncmp(name, "pg_", 3) != 0 &&
           stable_for_datetime(funcid);
}

bool function_refused(Oid funcid, void *context)
{
    if (function_allowed(funcid))
        return false;
    *static_cast<Oid *>(context) = funcid;
    return true;
}

void refuse(AdhocChecked *out, AdhocRefusal why, int location)
{
    out->refusal = why;
    // A parse location is a byte offset from 0; a position, a character from 1.
    out->position = location >= 0 ? location + 1 : 0;
}

// --- The raw statement: the names it is written with, before any is looked up ---

struct RawCheck {
    const char *sql;
    const Oid *allowed;
    int nallowed;
    List *cte_names; // every WITH query's name in the statement
    AdhocChecked *out;
};

bool collect_cte_names(Node *node, RawCheck *c)
{
    if (node == nullptr)
        return false;
    if (IsA(node, CommonTableExpr))
        c->cte_names = lappend(c->cte_names, reinterpret_cast<CommonTableExpr *>(node)->ctename);
    return raw_expression_tree_walker(node, WALKER(collect_cte_names), c);
}

bool is_cte_name(const RawCheck *c, const RangeVar *rv)
{
    if (rv->schemaname != nullptr)
        return false;
    ListCell *lc;
    foreach (lc, c->cte_names)
        if (std::strcmp(static_cast<const char *>(lfirst(lc)), rv->relname) == 0)
            return true;
    return false;
}

bool allowed_relation(const RawCheck *c, Oid relid)
{
    for (int i = 0; i < c->nallowed; i++)
        if (c->allowed[i] == relid)
            return true;
    return false;
}

// A type that names something the statement may not: a reg* type, or the row type of a relation
// off the allow-list. `NULL::t` would otherwise answer whether t exists, and `(NULL::t).c` which
// columns it has, where naming t in FROM answers neither.
bool refused_type(const RawCheck *c, Oid type)
{
    if (is_reg_type(type))
        return true;
    const Oid relid = row_type_relation(type);
    return OidIsValid(relid) && !allowed_relation(c, relid);
}

// A WITH query's name may hide a table's: the analysed statement's relations are checked again
// (names_walker), so a name skipped here is judged there.
bool raw_walker(Node *node, RawCheck *c)
{
    if (node == nullptr)
        return false;
    if (IsA(node, RangeVar)) {
        const RangeVar *rv = reinterpret_cast<RangeVar *>(node);
        if (!is_cte_name(c, rv) &&
            !allowed_relation(c, RangeVarGetRelid(const_cast<RangeVar *>(rv), NoLock, true))) {
            refuse(c->out, ADHOC_REFUSED_NAME, rv->location);
            return true;
        }
    } else if (IsA(node, TypeName)) {
        const TypeName *name = reinterpret_cast<TypeName *>(node);
        Type type = LookupTypeName(nullptr, name, nullptr, true);
        if (type != nullptr) {
            const Oid oid = typeTypeId(type);
            ReleaseSysCache(type);
            if (refused_type(c, oid)) {
                refuse(c->out, ADHOC_REFUSED_NAME, name->location);
                return true;
            }
        }
    } else if (IsA(node, FuncCall)) {
        // regclass('t') is a cast, looked up while the statement is analysed.
        const FuncCall *call = reinterpret_cast<FuncCall *>(node);
        if (listed(reg_type_names, lengthof(reg_type_names), strVal(llast(call->funcname)))) {
            refuse(c->out, ADHOC_REFUSED_NAME, call->location);
            return true;
        }
    }
    return raw_expression_tree_walker(node, WALKER(raw_walker), c);
}

// --- The analysed statement: what its names turned out to be ---

struct QueryCheck {
    const RawCheck *raw;
    AdhocChecked *out;
};

// The type of an expression node that can carry a value of its own (a column, a constant, a
// parameter, a function's or a coercion's result); InvalidOid for any other node.
Oid value_type(Node *node)
{
    switch (nodeTag(node)) {
    case T_Var:
    case T_Const:
    case T_Param:
    case T_FuncExpr:
    case T_OpExpr:
    case T_Aggref:
    case T_WindowFunc:
    case T_CoerceViaIO:
    case T_RelabelType:
    case T_ArrayCoerceExpr:
    case T_CoerceToDomain:
    case T_ArrayExpr:
    case T_SubscriptingRef:
    case T_FieldSelect:
    case T_CaseExpr:
    case T_CoalesceExpr:
    case T_MinMaxExpr:
        return exprType(node);
    default:
        return InvalidOid;
    }
}

const char *identity_function(const SQLValueFunction *svf)
{
    switch (svf->op) {
    case SVFOP_CURRENT_ROLE:
        return "current_role";
    case SVFOP_CURRENT_USER:
        return "current_user";
    case SVFOP_USER:
        return "user";
    case SVFOP_SESSION_USER:
        return "session_user";
    case SVFOP_CURRENT_CATALOG:
        return "current_catalog";
    case SVFOP_CURRENT_SCHEMA:
        return "current_schema";
    default:
        return nullptr; // the current date and time
    }
}

// Where a call is written: an operator's own place, where exprLocation gives its left operand's
// (PostgreSQL's "operator does not exist" points at the operator).
int call_location(Node *node)
{
    switch (nodeTag(node)) {
    case T_OpExpr:
    case T_DistinctExpr:
    case T_NullIfExpr:
        return reinterpret_cast<OpExpr *>(node)->location;
    case T_ScalarArrayOpExpr:
        return reinterpret_cast<ScalarArrayOpExpr *>(node)->location;
    default:
        return exprLocation(node);
    }
}

// Names first, over the whole statement: a lookup that found something is then refused as one
// that found nothing (an error while the statement was analysed) is, whatever else it holds.
bool names_walker(Node *node, QueryCheck *c)
{
    if (node == nullptr)
        return false;
    if (IsA(node, Query))
        return query_tree_walker(reinterpret_cast<Query *>(node), WALKER(names_walker), c,
                                 QTW_EXAMINE_RTES_BEFORE);
    if (IsA(node, RangeTblEntry)) {
        const RangeTblEntry *rte = reinterpret_cast<RangeTblEntry *>(node);
        if (rte->rtekind == RTE_RELATION && !allowed_relation(c->raw, rte->relid)) {
            refuse(c->out, ADHOC_REFUSED_NAME, -1);
            return true;
        }
        return false; // range_table_walker goes on into the entry's contents
    }
    const Oid type = value_type(node);
    if (OidIsValid(type) && refused_type(c->raw, type)) {
        refuse(c->out, ADHOC_REFUSED_NAME, exprLocation(node));
        return true;
    }
    // A system column (ctid, xmin, tableoid, ...): where a row is kept, which transaction wrote
    // it, which partition holds it. None is a column the policy lists.
    if (IsA(node, Var) && reinterpret_cast<Var *>(node)->varattno < 0) {
        refuse(c->out, ADHOC_REFUSED_NAME, exprLocation(node));
        return true;
    }
    // A function that is not built-in is never run, and is refused as one that does not exist is
    // (adhoc_hides_error): the answer does not say which do.
    Oid function = InvalidOid;
    if (check_functions_in_node(node, user_function, &function)) {
        refuse(c->out, ADHOC_REFUSED_NAME, call_location(node));
        return true;
    }
    return expression_tree_walker(node, WALKER(names_walker), c);
}

// Then the functions it calls.
bool functions_walker(Node *node, QueryCheck *c)
{
    if (node == nullptr)
        return false;
    if (IsA(node, Query))
        return query_tree_walker(reinterpret_cast<Query *>(node), WALKER(functions_walker), c, 0);
    if (IsA(node, SQLValueFunction)) {
        const SQLValueFunction *svf = reinterpret_cast<SQLValueFunction *>(node);
        if (const char *name = identity_function(svf)) {
            refuse(c->out, ADHOC_REFUSED_FUNCTION, svf->location);
            c->out->function = psprintf("%s", name);
            return true;
        }
    }
    Oid refused = InvalidOid;
    if (check_functions_in_node(node, function_refused, &refused)) {
        refuse(c->out, ADHOC_REFUSED_FUNCTION, exprLocation(node));
        const char *name = get_func_name(refused);
        c->out->function = psprintf("%s()", name ? name : "an unknown function");
        return true;
    }
    return expression_tree_walker(node, WALKER(functions_walker), c);
}

bool one_statement_of_its_kind(List *raw)
{
    if (list_length(raw) != 1)
        return false;
    const Node *stmt = linitial_node(RawStmt, raw)->stmt;
    // SELECT INTO creates a table: a utility statement written as a SELECT.
    if (IsA(stmt, SelectStmt) && reinterpret_cast<const SelectStmt *>(stmt)->intoClause != nullptr)
        return false;
    return IsA(stmt, SelectStmt) || IsA(stmt, InsertStmt) || IsA(stmt, UpdateStmt) ||
           IsA(stmt, DeleteStmt) || IsA(stmt, MergeStmt);
}

} // namespace

void check_adhoc_statement(const char *prepared_sql, int nparams, const Oid *allowed, int nallowed,
                           AdhocChecked *out)
{
    out->refusal = ADHOC_ALLOWED;
    out->position = 0;
    out->function = nullptr;
    out->parsed = {nullptr, nullptr};
    out->param_types = static_cast<Oid *>(palloc0(sizeof(Oid) * Max(nparams, 1)));

    // No error context callback: the worker runs no statement of its own around this one, so an
    // error's position (errposition) is already the text's.
    List *raw = raw_parser(prepared_sql, RAW_PARSE_DEFAULT);
    if (!one_statement_of_its_kind(raw)) {
        out->refusal = ADHOC_NOT_ONE_STATEMENT;
        return;
    }
    RawStmt *stmt = linitial_node(RawStmt, raw);
    RawCheck rc = {prepared_sql, allowed, nallowed, NIL, out};
    collect_cte_names(stmt->stmt, &rc);
    if (raw_walker(stmt->stmt, &rc))
        return;

    // Parse analysis changes the tree it is given: a plan is made from the tree as parsed.
    RawStmt *as_parsed = static_cast<RawStmt *>(copyObjectImpl(stmt));
    int ntypes = nparams;
    Query *query = parse_analyze_varparams(stmt, prepared_sql, &out->param_types, &ntypes, nullptr);
    if (query->commandType == CMD_UTILITY) { // SELECT INTO
        out->refusal = ADHOC_NOT_ONE_STATEMENT;
        return;
    }
    QueryCheck qc = {&rc, out};
    Node *tree = reinterpret_cast<Node *>(query);
    if (!names_walker(tree, &qc) && !functions_walker(tree, &qc))
        out->parsed = {as_parsed, query};
}

bool adhoc_statement_error(int sqlerrcode)
{
    const int category = ERRCODE_TO_CATEGORY(sqlerrcode);
    return category == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION ||
           category == ERRCODE_DATA_EXCEPTION || category == ERRCODE_FEATURE_NOT_SUPPORTED ||
           category == ERRCODE_PROGRAM_LIMIT_EXCEEDED || category == ERRCODE_INVALID_SCHEMA_NAME;
}

bool adhoc_hides_error(int sqlerrcode)
{
    // What a name's lookup raises while a statement is analysed: no relation, no object (a role,
    // a type, a function's argument types), no function or operator of that name and argument
    // types, no schema, or no USAGE on a schema (said before the name in it is looked for).
    return sqlerrcode == ERRCODE_UNDEFINED_TABLE || sqlerrcode == ERRCODE_UNDEFINED_OBJECT ||
           sqlerrcode == ERRCODE_UNDEFINED_FUNCTION || sqlerrcode == ERRCODE_UNDEFINED_SCHEMA ||
           sqlerrcode == ERRCODE_INVALID_SCHEMA_NAME ||
           sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE;
}
