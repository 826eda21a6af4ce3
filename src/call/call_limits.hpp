// Charges a call to its caller's limits before anything of it runs (rules/rate_limits.hpp): a
// key's limits merged over its policy's, counted under the key; a bearer token's policy's,
// counted under the policy; querygate.anonymous_rate_limit for calls with no valid credentials,
// counted under the client address. PostgreSQL side (the shared table, the catalog's quota
// counts).
#pragma once

#include "call/authenticate.hpp"
#include "common/api_error.hpp"
#include "common/call.hpp"
#include "rules/rate_limits.hpp"

#include <string>

// An accepted caller's call, inside the call's transaction (the first call of a caller with a
// quota reads its saved count). A 429 error when over a limit; else the hold to release when
// the call ends (empty when the caller has no limits). May throw pg::PgError.
ApiError charge_caller(const Caller &caller, LimitReport &report, LimitHold &hold);

// An export of `rows` rows, charged once by charge_caller, costs what paging through it would:
// one call per querygate.max_page_size rows. The rest is owed by the caller's rate limit (its next
// calls wait until it is paid), under the call's hold; its quota counts the call once. Never
// throws.
void charge_length(const LimitHold &hold, unsigned long long rows) noexcept;

// The limits an accepted caller is charged under: a key's merged over its policy's, a token's
// its policy's.
rate_limits::Limits limits_of(const Caller &caller);

// A call with no valid credentials from `address`, under querygate.anonymous_rate_limit: a 429
// error when over it (none when the limit is off). Needs no transaction.
ApiError charge_address(const std::string &address, LimitReport &report);
