// The checks that start every call: see caller_checks.hpp.
#include "call/caller_checks.hpp"

#include "call/call_limits.hpp"

ApiError catalog_loaded(CatalogCache &cache)
{
    if (!cache.refresh())
        return api_errors::make(error_code::unavailable,
                                "querygate is not installed in this database");
    return ApiError();
}

CallerChecks::CallerChecks(const CallRequest &request, bool charge)
    : request_(request), charge_(charge)
{
    // Only the hash of a secret is ever compared or stored: its SHA-256 in lower-case hex.
    unsigned char digest[secrets::sha256_length];
    secrets::sha256(request.secret.data(), request.secret.size(), digest);
    secrets::to_hex(digest, sizeof(digest), key_hash_hex_);
}

ApiError CallerChecks::authenticate(Authenticator &authenticator, CatalogCache &cache,
                                    LimitReport &limits)
{
    ApiError denied = authenticator.authenticate(cache, request_, key_hash_hex_, caller);
    if (!denied.set())
        return denied;
    ApiError limited = charge_ ? charge_address(request_.client_ip, limits) : ApiError();
    return limited.set() ? limited : denied;
}

ApiError CallerChecks::charge(LimitReport &limits, LimitHold &hold)
{
    return charge_ ? charge_caller(caller, limits, hold) : ApiError();
}

ApiError CallerChecks::admit(CatalogCache &cache, Authenticator &authenticator, LimitReport &limits,
                             LimitHold &hold)
{
    if (ApiError unavailable = catalog_loaded(cache); unavailable.set())
        return unavailable;
    if (ApiError denied = authenticate(authenticator, cache, limits); denied.set())
        return denied;
    return charge(limits, hold);
}
