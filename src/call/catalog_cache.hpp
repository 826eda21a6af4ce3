// Each HTTP worker's copy of the catalog: keys, policies with their grants, and saved queries.
//
// Invalidation is transactional, as pg_cron and Citus do it: a statement trigger on each catalog
// table (catalog_changed, catalog_cache.cpp) calls CacheInvalidateRelcacheByRelid; PostgreSQL
// sends that message only when the transaction commits, so a rolled-back change is never seen. The
// worker's relcache callback marks the cache dirty, and the next refresh(), which runs right after
// StartTransactionCommand has accepted pending invalidations, reloads. There is no time-to-live: a
// change is seen by the next request, and no request ever pays for a periodic re-read.
#pragma once

#include "pg/pg_headers.hpp"

#include "http/client_address.hpp"
#include "rules/param_rules.hpp"
#include "rules/rate_limits.hpp"
#include "policy/policy_rows.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct CachedQuery {
    std::string name;
    std::string sql;          // as the administrator wrote it (shown in pg_stat_activity)
    std::string prepared_sql; // with $n parameters
    std::vector<std::string> param_names;
    std::vector<Oid> param_types;
    std::string search_path;
    Oid saved_by = InvalidOid;            // who saved it: code_trust.hpp judges that role too
    std::vector<param_rules::Rule> rules; // declared rules; parameters without one have none
    int64_t revision = 0;
    int version = 0; // saved_query.version: which of its versions is published
    std::string description;
};

struct CachedPolicy : DecodedPolicy {
    std::unordered_set<std::string> queries;
    std::unordered_set<std::string> jwt_issuers; // whose tokens may name it; none: no token
    rate_limits::Limits limits;                  // each caller's
    std::string invalid; // why its row could not be decoded: it refuses every call
    // The hash action's HMAC key for this policy's answers: derived from mask_secret and its hash
    // scope (masking::hash_key_for), so two policies' hashes compare only when they share one.
    std::string hash_key;
};

struct CachedKey {
    int64_t id = 0; // api_key.id: what its limits are counted under
    std::string name;
    rate_limits::Limits limits; // its own; its policy's fill the rest (rate_limits::merge)
    std::string policy;
    int64_t expires_at_unix_us = 0; // 0: never
    bool any_address = true;        // no allowed_ips list
    std::vector<client_address::Cidr> allowed_ips;
    bool has_tenant = false;
    std::string tenant;
};

class CatalogCache {
  public:
    // Registers the relcache callback; once per worker, after connecting to the database.
    void register_invalidation();

    // Reloads if a committed change arrived since the last load. Call inside a transaction.
    // Returns false when the extension is not installed in this database. Throws pg::PgError.
    bool refresh();

    // Lookups; nullptr when absent. key_hash_hex is the SHA-256 of the secret in lower-case hex.
    const CachedKey *find_key(const std::string &key_hash_hex) const;
    const CachedPolicy *find_policy(const std::string &name) const;
    const CachedQuery *find_query(const std::string &name) const;

    // The hash mask's HMAC key (the oldest mask_secret row); empty if none.
    const std::string &mask_secret() const { return mask_secret_; }
    // The stored JWKS document (JSON text); empty if none.
    const std::string &jwks() const { return jwks_; }
    // Changes on every reload: decisions computed from an older catalog are stale.
    uint64_t generation() const { return generation_; }

  private:
    void load();

    std::unordered_map<std::string, CachedKey> keys_; // by hash
    std::unordered_map<std::string, CachedPolicy> policies_;
    std::unordered_map<std::string, CachedQuery> queries_;
    std::string mask_secret_;
    std::string jwks_;
    uint64_t generation_ = 0;
    bool installed_ = false;
};
