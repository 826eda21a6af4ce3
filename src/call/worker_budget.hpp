// How long a read may run in an HTTP worker before it moves to a helper
// (querygate.slow_call_threshold).
//
// Why: a worker serves every connection it holds from one event loop, so a call it runs for 2 s
// is 2 s in which none of its other callers is answered. A call known to be slow is handed to a
// helper before it runs (call/slow_queries.hpp); one not yet known to be slow runs in the worker
// under this budget: when the budget is spent the query is cancelled (as statement_timeout
// cancels one: the next CHECK_FOR_INTERRUPTS raises it, the read-only transaction rolls back, and
// nothing it did is seen), and the worker hands the whole call to a helper, which runs it again
// from the start. A read has no effect to undo, so running it twice answers what running it once
// would. PostgreSQL side.
#pragma once

namespace worker_budget {

// Around the query's run in the worker: `ms` from now (0: no budget).
void start(int ms);
void stop();
// The budget was spent and the query cancelled for it (until stop).
bool spent();

} // namespace worker_budget
