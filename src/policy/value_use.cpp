// Whether an expression hands a value through unchanged: see value_use.hpp.
#include "policy/value_use.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
}

namespace {

// A binary-compatible relabeling (text to varchar without a length, an OID alias) changes no value
// and cannot fail. Every other coercion can: an assignment cast (int8 into an int4 column, a
// length check of varchar(n)) or a domain check fails for some values, which is an oracle.
Node *strip_relabeling(Node *expr)
{
    while (expr != nullptr && IsA(expr, RelabelType))
        expr = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(expr)->arg);
    return expr;
}

const char *function_use(const char *kind, Oid funcid)
{
    char *name = get_func_name(funcid);
    return psprintf("%s%s()", kind, name ? name : "a function");
}

const char *cast_use(Node *expr)
{
    return psprintf("a cast to %s", format_type_be(exprType(expr)));
}

} // namespace

bool passes_value_through(Node *expr)
{
    expr = strip_relabeling(expr);
    if (expr == nullptr)
        return true;
    switch (nodeTag(expr)) {
    case T_Var:
    case T_Const:
    case T_Param:
        return true;
    case T_Aggref: {
        // count(x): the number of rows where x is not null, whatever x is.
        Aggref *agg = reinterpret_cast<Aggref *>(expr);
        return agg->aggfnoid == F_COUNT_ANY && agg->aggdistinct == NIL && agg->aggorder == NIL &&
               agg->aggfilter == nullptr && list_length(agg->args) == 1 &&
               passes_value_through(
                   reinterpret_cast<Node *>(linitial_node(TargetEntry, agg->args)->expr));
    }
    case T_SubLink:
        return reinterpret_cast<SubLink *>(expr)->subLinkType == EXPR_SUBLINK;
    default:
        return false;
    }
}

const char *value_use(Node *expr)
{
    expr = strip_relabeling(expr);
    if (expr == nullptr)
        return "an expression";
    switch (nodeTag(expr)) {
    case T_FuncExpr: {
        FuncExpr *f = reinterpret_cast<FuncExpr *>(expr);
        if (f->funcformat == COERCE_EXPLICIT_CAST || f->funcformat == COERCE_IMPLICIT_CAST)
            return cast_use(expr);
        return function_use("", f->funcid);
    }
    case T_OpExpr:
    case T_DistinctExpr:
    case T_NullIfExpr: {
        char *name = get_opname(reinterpret_cast<OpExpr *>(expr)->opno);
        return psprintf("operator %s", name ? name : "?");
    }
    case T_ScalarArrayOpExpr: {
        char *name = get_opname(reinterpret_cast<ScalarArrayOpExpr *>(expr)->opno);
        return psprintf("operator %s ANY/ALL", name ? name : "?");
    }
    case T_Aggref:
        return function_use("aggregate ", reinterpret_cast<Aggref *>(expr)->aggfnoid);
    case T_WindowFunc:
        return function_use("window function ", reinterpret_cast<WindowFunc *>(expr)->winfnoid);
    case T_CoerceViaIO:
    case T_ArrayCoerceExpr:
    case T_CoerceToDomain:
        return cast_use(expr);
    case T_CaseExpr:
        return "CASE";
    case T_CoalesceExpr:
        return "COALESCE";
    case T_MinMaxExpr:
        return "GREATEST/LEAST";
    case T_BoolExpr:
        return "AND/OR/NOT";
    case T_NullTest:
        return "IS NULL";
    case T_BooleanTest:
        return "IS TRUE/FALSE";
    case T_RowExpr:
        return "ROW()";
    case T_ArrayExpr:
        return "ARRAY[]";
    case T_SubscriptingRef:
        return "a subscript";
    case T_FieldSelect:
        return "a field of a composite value";
    case T_SubLink:
        return "a subquery";
    default:
        return "an expression";
    }
}
