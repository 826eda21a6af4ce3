// See between_waits.hpp.
#include "worker/between_waits.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/procsignal.h"
#include "utils/memutils.h"
}

bool between_waits()
{
    ResetLatch(MyLatch);
    if (ShutdownRequestPending)
        return true;
    if (ProcSignalBarrierPending)
        ProcessProcSignalBarrier();
    if (LogMemoryContextPending)
        ProcessLogMemoryContextInterrupt();
    return false;
}
