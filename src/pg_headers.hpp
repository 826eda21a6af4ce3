// The one way PostgreSQL's headers enter C++ code: inside extern "C", with the few macros that C++
// rejects neutralised. Files that include this are on the PostgreSQL side of the boundary; pure C++
// files (http_server, secrets, json_text, request parsing) never include it.
#pragma once

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
