// A call's settings as Citus's workers see them: see citus_settings.hpp.
#include "call/citus_settings.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "executor/spi.h"
#include "utils/guc.h"
}

namespace citus_settings {

namespace {

// Constant text: the values are read from the settings inside, never written into the SQL (a
// token's claims are the caller's).
const char send_on_sql[] = R"sql(
DO $querygate$
DECLARE
    tenant text := pg_catalog.current_setting('querygate.tenant', true);
    claims text := pg_catalog.current_setting('request.jwt.claims', true);
BEGIN
    IF tenant IS NOT NULL AND tenant OPERATOR(pg_catalog.<>) '' THEN
        EXECUTE pg_catalog.format('SET LOCAL querygate.tenant TO %L', tenant);
    END IF;
    IF claims IS NOT NULL AND claims OPERATOR(pg_catalog.<>) '' THEN
        EXECUTE pg_catalog.format('SET LOCAL request.jwt.claims TO %L', claims);
    END IF;
END
$querygate$)sql";

} // namespace

bool loaded()
{
    return GetConfigOption("citus.propagate_set_commands", true, false) != nullptr;
}

void send_on()
{
    BeginImplicitTransactionBlock();
    (void)set_config_option("citus.propagate_set_commands", "local", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_LOCAL, true, 0, false);
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "querygate: SPI_connect failed");
    if (SPI_execute(send_on_sql, false, 0) != SPI_OK_UTILITY)
        elog(ERROR, "querygate: could not send a call's settings to Citus's workers");
    SPI_finish();
}

void before_commit()
{
    EndImplicitTransactionBlock();
}

} // namespace citus_settings
