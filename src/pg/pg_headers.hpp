// The one way PostgreSQL's headers enter C++ code: inside extern "C", with the few macros that C++
// rejects neutralised. Files that include this are on the PostgreSQL side of the boundary; the
// plain-C++ folders (common, http, auth, rules) never include it, and the build refuses if they do.
#pragma once

#ifdef QUERYGATE_PLAIN_CXX
#error                                                                                             \
    "a plain-C++ file (src/common, http, auth, rules) includes PostgreSQL: move the code, or pass it plain values"
#endif

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

// postgres.h defines these as macros; they collide with the standard library in C++.
#ifdef snprintf
#undef snprintf
#endif
#ifdef vsnprintf
#undef vsnprintf
#endif
#ifdef printf
#undef printf
#endif
#ifdef sprintf
#undef sprintf
#endif
#ifdef fprintf
#undef fprintf
#endif
