// The limits a policy or a key sets (limit_functions.cpp), shared by set_limits and create_key.
#pragma once

#include "pg/pg_headers.hpp"

// Applies the function's arguments first .. first+4 (rate_per_second, burst, max_in_flight,
// quota, quota_period; NULL leaves a limit, 0 removes it) to the policy or the active key named
// target. ERROR 22023 for a value out of range. Inside a catalog session, after the caller was
// found to be allowed to change the policy.
void apply_limits(FunctionCallInfo fcinfo, int first, bool is_key, const char *target);
