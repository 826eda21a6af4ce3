// The C++/PostgreSQL boundary: see pg_guard.hpp for the rules.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"

#include "common/settings.hpp"

#include <cstring>

namespace pg {

std::string PgError::sqlstate() const
{
    return unpack_sql_state(sqlerrcode);
}

namespace {

// Filled by the PG_CATCH block from the copied ErrorData; the C++ exception is built only after
// PG_END_TRY, when PostgreSQL's exception stack is already restored.
void copy_error(ErrorData *edata, PgError &out)
{
    out.sqlerrcode = edata->sqlerrcode;
    out.message = edata->message ? edata->message : "";
    out.detail = edata->detail ? edata->detail : "";
    out.hint = edata->hint ? edata->hint : "";
    out.context = edata->context ? edata->context : "";
    out.cursorpos = edata->cursorpos;
}

} // namespace

void guard_call(void (*fn)(void *), void *arg)
{
    // Everything PG_TRY may jump over lives in this plain frame; PgError is constructed after.
    MemoryContext oldcontext = CurrentMemoryContext;
    ErrorData *volatile edata = nullptr;

    PG_TRY();
    {
        fn(arg);
    }
    PG_CATCH();
    {
        // Copied into TopMemoryContext, which always exists, and freed below as soon as it is
        // read; only then is the caller's context current again (pg_guard.hpp: it must outlive
        // the callable).
        MemoryContextSwitchTo(TopMemoryContext);
        edata = CopyErrorData();
        FlushErrorState();
        MemoryContextSwitchTo(oldcontext);
    }
    PG_END_TRY();

    if (edata != nullptr) {
        ErrorData *copied = edata;
        PgError err;
        copy_error(copied, err);
        FreeErrorData(copied);
        throw err;
    }
}

const char *last_sql_function = nullptr;

void fault_point(const char *name)
{
    const char *wanted = settings::fault_injection;
    if (wanted != nullptr && wanted[0] != '\0' && std::strcmp(wanted, name) == 0)
        throw std::bad_alloc();
}

void PendingError::capture(const std::exception &e) noexcept
{
    set = true;
    sqlerrcode = ERRCODE_INTERNAL_ERROR;
    message = detail = hint = nullptr;
    cursorpos = 0;
    // pstrdup could itself fail (out of memory) and jump; these strings are small and that failure
    // mode is the same as anywhere else in the server.
    if (auto *pe = dynamic_cast<const PgError *>(&e)) {
        if (pe->sqlerrcode)
            sqlerrcode = pe->sqlerrcode;
        message = pstrdup(pe->message.c_str());
        detail = pe->detail.empty() ? nullptr : pstrdup(pe->detail.c_str());
        hint = pe->hint.empty() ? nullptr : pstrdup(pe->hint.c_str());
        cursorpos = pe->cursorpos;
    } else {
        message = psprintf("querygate internal error: %s", e.what());
    }
}

void PendingError::capture_unknown() noexcept
{
    set = true;
    sqlerrcode = ERRCODE_INTERNAL_ERROR;
    message = pstrdup("querygate internal error: unknown exception");
    detail = hint = nullptr;
    cursorpos = 0;
}

void PendingError::raise() const
{
    ereport(ERROR, (errcode(sqlerrcode), errmsg_internal("%s", message),
                    detail ? errdetail_internal("%s", detail) : 0, hint ? errhint("%s", hint) : 0,
                    cursorpos > 0 ? errposition(cursorpos) : 0));
    pg_unreachable();
}

} // namespace pg
