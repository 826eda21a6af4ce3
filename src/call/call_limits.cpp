// Which limits a call is charged to, and the saved quota counts: see call_limits.hpp.
#include "call/call_limits.hpp"

#include "shmem/limit_table.hpp"
#include "common/settings.hpp"
#include "common/client_address.hpp"
#include "pg/pg_guard.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
}

#include <algorithm>
#include <cstdlib>

namespace {

// The count querygate.quota_usage keeps for the subject (none: 0 and 0). The statement is
// schema-qualified throughout: the worker's search_path follows the saved queries.
void load_quota(const limit_table::Subject &who, int64 &period_start_us, int64 &used)
{
    period_start_us = 0;
    used = 0;
    const bool by_key = who.kind == limit_table::Kind::key;
    const std::string name(who.name);
    pg::guard([&] {
        MemoryContext outer = CurrentMemoryContext;
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        Oid type = static_cast<Oid>(by_key ? INT8OID : TEXTOID);
        Datum arg = by_key ? Int64GetDatum(who.key_id) : CStringGetTextDatum(name.c_str());
        const char *sql =
            by_key ? "SELECT (EXTRACT(epoch FROM period_start) OPERATOR(pg_catalog.*) 1000000)"
                     "::pg_catalog.int8, used FROM querygate.quota_usage "
                     "WHERE key_id OPERATOR(pg_catalog.=) $1"
                   : "SELECT (EXTRACT(epoch FROM period_start) OPERATOR(pg_catalog.*) 1000000)"
                     "::pg_catalog.int8, used FROM querygate.quota_usage "
                     "WHERE policy OPERATOR(pg_catalog.=) $1";
        if (SPI_execute_with_args(sql, 1, &type, &arg, nullptr, true, 1) != SPI_OK_SELECT)
            elog(ERROR, "querygate: could not read the saved quota count");
        if (SPI_processed == 1) {
            bool null_start = false, null_used = false;
            Datum start =
                SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &null_start);
            Datum count =
                SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &null_used);
            period_start_us = null_start ? 0 : DatumGetInt64(start);
            used = null_used ? 0 : DatumGetInt64(count);
        }
        MemoryContextSwitchTo(outer);
        SPI_finish();
    });
}

} // namespace

rate_limits::Limits limits_of(const Caller &caller)
{
    return caller.key != nullptr ? rate_limits::merge(caller.key->limits, caller.policy->limits)
                                 : caller.policy->limits;
}

ApiError charge_caller(const Caller &caller, LimitReport &report, LimitHold &hold)
{
    limit_table::Subject who;
    if (caller.key != nullptr) {
        who.kind = limit_table::Kind::key;
        who.key_id = caller.key->id;
    } else {
        who.kind = limit_table::Kind::policy;
        who.name = caller.policy->name;
    }
    const rate_limits::Limits limits = limits_of(caller);
    if (!limits.any())
        return ApiError();
    return limit_table::admit(who, limits, unix_now_us(), report, hold,
                              [&who](int64 &start, int64 &used) { load_quota(who, start, used); });
}

void charge_length(const LimitHold &hold, unsigned long long rows) noexcept
{
    const unsigned long long page =
        static_cast<unsigned long long>(std::max(1, settings::max_page_size));
    const unsigned long long pages = (rows + page - 1) / page;
    if (pages <= 1 || !hold.held())
        return;
    limit_table::owe(hold, unix_now_us(), static_cast<double>(pages - 1));
}

ApiError charge_address(const std::string &address, LimitReport &report)
{
    if (settings::anonymous_rate <= 0)
        return ApiError();
    // An IPv6 host has a whole network to call from: it is counted as that network.
    const std::string counted =
        client_address::counted_as(address, settings::anonymous_ipv6_prefix);
    limit_table::Subject who;
    who.kind = limit_table::Kind::address;
    who.name = counted.empty() ? address : counted;
    rate_limits::Limits limits;
    limits.rate_per_second = settings::anonymous_rate;
    limits.burst = settings::anonymous_burst;
    LimitHold hold;
    ApiError refused = limit_table::admit(who, limits, unix_now_us(), report, hold, nullptr);
    limit_table::release(hold); // nothing runs for such a call: nothing stays in flight
    return refused;
}
