// The C++/PostgreSQL boundary.
//
// ereport(ERROR) is a longjmp. It must never unwind through a C++ frame whose destructors matter,
// so every call into PostgreSQL that can fail, made from C++ code, goes through pg::guard(): it
// runs the callable under PostgreSQL's own PG_TRY, and turns an error into a C++ exception
// (pg::PgError) after the longjmp has landed in plain code. The error is copied and the error state
// flushed, so the caller decides what happens next (abort the transaction, answer HTTP 500,
// re-raise as ereport).
//
// The callable itself must not create C++ objects with non-trivial destructors that are still alive
// when it calls PostgreSQL: only PostgreSQL calls and plain data. Objects captured by reference
// from the caller are fine: they live outside the jump.
//
// On an error the memory context that was current when guard() was entered is made current
// again, as PG_CATCH blocks do. That context must outlive the callable: a callable that deletes
// it (SPI_finish deletes SPI's procedure context, a commit or an abort the transaction's
// contexts) is entered from a context that survives it. Otherwise an error after the deletion
// would leave CurrentMemoryContext pointing at a freed context, which the next palloc would use
// (a context freed to aset.c's free list is still mapped: only Valgrind sees it).
//
// The other direction: a C++ exception must never escape into PostgreSQL. Every extern "C" entry
// point (SQL functions, the worker's main, libmicrohttpd callbacks) catches and converts, with
// pg::rethrow_as_ereport() for SQL-callable functions.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "pg/pg_headers.hpp"

namespace pg {

struct PgError : std::exception {
    int sqlerrcode = 0;  // PostgreSQL's packed SQLSTATE (ERRCODE_*)
    std::string message; // primary message, as the server would log it
    std::string detail;
    std::string hint;
    std::string context;
    int cursorpos = 0;
    const char *what() const noexcept override { return message.c_str(); }
    std::string sqlstate() const;
};

// Runs fn (void(*)(void *)) under PG_TRY; on a PostgreSQL error, throws PgError. Not for direct
// use.
void guard_call(void (*fn)(void *), void *arg);

// A C++ exception thrown by the callable is caught inside the PG_TRY block and thrown again after
// PG_END_TRY: leaving the block by an exception would leave PG_exception_stack and
// error_context_stack pointing at a frame that no longer exists.
template <typename Fn> void guard(Fn &&fn)
{
    struct Call {
        Fn *fn;
        std::exception_ptr thrown;
    } call{&fn, nullptr};
    guard_call(
        [](void *p) {
            Call *c = static_cast<Call *>(p);
            try {
                (*c->fn)();
            } catch (...) {
                c->thrown = std::current_exception();
            }
        },
        &call);
    if (call.thrown)
        std::rethrow_exception(call.thrown);
}

// What an extern "C" entry must put back when a C++ exception reaches it: the exception may have
// left PG_TRY blocks and error context callbacks of PostgreSQL-style code below it.
struct EntryState {
    sigjmp_buf *exception_stack;
    ErrorContextCallback *context_stack;
    MemoryContext memory;

    static EntryState save()
    {
        return EntryState{PG_exception_stack, error_context_stack, CurrentMemoryContext};
    }
    void restore() const
    {
        PG_exception_stack = exception_stack;
        error_context_stack = context_stack;
        MemoryContextSwitchTo(memory);
    }
};

// The C name of the SQL-callable function of the extension called last (querygate_save_query, ...),
// set by QUERYGATE_SQL_FUNCTION on entry and never cleared: what a catalog session was opened for,
// for the audit log (sql_api/audit.hpp), which takes it as the session begins.
extern const char *last_sql_function;

// Interrupts held while it lives. Every ereport below ERROR ends with CHECK_FOR_INTERRUPTS, which
// raises a pending cancel as an ERROR: outside pg::guard that ERROR longjmps past the C++ frames
// to the worker's top level, which exits. Where a call's cancel may be pending (its timers still
// armed, on its way to being aborted), a log line is written under this; the abort then clears
// the cancel.
class HeldInterrupts {
  public:
    HeldInterrupts() { HOLD_INTERRUPTS(); }
    ~HeldInterrupts() { RESUME_INTERRUPTS(); }
    HeldInterrupts(const HeldInterrupts &) = delete;
    HeldInterrupts &operator=(const HeldInterrupts &) = delete;
};

// Throws std::bad_alloc when querygate.fault_injection names this point: the tests' way to make
// code that can run out of memory do so where they choose.
void fault_point(const char *name);

// An exception caught at an extern "C" entry point, copied into palloc'd plain data so that it can
// be raised with ereport after the catch block has ended (a longjmp out of an active handler would
// leave the C++ runtime's exception state behind). Trivially destructible on purpose.
struct PendingError {
    bool set;
    int sqlerrcode;
    char *message;
    char *detail;
    char *hint;
    int cursorpos;
    void capture(const std::exception &e) noexcept;
    void capture_unknown() noexcept;
    [[noreturn]] void raise() const;
};

// Runs fn() (returning Datum) for a SQL-callable function: C++ exceptions, including PgError from
// pg::guard, come back out as ereport(ERROR) with their SQLSTATE, message, detail and hint, after
// the state they may have left behind is put back.
template <typename Fn> Datum sql_entry(Fn &&fn)
{
    PendingError pending{};
    const EntryState entry = EntryState::save();
    Datum result = (Datum)0;
    try {
        result = fn();
    } catch (const std::exception &e) {
        entry.restore();
        pending.capture(e);
    } catch (...) {
        entry.restore();
        pending.capture_unknown();
    }
    if (pending.set)
        pending.raise();
    return result;
}

} // namespace pg

// Defines a SQL-callable function: every one of the extension's is defined this way, so none can
// let a C++ exception reach PostgreSQL (which would end the backend with std::terminate). The body
// follows, with fcinfo in scope:
//   QUERYGATE_SQL_FUNCTION(querygate_x)
//   {
//       ... PG_RETURN_VOID();
//   }
#define QUERYGATE_SQL_FUNCTION(name)                                                               \
    static Datum name##_body(FunctionCallInfo fcinfo);                                             \
    extern "C" {                                                                                   \
    PG_FUNCTION_INFO_V1(name);                                                                     \
    }                                                                                              \
    Datum name(PG_FUNCTION_ARGS)                                                                   \
    {                                                                                              \
        pg::last_sql_function = #name;                                                             \
        return pg::sql_entry([fcinfo] {                                                            \
            pg::fault_point("sql_function");                                                       \
            return name##_body(fcinfo);                                                            \
        });                                                                                        \
    }                                                                                              \
    static Datum name##_body(FunctionCallInfo fcinfo)
