// Background worker slots: see worker_slots.hpp.
#include "worker/worker_slots.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "miscadmin.h"
#include "utils/guc.h"
}

#include "common/settings.hpp"

#include <string>

namespace worker_slots {

int needed()
{
    return settings::workers * (1 + settings::helpers) + 2; // + the flusher and the writer
}

void reserve()
{
    const int before = max_worker_processes;
    const std::string raised = std::to_string(before + needed());
    // Ignored (and the value kept) when any source of higher priority than a computed default set
    // it: the configuration file, ALTER SYSTEM, the command line.
    SetConfigOption("max_worker_processes", raised.c_str(), PGC_POSTMASTER, PGC_S_DYNAMIC_DEFAULT);
    if (max_worker_processes != before)
        ereport(LOG, (errmsg("querygate raised max_worker_processes from %d to %d for its %d "
                             "workers, their helpers, its WAL flusher and its writer",
                             before, max_worker_processes, settings::workers),
                      errhint("Set max_worker_processes to choose the number yourself.")));
}

} // namespace worker_slots
