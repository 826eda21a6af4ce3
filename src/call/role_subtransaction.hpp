// Work done as a policy's role, in a subtransaction of its own: how the descriptions of what a
// caller may call or use (call/api_describer.hpp, call/schema_describer.hpp) see the database as
// the caller's calls do, with the role's privileges and the statement's search_path. The
// subtransaction keeps one failure from costing the rest (a query that cannot be planned now is
// left out, and the others are described), and its end gives the worker its own user back
// whichever way the work ends.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "utils/guc.h"
#include "utils/resowner.h"
}

#include "pg/pg_guard.hpp"

// Runs work() (C++ that calls PostgreSQL through pg::guard) as `role` with `search_path` (a local
// setting, gone when the transaction ends), inside a transaction, in a subtransaction: true when
// it returned and the subtransaction committed; false when PostgreSQL raised an error in it (a
// pg::PgError, copied into *failed when given), and the subtransaction was rolled back. Either
// way CurrentMemoryContext is what it was, and the user the worker's own. Throws pg::PgError only
// when the subtransaction cannot begin or end.
template <typename Work>
bool in_role_subtransaction(Oid role, const char *search_path, Work work,
                            pg::PgError *failed = nullptr)
{
    // Entered again after work(), which outlives what the subtransaction's end deletes
    // (pg_guard.hpp).
    const MemoryContext outer = CurrentMemoryContext;
    const ResourceOwner owner = CurrentResourceOwner;
    Oid user = InvalidOid;
    int context = 0;
    pg::guard([&] { BeginInternalSubTransaction(nullptr); });
    try {
        pg::guard([&] {
            GetUserIdAndSecContext(&user, &context);
            SetUserIdAndSecContext(role, context | SECURITY_LOCAL_USERID_CHANGE);
            (void)set_config_option("search_path", search_path, PGC_SUSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        });
        work();
        MemoryContextSwitchTo(outer);
        pg::guard([&] {
            SetUserIdAndSecContext(user, context);
            ReleaseCurrentSubTransaction();
            MemoryContextSwitchTo(outer);
            CurrentResourceOwner = owner;
        });
        return true;
    } catch (const pg::PgError &e) {
        if (failed != nullptr)
            *failed = e;
    }
    MemoryContextSwitchTo(outer);
    pg::guard([&] {
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(outer);
        CurrentResourceOwner = owner;
        SetUserIdAndSecContext(user != InvalidOid ? user : GetUserId(), context);
    });
    return false;
}
