// Placeholder until the analysis lands: see query_analysis.hpp.
#include "query_analysis.hpp"

void analyze_query(const char *, int, const Oid *, QueryAnalysis *out)
{
    memset(out, 0, sizeof(*out));
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("query analysis is not implemented yet")));
}
