// querygate_http_status_notice(): called by the install script, it tells the administrator whether
// this database is served over HTTP.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"
extern "C" {
#include "commands/dbcommands.h"
#include "miscadmin.h"
}

#include "common/settings.hpp"

QUERYGATE_SQL_FUNCTION(querygate_http_status_notice)
{
    // WARNING, not NOTICE: while an extension script runs, PostgreSQL raises client_min_messages
    // to WARNING, and an administrator who installed an HTTP gateway should hear that HTTP is off.
    if (!settings::preloaded) {
        ereport(
            WARNING,
            (errmsg("querygate is installed, but HTTP is off: the library is not in "
                    "shared_preload_libraries"),
             errhint("Add 'querygate' to shared_preload_libraries in postgresql.conf and restart "
                     "the server to start the HTTP workers.")));
    } else {
        const char *current = get_database_name(MyDatabaseId);
        // settings::database is defined: the library was preloaded.
        if (current != nullptr && strcmp(current, settings::database) != 0)
            ereport(WARNING, (errmsg("the querygate HTTP workers serve database \"%s\", not \"%s\"",
                                     settings::database, current),
                              errhint("Set querygate.database to \"%s\" and restart the server to "
                                      "serve this database.",
                                      current)));
    }
    PG_RETURN_VOID();
}
