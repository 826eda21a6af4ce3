// Each HTTP worker's copy of the catalog: policies with their grants, and the saved queries and
// API keys its callers use.
//
// Invalidation is transactional, as pg_cron and Citus do it: a statement trigger on each catalog
// table calls CacheInvalidateRelcacheByRelid; PostgreSQL sends that message only when the
// transaction commits, so a rolled-back change is never seen. The worker's relcache callback marks
// the part of the cache that table feeds (the policies with their grants, masks and hash keys;
// the JWKS) and the next refresh(), which runs right after StartTransactionCommand has accepted
// pending invalidations, reloads that part alone. There is no time-to-live: a change is seen by the
// next request, and no request ever pays for a periodic re-read.
//
// Keys and saved queries are not loaded whole: a catalog may hold millions of keys, created and
// revoked all day, and thousands of queries. Each is fetched the first time it is needed (a key by
// its hash, a query by its name: an index lookup) and kept: keys among querygate.key_cache_size,
// the least recently used forgotten first; queries as long as they are unchanged (their number is
// the catalog's). A change to either is told a row at a time (call/catalog_changes.hpp), and
// refresh() forgets the rows it names. A key or query that does not exist is looked up each time
// it is asked for (nothing is kept of it, so a new one needs no notice). A key's expiry is checked
// at every call, as before.
#pragma once

#include "pg/pg_headers.hpp"
extern "C" {
#include "executor/spi.h"
}

#include "call/catalog_changes.hpp"
#include "common/client_address.hpp"
#include "rules/param_rules.hpp"
#include "rules/rate_limits.hpp"
#include "policy/policy_rows.hpp"

#include <cstdint>
#include <list>
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

    // Reloads the parts a committed change arrived for since the last load, and forgets the keys
    // changed since. Call inside a transaction. Returns false when the extension is not installed
    // in this database. Throws pg::PgError.
    bool refresh();

    // Lookups; nullptr when absent. key_hash_hex is the SHA-256 of the secret in lower-case hex.
    // A key or query not kept is fetched (inside the transaction refresh() ran in). A key's
    // pointer is good until the next find_key or refresh, a query's or a policy's until the next
    // refresh. Throw pg::PgError.
    const CachedKey *find_key(const std::string &key_hash_hex);
    const CachedPolicy *find_policy(const std::string &name) const;
    const CachedQuery *find_query(const std::string &name);

    // The hash mask's HMAC key (the oldest mask_secret row); empty if none.
    const std::string &mask_secret() const { return mask_secret_; }
    // The stored JWKS document (JSON text); empty if none.
    const std::string &jwks() const { return jwks_; }
    // Changes on every reload of policies or the JWKS and every change of a query: decisions and
    // descriptions computed from an older catalog are stale. Not on a key's change, which decides
    // nothing but who the caller is.
    uint64_t generation() const { return generation_; }
    // Changes with the generation and whenever a key changed: what a caller's check depends on
    // (an open event stream's caller is checked again).
    uint64_t changes() const { return generation_ + key_changes_; }

  private:
    // Reloads the parts `stale` names (catalog_cache.cpp: Part); false when the extension is not
    // installed (nothing is then cached).
    bool reload(unsigned stale);
    void load_policies();
    void load_jwks();
    // The key's row, when it is active; false when there is none.
    bool fetch_key(const std::string &key_hash_hex, CachedKey &out);
    // The query's row; false when there is none.
    bool fetch_query(const std::string &name, CachedQuery &out);
    void forget_key(std::uint64_t digest);
    void forget_keys();
    void forget_queries();
    // The changes the rings tell since the last call.
    void take_changes();

    // A key as cached: its hash (hex) and row, in an order of use (most recent first).
    struct KeyEntry {
        std::string hash_hex;
        std::uint64_t digest = 0;
        CachedKey key;
    };
    std::list<KeyEntry> key_order_;
    // By catalog_changes::key_digest of the hash; the entry's full hash is compared on every
    // lookup.
    std::unordered_map<std::uint64_t, std::list<KeyEntry>::iterator> keys_;
    catalog_changes::Reader key_reader_{catalog_changes::Kind::key};
    catalog_changes::Reader query_reader_{catalog_changes::Kind::query};
    std::vector<std::uint64_t> changed_; // reused
    uint64_t key_changes_ = 0;
    SPIPlanPtr key_plan_ = nullptr; // kept for the process's life
    SPIPlanPtr query_plan_ = nullptr;

    std::unordered_map<std::string, CachedPolicy> policies_;
    std::unordered_map<std::string, CachedQuery> queries_;
    // The kept queries' names by catalog_changes::query_digest (two names may share one).
    std::unordered_multimap<std::uint64_t, std::string> query_names_;
    std::string mask_secret_;
    std::string jwks_;
    uint64_t generation_ = 0;
    bool installed_ = false;
};
