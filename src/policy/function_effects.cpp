// What a function does besides computing its result: see function_effects.hpp. The built-ins are
// named by their fmgroids.h constants, so a function that changes its OID in a later PostgreSQL
// fails the build instead of silently leaving the list.
#include "policy/function_effects.hpp"

#include "policy/tree_walker.hpp"

extern "C" {
#include "access/transam.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
}

#include <algorithm>

namespace {

// Built-ins that run SQL given as text or read whole tables, large objects or data files.
const Oid reading_builtins[] = {
    F_QUERY_TO_XML,
    F_QUERY_TO_XMLSCHEMA,
    F_QUERY_TO_XML_AND_XMLSCHEMA,
    F_CURSOR_TO_XML,
    F_CURSOR_TO_XMLSCHEMA,
    F_TABLE_TO_XML,
    F_TABLE_TO_XMLSCHEMA,
    F_TABLE_TO_XML_AND_XMLSCHEMA,
    F_SCHEMA_TO_XML,
    F_SCHEMA_TO_XMLSCHEMA,
    F_SCHEMA_TO_XML_AND_XMLSCHEMA,
    F_DATABASE_TO_XML,
    F_DATABASE_TO_XMLSCHEMA,
    F_DATABASE_TO_XML_AND_XMLSCHEMA,
    F_TS_STAT_TEXT,
    F_TS_STAT_TEXT_TEXT,
    F_TS_REWRITE_TSQUERY_TEXT,
    F_PG_LOGICAL_SLOT_GET_CHANGES,
    F_PG_LOGICAL_SLOT_GET_BINARY_CHANGES,
    F_PG_LOGICAL_SLOT_PEEK_CHANGES,
    F_PG_LOGICAL_SLOT_PEEK_BINARY_CHANGES,
    F_LO_GET_OID,
    F_LO_GET_OID_INT8_INT4,
    F_LOREAD,
    F_PG_READ_FILE_OLD,
    F_PG_READ_FILE_TEXT,
    F_PG_READ_FILE_TEXT_INT8_INT8,
    F_PG_READ_FILE_TEXT_INT8_INT8_BOOL,
    F_PG_READ_BINARY_FILE_TEXT,
    F_PG_READ_BINARY_FILE_TEXT_INT8_INT8,
    F_PG_READ_BINARY_FILE_TEXT_INT8_INT8_BOOL,
};

// Built-ins that write although the transaction is read-only. Most need privileges a policy's role
// should not have; the ones open to everyone (pg_notify, pg_logical_emit_message, the large-object
// writers, txid_current) are why this list exists.
const Oid writing_builtins[] = {
    F_PG_NOTIFY,
    F_PG_LOGICAL_EMIT_MESSAGE_BOOL_TEXT_TEXT,
    F_PG_LOGICAL_EMIT_MESSAGE_BOOL_TEXT_BYTEA,
    F_LO_CREATE,
    F_LO_CREAT,
    F_LO_IMPORT_TEXT,
    F_LO_IMPORT_TEXT_OID,
    F_LO_EXPORT,
    F_LO_FROM_BYTEA,
    F_LO_PUT,
    F_LO_UNLINK,
    F_LOWRITE,
    F_LO_TRUNCATE,
    F_LO_TRUNCATE64,
    F_TXID_CURRENT,
    F_PG_CURRENT_XACT_ID,
    F_PG_CREATE_PHYSICAL_REPLICATION_SLOT,
    F_PG_CREATE_LOGICAL_REPLICATION_SLOT,
    F_PG_COPY_PHYSICAL_REPLICATION_SLOT_NAME_NAME_BOOL,
    F_PG_COPY_PHYSICAL_REPLICATION_SLOT_NAME_NAME,
    F_PG_COPY_LOGICAL_REPLICATION_SLOT_NAME_NAME_BOOL_NAME,
    F_PG_COPY_LOGICAL_REPLICATION_SLOT_NAME_NAME_BOOL,
    F_PG_COPY_LOGICAL_REPLICATION_SLOT_NAME_NAME,
    F_PG_DROP_REPLICATION_SLOT,
    F_PG_REPLICATION_SLOT_ADVANCE,
    F_PG_LOGICAL_SLOT_GET_CHANGES,
    F_PG_LOGICAL_SLOT_GET_BINARY_CHANGES,
    F_BRIN_SUMMARIZE_NEW_VALUES,
    F_BRIN_SUMMARIZE_RANGE,
    F_BRIN_DESUMMARIZE_RANGE,
    F_GIN_CLEAN_PENDING_LIST,
    F_PG_REPLICATION_ORIGIN_CREATE,
    F_PG_REPLICATION_ORIGIN_DROP,
    F_PG_REPLICATION_ORIGIN_SESSION_SETUP,
    F_PG_REPLICATION_ORIGIN_XACT_SETUP,
    F_PG_REPLICATION_ORIGIN_ADVANCE,
    F_PG_SWITCH_WAL,
    F_PG_CREATE_RESTORE_POINT,
    F_PG_BACKUP_START,
    F_PG_BACKUP_STOP,
    F_PG_STAT_RESET,
    F_PG_STAT_RESET_SHARED,
    F_PG_STAT_RESET_SLRU,
    F_PG_STAT_RESET_SINGLE_TABLE_COUNTERS,
    F_PG_STAT_RESET_SINGLE_FUNCTION_COUNTERS,
    F_PG_STAT_RESET_REPLICATION_SLOT,
    F_PG_STAT_RESET_SUBSCRIPTION_STATS,
    F_PG_IMPORT_SYSTEM_COLLATIONS,
    F_PG_PROMOTE,
    F_PG_RELOAD_CONF,
    F_PG_ROTATE_LOGFILE,
    F_PG_ROTATE_LOGFILE_OLD,
};

// Built-ins that run SQL given as text, and which argument holds it.
const struct {
    Oid funcid;
    int argument;
} sql_text_builtins[] = {
    {F_QUERY_TO_XML, 0}, {F_QUERY_TO_XMLSCHEMA, 0}, {F_QUERY_TO_XML_AND_XMLSCHEMA, 0},
    {F_TS_STAT_TEXT, 0}, {F_TS_STAT_TEXT_TEXT, 0},  {F_TS_REWRITE_TSQUERY_TEXT, 1},
};

template <size_t N> bool listed(const Oid (&list)[N], Oid funcid)
{
    return std::find(list, list + N, funcid) != list + N;
}

struct FirstFunction {
    bool (*test)(Oid funcid);
    Oid found;
};

bool record_if(Oid funcid, void *context)
{
    FirstFunction *first = static_cast<FirstFunction *>(context);
    if (!first->test(funcid))
        return false;
    first->found = funcid;
    return true;
}

bool function_walker(Node *node, FirstFunction *first)
{
    if (node == nullptr)
        return false;
    if (IsA(node, Query))
        return query_tree_walker(reinterpret_cast<Query *>(node), WALKER(function_walker), first,
                                 0);
    if (check_functions_in_node(node, record_if, first))
        return true;
    return expression_tree_walker(node, WALKER(function_walker), first);
}

} // namespace

bool function_reads_database(Oid funcid)
{
    return funcid >= FirstNormalObjectId || listed(reading_builtins, funcid);
}

bool function_writes_outside(Oid funcid)
{
    return listed(writing_builtins, funcid);
}

int sql_text_argument(Oid funcid)
{
    for (const auto &f : sql_text_builtins)
        if (f.funcid == funcid)
            return f.argument;
    return -1;
}

char *first_function_where(Node *node, bool (*test)(Oid funcid))
{
    check_stack_depth();
    FirstFunction first = {test, InvalidOid};
    if (!function_walker(node, &first))
        return nullptr;
    char *name = get_func_name(first.found);
    return psprintf("%s()", name ? name : "an unknown function");
}
