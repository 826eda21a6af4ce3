// querygate.explain(policy, query): placeholder until the analysis lands.
#include "pg_headers.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(querygate_explain);
}

Datum querygate_explain(PG_FUNCTION_ARGS)
{
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("explain is not implemented yet")));
    PG_RETURN_NULL();
}
