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

// Where a caught error is copied: reset as soon as it is read. CopyErrorData copies more than
// FreeErrorData frees in the server this was measured on (PostgreSQL 15.20 also copies the
// file, function, domain and message id strings, and FreeErrorData gives back only the message
// and the fields beside it), so freeing the copy field by field left about 200 bytes of
// TopMemoryContext behind every error: a worker answering bad parameters grew by 64 MB in ten
// minutes. A context of its own, reset whole, gives back whatever the copy took.
MemoryContext error_copy_memory = nullptr;

} // namespace

void guard_call(void (*fn)(void *), void *arg)
{
    // Everything PG_TRY may jump over lives in this plain frame; PgError is constructed after.
    MemoryContext oldcontext = CurrentMemoryContext;
    ErrorData *volatile edata = nullptr;

    PG_TRY();
    {
        // Made inside the block: if there is no memory for it, that is the callable's error.
        if (error_copy_memory == nullptr)
            error_copy_memory = AllocSetContextCreate(TopMemoryContext, "querygate error copy",
                                                      ALLOCSET_SMALL_SIZES);
        fn(arg);
    }
    PG_CATCH();
    {
        // Copied into a context that always exists (TopMemoryContext's own, or TopMemoryContext
        // if even that could not be made), read below and given back at once; only then is the
        // caller's context current again (pg_guard.hpp: it must outlive the callable).
        MemoryContextSwitchTo(error_copy_memory != nullptr ? error_copy_memory : TopMemoryContext);
        edata = CopyErrorData();
        FlushErrorState();
        MemoryContextSwitchTo(oldcontext);
    }
    PG_END_TRY();

    if (edata != nullptr) {
        ErrorData *copied = edata;
        PgError err;
        copy_error(copied, err);
        if (error_copy_memory != nullptr)
            MemoryContextReset(error_copy_memory);
        else
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
