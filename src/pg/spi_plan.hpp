// An SPI plan made from a statement already parsed and analysed: what SPI_prepare makes from a
// text, without parsing and analysing the text again. SQL a caller writes is parsed and analysed
// by its checks (policy/adhoc_statement.hpp) before it is planned; a statement whose literals
// change at every call would otherwise be parsed and analysed twice more, once by SPI_prepare.
//
// SPI has no call for this, so the plan is built as SPI_prepare builds one (a CachedPlanSource
// per statement, in an _SPI_plan of PostgreSQL's spi_priv.h, cursor options 0, parameters of
// fixed types): SPI_keepplan keeps it, SPI_execute_plan and SPI_cursor_open run it and
// SPI_freeplan frees it as any other. PostgreSQL-style code: ereports on error.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "utils/plancache.h"
}

// Begins a plan of `raw` (the statement as the parser made it, before parse analysis changed it:
// it is copied) in the transaction's memory, so that an error before the plan is kept frees it.
CachedPlanSource *spi_plan_begin(RawStmt *raw, const char *sql);

// Completes it with the statement as the rewriter left it (copied) and its parameters' types, and
// returns the unsaved SPI plan that holds it, also in the transaction's memory.
SPIPlanPtr spi_plan_complete(CachedPlanSource *source, List *rewritten, int nargs,
                             const Oid *argtypes);
