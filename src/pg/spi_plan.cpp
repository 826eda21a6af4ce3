// An SPI plan from a parsed and analysed statement: see spi_plan.hpp.
#include "pg/spi_plan.hpp"

extern "C" {
#include "executor/spi_priv.h"
#include "tcop/utility.h"
}

CachedPlanSource *spi_plan_begin(RawStmt *raw, const char *sql)
{
    MemoryContext old = MemoryContextSwitchTo(CurTransactionContext);
    CachedPlanSource *source = CreateCachedPlan(raw, sql, CreateCommandTag(raw->stmt));
    MemoryContextSwitchTo(old);
    return source;
}

SPIPlanPtr spi_plan_complete(CachedPlanSource *source, List *rewritten, int nargs,
                             const Oid *argtypes)
{
    MemoryContext old = MemoryContextSwitchTo(CurTransactionContext);
    // As SPI_prepare completes its own: cursor options 0, parameters of fixed types, a result
    // whose shape may change when the statement is analysed again.
    CompleteCachedPlan(source, rewritten, nullptr, const_cast<Oid *>(argtypes), nargs, nullptr,
                       nullptr, 0, false);
    MemoryContext plan_context =
        AllocSetContextCreate(CurTransactionContext, "SPI Plan", ALLOCSET_SMALL_SIZES);
    MemoryContextSwitchTo(plan_context);
    SPIPlanPtr plan = static_cast<SPIPlanPtr>(palloc0(sizeof(_SPI_plan)));
    plan->magic = _SPI_PLAN_MAGIC;
    plan->saved = false;
    plan->oneshot = false;
    plan->plancxt = plan_context;
    plan->parse_mode = RAW_PARSE_DEFAULT;
    plan->cursor_options = 0;
    plan->nargs = nargs;
    if (nargs > 0) {
        plan->argtypes = static_cast<Oid *>(palloc(sizeof(Oid) * nargs));
        memcpy(plan->argtypes, argtypes, sizeof(Oid) * nargs);
    }
    plan->parserSetup = nullptr;
    plan->parserSetupArg = nullptr;
    plan->plancache_list = list_make1(source);
    MemoryContextSwitchTo(old);
    return plan;
}
