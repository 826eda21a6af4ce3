// The checks every path that acts for a caller starts with, inside its transaction
// (call/call_transaction.hpp), in this order: the catalog loaded (the extension installed), the
// caller authenticated (a refusal charged to its address, under
// querygate.anonymous_rate_limit), its limits charged (call/call_limits.hpp). A call of a saved
// query takes them one at a time, as its first steps (call/call_steps.hpp); a look at what a
// caller may see (GET /openapi.json, /catalog, /events) takes them together (admit).
//
// Each returns the refusal to answer, or none; each may throw pg::PgError. Only the hash of a
// key is ever compared: it is made once, outside the transaction, as the checks are made.
#pragma once

#include "auth/secrets.hpp"
#include "call/authenticate.hpp"
#include "call/catalog_cache.hpp"
#include "common/api_error.hpp"
#include "common/call.hpp"

// 503 unavailable when the extension is not installed in this database.
ApiError catalog_loaded(CatalogCache &cache);

class CallerChecks {
  public:
    // With `charge`, a refusal is charged to the request's address and an accepted caller's call
    // to its limits; without (a call a worker charged already, run again by a helper; an open
    // event stream checked again), neither is.
    CallerChecks(const CallRequest &request, bool charge);

    // The caller, when accepted (caller.policy set), and why not (caller.refusal). Over the
    // address's limit, a caller without valid credentials hears only that.
    ApiError authenticate(Authenticator &authenticator, CatalogCache &cache, LimitReport &limits);
    // The caller's limits charged: the hold to release when the call ends, in `hold`.
    ApiError charge(LimitReport &limits, LimitHold &hold);
    // The three checks in order: the first refusal.
    ApiError admit(CatalogCache &cache, Authenticator &authenticator, LimitReport &limits,
                   LimitHold &hold);

    // Who calls, whichever way the checks end: the access log names an accepted caller.
    Caller caller;

  private:
    const CallRequest &request_;
    const bool charge_;
    char key_hash_hex_[2 * secrets::sha256_length + 1];
};
