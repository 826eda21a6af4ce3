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
// The other direction: a C++ exception must never escape into PostgreSQL. Every extern "C" entry
// point (SQL functions, the worker's main, libmicrohttpd callbacks) catches and converts, with
// pg::rethrow_as_ereport() for SQL-callable functions.
#pragma once

#include <exception>
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

template <typename Fn> void guard(Fn &&fn)
{
    guard_call([](void *p) { (*static_cast<Fn *>(p))(); }, &fn);
}

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
// pg::guard, come back out as ereport(ERROR) with their SQLSTATE, message, detail and hint.
template <typename Fn> Datum sql_entry(Fn &&fn)
{
    PendingError pending{};
    Datum result = (Datum)0;
    try {
        result = fn();
    } catch (const std::exception &e) {
        pending.capture(e);
    } catch (...) {
        pending.capture_unknown();
    }
    if (pending.set)
        pending.raise();
    return result;
}

} // namespace pg
