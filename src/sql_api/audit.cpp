// The audit log: see audit.hpp.
#include "sql_api/audit.hpp"

#include "pg/pg_guard.hpp"
extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cstring>

namespace {

// The open catalog session, if any (depth > 0), and what it was opened for.
struct SessionRecord {
    int depth = 0;
    Oid caller = InvalidOid;
    const char *function = nullptr; // a C name with static storage (QUERYGATE_SQL_FUNCTION)
    LocalTransactionId lxid = InvalidLocalTransactionId;
    SubTransactionId subxact = InvalidSubTransactionId;
};
SessionRecord session;

// Whether the record is of a session open now: one an error ended early belongs to a transaction
// or a subtransaction that is over.
bool session_is_current()
{
    return session.depth > 0 && session.lxid == MyProc->lxid &&
           session.subxact == GetCurrentSubTransactionId();
}

// "save_query" for querygate_save_query.
const char *action_name(const char *function)
{
    static const char prefix[] = "querygate_";
    if (function == nullptr)
        return nullptr;
    return std::strncmp(function, prefix, sizeof(prefix) - 1) == 0 ? function + sizeof(prefix) - 1
                                                                   : function;
}

} // namespace

namespace audit {

void session_begin(Oid caller)
{
    if (session_is_current()) {
        session.depth++;
        return;
    }
    session.depth = 1;
    session.caller = caller;
    session.function = pg::last_sql_function;
    session.lxid = MyProc->lxid;
    session.subxact = GetCurrentSubTransactionId();
}

void session_end()
{
    if (session.depth > 0)
        session.depth--;
}

} // namespace audit

// querygate.audit_context(): {actor, action} for an audit row of the change being made now, or
// NULL while an extension script runs (nothing is recorded then). actor is the role that asked
// for the change; action the administration function, or NULL for a change made directly.
QUERYGATE_SQL_FUNCTION(querygate_audit_context)
{
    if (creating_extension)
        PG_RETURN_NULL();
    const bool in_session = session_is_current();
    // Outside a session, the user the statement runs as: not GetUserId(), which a foreign key's
    // cascade sets to the table's owner for the rows it changes.
    const Oid actor = in_session ? session.caller : GetOuterUserId();
    const char *actor_name = GetUserNameFromId(actor, true);
    const char *action = in_session ? action_name(session.function) : nullptr;
    Datum items[2] = {actor_name ? PointerGetDatum(cstring_to_text(actor_name)) : (Datum)0,
                      action ? PointerGetDatum(cstring_to_text(action)) : (Datum)0};
    bool nulls[2] = {actor_name == nullptr, action == nullptr};
    int dims[1] = {2};
    int lbs[1] = {1};
    ArrayType *result =
        construct_md_array(items, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
    PG_RETURN_ARRAYTYPE_P(result);
}
