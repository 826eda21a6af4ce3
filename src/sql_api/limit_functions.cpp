// set_limits, and the limits create_key takes: what a policy's or a key's callers may spend
// (rules/rate_limits.hpp). PostgreSQL-style code, as admin_functions.cpp. Whoever may change the
// policy (catalog_require_policy_actor) may change its limits and its keys'.
#include "pg/pg_headers.hpp"
#include "pg/pg_guard.hpp"
extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
}

#include "sql_api/catalog_access.hpp"
#include "sql_api/limit_functions.hpp"

#include <cmath>

namespace {

// NULL leaves a limit as it is, 0 removes it; a new quota without a period counts per day, and
// a quota removed takes its period with it.
const char set_limits_sql[] =
    "SET rate_per_second = CASE WHEN $2 IS NULL THEN rate_per_second WHEN $2 = 0 THEN NULL "
    "ELSE $2 END, "
    "burst = CASE WHEN $3 IS NULL THEN burst WHEN $3 = 0 THEN NULL ELSE $3 END, "
    "max_in_flight = CASE WHEN $4 IS NULL THEN max_in_flight WHEN $4 = 0 THEN NULL ELSE $4 END, "
    "quota = CASE WHEN $5 IS NULL THEN quota WHEN $5 = 0 THEN NULL ELSE $5 END, "
    "quota_period = CASE WHEN $5 = 0 THEN NULL WHEN $6 IS NOT NULL THEN $6 "
    "WHEN $5 IS NOT NULL AND quota_period IS NULL THEN 'day' ELSE quota_period END ";

void check_not_negative(bool given, double value, const char *what)
{
    if (given && (std::isnan(value) || value < 0))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must be 0 (no limit) or more", what)));
}

} // namespace

void apply_limits(FunctionCallInfo fcinfo, int first, bool is_key, const char *target)
{
    bool given[5];
    for (int i = 0; i < 5; i++)
        given[i] = !PG_ARGISNULL(first + i);
    const double rate = given[0] ? PG_GETARG_FLOAT8(first) : 0;
    const int32 burst = given[1] ? PG_GETARG_INT32(first + 1) : 0;
    const int32 in_flight = given[2] ? PG_GETARG_INT32(first + 2) : 0;
    const int64 quota = given[3] ? PG_GETARG_INT64(first + 3) : 0;
    check_not_negative(given[0], rate, "rate_per_second");
    if (given[0] && (std::isinf(rate) || rate > 1000000))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("rate_per_second must be at most 1000000")));
    check_not_negative(given[1], burst, "burst");
    check_not_negative(given[2], in_flight, "max_in_flight");
    check_not_negative(given[3], static_cast<double>(quota), "quota");
    char *period = given[4] ? text_to_cstring(PG_GETARG_TEXT_PP(first + 4)) : nullptr;
    if (period != nullptr && strcmp(period, "day") != 0 && strcmp(period, "month") != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("quota_period must be 'day' or 'month'")));

    Oid types[6] = {TEXTOID, FLOAT8OID, INT4OID, INT4OID, INT8OID, TEXTOID};
    Datum values[6] = {
        CStringGetTextDatum(target), Float8GetDatum(rate),
        Int32GetDatum(burst),        Int32GetDatum(in_flight),
        Int64GetDatum(quota),        period ? CStringGetTextDatum(period) : (Datum)0};
    bool nulls[6] = {false, !given[0], !given[1], !given[2], !given[3], period == nullptr};
    char *sql = psprintf("UPDATE querygate.%s %s WHERE name = $1%s", is_key ? "api_key" : "policy",
                         set_limits_sql, is_key ? " AND revoked_at IS NULL" : "");
    catalog_exec(sql, 6, types, values, nulls);
}

// set_limits(policy, key, rate_per_second, burst, max_in_flight, quota, quota_period)
QUERYGATE_SQL_FUNCTION(querygate_set_limits)
{
    require_admin();
    if (PG_ARGISNULL(0) == PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("set_limits takes a policy or a key, not both or neither"),
                        errhint("Call set_limits(policy => 'name', ...) or "
                                "set_limits(key => 'name', ...).")));
    const bool is_key = PG_ARGISNULL(0);
    char *target = text_to_cstring(PG_GETARG_TEXT_PP(is_key ? 1 : 0));
    CatalogSession session;
    catalog_session_begin(&session);
    if (is_key) {
        const char *args[1] = {target};
        if (catalog_exec_texts("SELECT policy FROM querygate.api_key WHERE name = $1 AND "
                               "revoked_at IS NULL",
                               1, args) == 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("key \"%s\" does not exist or is revoked", target)));
        catalog_require_policy_actor(&session,
                                     SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
    } else {
        catalog_require_policy_actor(&session, target);
    }
    apply_limits(fcinfo, 2, is_key, target);
    catalog_session_end(&session);
    PG_RETURN_VOID();
}
