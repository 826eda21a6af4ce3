// Saved-query analysis: placeholders found by PostgreSQL's own scanner, so strings, comments,
// dollar quotes, quoted identifiers and :: casts are the lexer's business, not a regex's; then the
// parser and analyzer infer every parameter's type, exactly as PREPARE would.
#include "policy/saved_query_analysis.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/scanner.h"
#include "utils/builtins.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/varlena.h"
}

#include "common/chars.hpp"

#include <cstring>

namespace {

const char *const reserved_names[] = {"page", "page_size", "format", "timeout", "stream"};

bool is_ident_start(char c)
{
    return chars::is_alpha(c) || c == '_';
}

bool is_ident_char(char c)
{
    return chars::is_alnum(c) || c == '_';
}

// Index of name in names[0..n), or -1.
int find_name(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (std::strcmp(names[i], name) == 0)
            return i;
    return -1;
}

// Rewrites :name to $n, collecting names in order of first appearance.
void rewrite_placeholders(const char *sql, AnalyzedQuery *out)
{
    core_yy_extra_type extra;
    core_yyscan_t scanner = scanner_init(sql, &extra, &ScanKeywords, ScanKeywordTokens);
    StringInfoData buf;
    initStringInfo(&buf);
    int capacity = 8;
    out->param_names = static_cast<char **>(palloc(sizeof(char *) * capacity));
    out->nparams = 0;

    int copied = 0;        // bytes of sql already copied to buf
    int bracket_depth = 0; // inside [ ], a colon is an array slice
    int skip_until = -1;   // tokens starting before this offset belong to a placeholder's name
    for (;;) {
        core_YYSTYPE yylval;
        YYLTYPE loc;
        int token = core_yylex(&yylval, &loc, scanner);
        if (token == 0)
            break;
        if (loc < skip_until)
            continue;
        if (token == '[')
            bracket_depth++;
        else if (token == ']' && bracket_depth > 0)
            bracket_depth--;
        if (sql[loc] == '$' && chars::is_digit(sql[loc + 1]))
            ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                            errmsg("saved queries take :name placeholders, not $%c parameters",
                                   sql[loc + 1]),
                            errhint("Write the parameter as :name; querygate numbers them.")));
        if (token != ':' || bracket_depth > 0 || !is_ident_start(sql[loc + 1]))
            continue;

        int start = loc + 1, end = start;
        while (is_ident_char(sql[end]))
            end++;
        char *name = pnstrdup(sql + start, end - start);
        if (is_reserved_param_name(name))
            ereport(
                ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("parameter name \"%s\" is reserved", name),
                 errdetail(
                     "page, page_size, format, timeout and stream are options of every HTTP call."),
                 errhint("Rename the placeholder, for example :%s_value.", name)));
        int index = find_name(out->param_names, out->nparams, name);
        if (index < 0) {
            if (out->nparams == capacity) {
                capacity *= 2;
                out->param_names =
                    static_cast<char **>(repalloc(out->param_names, sizeof(char *) * capacity));
            }
            out->param_names[out->nparams] = name;
            index = out->nparams++;
        }
        appendBinaryStringInfo(&buf, sql + copied, loc - copied);
        appendStringInfo(&buf, "$%d", index + 1);
        copied = end;
        skip_until = end;
    }
    scanner_finish(scanner);
    appendStringInfoString(&buf, sql + copied);
    out->prepared_sql = buf.data;
}

} // namespace

void analysis_error_callback(void *arg)
{
    const char *text = static_cast<const char *>(arg);
    int pos = geterrposition();
    if (pos > 0) {
        errposition(0);
        internalerrposition(pos);
        internalerrquery(text);
    }
}

char *explicit_search_path(void)
{
    StringInfoData path;
    initStringInfo(&path);
    appendStringInfoString(&path, "pg_catalog");
    ListCell *lc;
    foreach (lc, fetch_search_path(false)) {
        Oid nsp = lfirst_oid(lc);
        char *name = get_namespace_name(nsp);
        if (nsp != PG_CATALOG_NAMESPACE && !isAnyTempNamespace(nsp) && name != nullptr)
            appendStringInfo(&path, ", %s", quote_identifier(name));
    }
    appendStringInfoString(&path, ", pg_temp");
    return path.data;
}

char *explicit_search_path_of(const char *path)
{
    List *names;
    if (!SplitIdentifierString(pstrdup(path), ',', &names))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid search_path \"%s\"", path),
                        errhint("Name the schemas separated by commas, as SET search_path takes "
                                "them.")));
    ListCell *lc;
    foreach (lc, names) {
        const char *name = static_cast<const char *>(lfirst(lc));
        if (std::strcmp(name, "$user") == 0 || std::strcmp(name, "pg_temp") == 0)
            continue;
        const Oid nsp = get_namespace_oid(name, true);
        if (!OidIsValid(nsp))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_SCHEMA),
                            errmsg("schema \"%s\" does not exist", name),
                            errhint("Name only schemas that exist in the search_path.")));
        if (pg_namespace_aclcheck(nsp, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
            ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                            errmsg("permission denied for schema \"%s\"", name),
                            errhint("Name only schemas you may use in the search_path.")));
    }
    // The path as the session would resolve it, then made explicit as save_query's is.
    const int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                            0, false);
    char *explicit_path = explicit_search_path();
    AtEOXact_GUC(true, nest);
    return explicit_path;
}

bool is_reserved_param_name(const char *name)
{
    for (const char *r : reserved_names)
        if (std::strcmp(r, name) == 0)
            return true;
    return false;
}

void analyze_saved_query(const char *sql, AnalyzedQuery *out)
{
    rewrite_placeholders(sql, out);

    ErrorContextCallback callback;
    callback.callback = analysis_error_callback;
    callback.arg = out->prepared_sql;
    callback.previous = error_context_stack;
    error_context_stack = &callback;
    pg::fault_point("analysis"); // a C++ exception with a callback pushed: see pg_guard.hpp

    List *raw = raw_parser(out->prepared_sql, RAW_PARSE_DEFAULT);
    if (list_length(raw) != 1)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("a saved query must be exactly one SQL statement"),
                        errdetail("The text holds %d statements.", list_length(raw))));
    RawStmt *stmt = linitial_node(RawStmt, raw);

    Oid *types = static_cast<Oid *>(palloc0(sizeof(Oid) * Max(out->nparams, 1)));
    int ntypes = out->nparams;
    Query *query = parse_analyze_varparams(stmt, out->prepared_sql, &types, &ntypes, nullptr);

    if (query->commandType == CMD_UTILITY)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("a saved query must be SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE"),
                 errdetail("Utility statements (DDL, SET, COPY, EXPLAIN, SELECT INTO...) cannot be "
                           "saved.")));

    for (int i = 0; i < out->nparams; i++) {
        if (i >= ntypes || types[i] == InvalidOid || types[i] == UNKNOWNOID)
            ereport(ERROR,
                    (errcode(ERRCODE_INDETERMINATE_DATATYPE),
                     errmsg("could not determine the type of parameter :%s", out->param_names[i]),
                     errhint("Add a cast, for example :%s::integer or :%s::text.",
                             out->param_names[i], out->param_names[i])));
    }
    out->param_types = types;
    error_context_stack = callback.previous;
}
