// Nothing a call does outlives it: see call_hygiene.hpp. Each step costs nothing when there is
// nothing to clean (an empty hash table, a flag), which is every call but the odd one.
#include "call/call_hygiene.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/async.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "common/pg_prng.h"
#include "storage/lock.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/portal.h"
}

namespace {

// PostgreSQL has no accessor for a transaction's pending notifications; the check that stops
// PREPARE TRANSACTION after NOTIFY (or LISTEN and UNLISTEN, which a worker cannot run) raises when
// there are any, and that error becomes the read-only one.
void refuse_notifications(void)
{
    MemoryContext context = CurrentMemoryContext;
    volatile bool queued = false;
    PG_TRY();
    {
        AtPrepare_Notify();
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        FlushErrorState();
        queued = true;
    }
    PG_END_TRY();
    if (queued)
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("a read call may not send notifications")));
}

} // namespace

int call_hygiene_begin(void)
{
    // What only this session sees: PREPAREd statements (the worker prepares none through SQL; its
    // plans are SPI's), and the values currval() and lastval() would return to the next caller.
    DropAllPreparedStatements();
    ResetSequenceCaches();
    // setseed() in one call would make the next call's random() predictable.
    DirectFunctionCall1(setseed, Float8GetDatum(pg_prng_double(&pg_global_prng_state) * 2.0 - 1.0));
    return NewGUCNestLevel();
}

void call_hygiene_end(int guc_nest_level, bool read_only)
{
    if (read_only) {
        // Any write assigns a transaction id, including those XactReadOnly does not look at
        // (large objects, txid_current() itself).
        if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
            ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                            errmsg("a read call wrote to the database")));
        refuse_notifications();
    }
    // (A write may notify: a trigger that announces a change. LISTEN, which would outlast the
    // call, PostgreSQL refuses in any background process.)
    // A temporary object would outlive the call in the session's temporary schema. The worker
    // never creates one, so the schema exists only if this call made it; the abort removes it.
    Oid temp_namespace, temp_toast_namespace;
    GetTempNamespaceState(&temp_namespace, &temp_toast_namespace);
    if (OidIsValid(temp_namespace))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("a call may not create temporary objects, which would outlive it")));
    // Cursors declared WITH HOLD by the call's functions (the call's own portals are closed).
    PortalHashTableDeleteAll();
    // Every setting changed since call_hygiene_begin, SET without LOCAL included, goes back to its
    // value before the call, as a subtransaction's abort would do it.
    AtEOXact_GUC(false, guc_nest_level);
}

void call_hygiene_after(void)
{
    LockReleaseSession(USER_LOCKMETHOD);
}
