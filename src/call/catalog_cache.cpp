// The worker's catalog cache and both halves of its invalidation: see catalog_cache.hpp.
#include "call/catalog_cache.hpp"

#include "auth/secrets.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include "common/comma_list.hpp"
#include "pg/pg_guard.hpp"

#include <cstdlib>
#include <cstring>

// Sender: a statement trigger on every catalog table. The message leaves at commit only.
QUERYGATE_SQL_FUNCTION(querygate_catalog_changed)
{
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("catalog_changed() must be called as a trigger")));
    TriggerData *trigdata = reinterpret_cast<TriggerData *>(fcinfo->context);
    CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
    return PointerGetDatum(nullptr);
}

namespace {

// The hash action's HMAC-SHA-256 key for a policy's answers: HMAC-SHA-256 under the database's
// mask secret of "querygate hash scope\n" then "policy:<name>", or "shared:<scope>" for a policy
// that names a shared scope. Hashes of one value under two keys cannot be compared, so two
// policies' answers join on a hash only when they share a scope, and no hash a caller sees is
// one another policy's caller can confirm a guess with. Empty when the secret is.
std::string hash_key_for(const std::string &mask_secret, const std::string &policy,
                         const std::string &shared_scope)
{
    if (mask_secret.empty())
        return std::string();
    const std::string label =
        "querygate hash scope\n" +
        (shared_scope.empty() ? "policy:" + policy : "shared:" + shared_scope);
    unsigned char key[secrets::sha256_length];
    secrets::hmac_sha256(mask_secret.data(), mask_secret.size(), label.data(), label.size(), key);
    return std::string(reinterpret_cast<const char *>(key), sizeof(key));
}

// Receiver state. The callback runs inside PostgreSQL's invalidation processing: it only sets a
// flag.
constexpr int catalog_table_count = 7;
const char *const catalog_tables[catalog_table_count] = {
    "saved_query", "policy", "query_grant", "api_key", "mask_rule", "jwks", "mask_secret"};
Oid watched[catalog_table_count] = {InvalidOid};
bool dirty = true;

void on_relcache_invalidation(Datum, Oid relid)
{
    if (relid == InvalidOid) {
        dirty = true;
        return;
    }
    for (Oid w : watched)
        if (w == relid)
            dirty = true;
}

// Rows of a catalog statement as C strings (nullptr for NULL), copied out of SPI's memory into the
// transaction's, so C++ code can read them after the guarded call returns.
struct TextRows {
    uint64 nrows = 0;
    int ncols = 0;
    char **cells = nullptr; // row-major
    const char *at(uint64 row, int col) const { return cells[row * ncols + col]; }
};

TextRows fetch(const char *sql)
{
    TextRows rows;
    pg::guard([&] {
        MemoryContext outer = CurrentMemoryContext;
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
            elog(ERROR, "querygate: catalog read failed: %s", sql);
        rows.nrows = SPI_processed;
        rows.ncols = SPI_tuptable->tupdesc->natts;
        rows.cells = static_cast<char **>(
            MemoryContextAllocZero(outer, sizeof(char *) * Max(rows.nrows * rows.ncols, 1)));
        for (uint64 r = 0; r < rows.nrows; r++)
            for (int c = 0; c < rows.ncols; c++) {
                char *v = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, c + 1);
                rows.cells[r * rows.ncols + c] = v ? MemoryContextStrdup(outer, v) : nullptr;
            }
        SPI_finish();
    });
    return rows;
}

// The limit columns of policy and api_key, in the order read_limits reads them.
const char limit_columns[] = "rate_per_second, burst, max_in_flight, quota, quota_period";

rate_limits::Limits read_limits(const TextRows &rows, uint64 r, int first)
{
    rate_limits::Limits l;
    auto cell = [&](int i) { return rows.at(r, first + i); };
    l.rate_per_second = cell(0) ? std::strtod(cell(0), nullptr) : 0;
    l.burst = cell(1) ? std::strtol(cell(1), nullptr, 10) : 0;
    l.max_in_flight = cell(2) ? std::strtol(cell(2), nullptr, 10) : 0;
    l.quota = cell(3) ? std::strtoll(cell(3), nullptr, 10) : 0;
    l.quota_period = cell(4) && std::strcmp(cell(4), "month") == 0 ? rate_limits::Period::month
                                                                   : rate_limits::Period::day;
    return l;
}

} // namespace

void CatalogCache::register_invalidation()
{
    CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum)0);
}

bool CatalogCache::refresh()
{
    if (!dirty)
        return installed_;
    bool installed = false;
    pg::guard([&] {
        Oid nsp = get_namespace_oid("querygate", true);
        bool all = OidIsValid(nsp);
        for (int i = 0; i < catalog_table_count; i++) {
            watched[i] = all ? get_relname_relid(catalog_tables[i], nsp) : InvalidOid;
            all = all && OidIsValid(watched[i]);
        }
        installed = all;
    });
    keys_.clear();
    policies_.clear();
    queries_.clear();
    installed_ = installed;
    generation_++;
    if (installed)
        load();
    // Stays dirty while the extension is missing, so its creation is noticed by the next request.
    dirty = !installed;
    return installed_;
}

void CatalogCache::load()
{
    // The worker's search_path follows the saved queries it runs, so every function, operator and
    // type here is schema-qualified: nothing a search_path names can run in this superuser session.
    // Names are [A-Za-z0-9_], so a comma joins them safely; types as oids.
    TextRows q =
        fetch("SELECT name, sql, prepared_sql, pg_catalog.array_to_string(param_names, ','), "
              "pg_catalog.array_to_string(param_types::pg_catalog.oid[], ','), "
              "search_path, revision, param_rules::pg_catalog.text, "
              "saved_by::pg_catalog.oid, version, description FROM querygate.saved_query");
    for (uint64 r = 0; r < q.nrows; r++) {
        CachedQuery cq;
        cq.name = q.at(r, 0);
        cq.sql = q.at(r, 1);
        cq.prepared_sql = q.at(r, 2);
        cq.param_names = comma_list::split(q.at(r, 3));
        for (const auto &t : comma_list::split(q.at(r, 4)))
            cq.param_types.push_back(static_cast<Oid>(std::strtoul(t.c_str(), nullptr, 10)));
        cq.search_path = q.at(r, 5);
        cq.revision = std::strtoll(q.at(r, 6), nullptr, 10);
        cq.saved_by = static_cast<Oid>(std::strtoul(q.at(r, 8), nullptr, 10));
        cq.version = static_cast<int>(std::strtol(q.at(r, 9), nullptr, 10));
        cq.description = q.at(r, 10) ? q.at(r, 10) : "";
        if (const char *rules = q.at(r, 7)) {
            std::string error; // validated at save time; a failure here leaves no rules
            if (!param_rules::parse(rules, cq.rules, error))
                cq.rules.clear();
        }
        queries_.emplace(cq.name, std::move(cq));
    }

    // Policies and their mask rules, decoded as the administration functions decode them.
    TextRows m = fetch((std::string(mask_rows_select) + " ORDER BY policy, pattern").c_str());
    std::unordered_map<std::string, std::pair<std::vector<const char *>, std::vector<const char *>>>
        masks;
    for (uint64 r = 0; r < m.nrows; r++) {
        auto &pair = masks[m.at(r, 0)];
        pair.first.push_back(m.at(r, 1));
        pair.second.push_back(m.at(r, 2));
    }
    TextRows p = fetch(policy_rows_select);
    for (uint64 r = 0; r < p.nrows; r++) {
        PolicyRow row = {};
        for (int c = 0; c < POLICY_COLUMNS; c++)
            row.cells[c] = p.at(r, c);
        auto rules = masks.find(p.at(r, POLICY_NAME));
        if (rules != masks.end()) {
            row.nmasks = static_cast<int>(rules->second.first.size());
            row.patterns = rules->second.first.data();
            row.actions = rules->second.second.data();
        }
        CachedPolicy cp;
        if (!decode_policy(row, cp, cp.invalid))
            ereport(WARNING, (errmsg("querygate: policy \"%s\" refuses every call: %s",
                                     cp.name.c_str(), cp.invalid.c_str())));
        else
            cp.invalid.clear();
        policies_.emplace(cp.name, std::move(cp));
    }
    TextRows l =
        fetch(("SELECT name, " + std::string(limit_columns) + " FROM querygate.policy").c_str());
    for (uint64 r = 0; r < l.nrows; r++) {
        auto it = policies_.find(l.at(r, 0));
        if (it != policies_.end())
            it->second.limits = read_limits(l, r, 1);
    }
    TextRows i = fetch("SELECT name, i FROM querygate.policy, pg_catalog.unnest(jwt_issuers) i");
    for (uint64 r = 0; r < i.nrows; r++) {
        auto it = policies_.find(i.at(r, 0));
        if (it != policies_.end())
            it->second.jwt_issuers.insert(i.at(r, 1));
    }
    TextRows g = fetch("SELECT policy, query FROM querygate.query_grant");
    for (uint64 r = 0; r < g.nrows; r++) {
        auto it = policies_.find(g.at(r, 0));
        if (it != policies_.end())
            it->second.queries.insert(g.at(r, 1));
    }

    TextRows k =
        fetch(("SELECT name, policy, pg_catalog.encode(key_hash, 'hex'), "
               "(EXTRACT(epoch FROM expires_at) OPERATOR(pg_catalog.*) 1000000)"
               "::pg_catalog.int8, allowed_ips IS NULL, "
               "pg_catalog.array_to_string(allowed_ips::pg_catalog.text[], ','), tenant, "
               "id, " +
               std::string(limit_columns) + " FROM querygate.api_key WHERE revoked_at IS NULL")
                  .c_str());
    for (uint64 r = 0; r < k.nrows; r++) {
        CachedKey ck;
        ck.name = k.at(r, 0);
        ck.policy = k.at(r, 1) ? k.at(r, 1) : "";
        ck.expires_at_unix_us = k.at(r, 3) ? std::strtoll(k.at(r, 3), nullptr, 10) : 0;
        ck.any_address = std::strcmp(k.at(r, 4), "t") == 0;
        if (!ck.any_address) {
            std::string bad; // cidr values from the catalog always parse
            ck.allowed_ips = client_address::parse_list(k.at(r, 5) ? k.at(r, 5) : "", bad);
        }
        ck.has_tenant = k.at(r, 6) != nullptr;
        ck.tenant = ck.has_tenant ? k.at(r, 6) : "";
        ck.id = std::strtoll(k.at(r, 7), nullptr, 10);
        ck.limits = read_limits(k, r, 8);
        keys_.emplace(k.at(r, 2), std::move(ck));
    }

    TextRows secret = fetch("SELECT pg_catalog.encode(secret, 'hex') FROM querygate.mask_secret "
                            "ORDER BY created_at LIMIT 1");
    mask_secret_.clear();
    if (secret.nrows > 0) {
        const char *hex = secret.at(0, 0);
        for (size_t i = 0; hex[i] && hex[i + 1]; i += 2)
            mask_secret_.push_back(
                static_cast<char>(std::strtoul(std::string(hex + i, 2).c_str(), nullptr, 16)));
    }
    for (auto &entry : policies_)
        entry.second.hash_key =
            hash_key_for(mask_secret_, entry.second.name, entry.second.hash_scope);
    TextRows jwks = fetch("SELECT keys::pg_catalog.text FROM querygate.jwks");
    jwks_ = jwks.nrows > 0 ? jwks.at(0, 0) : "";
}

const CachedKey *CatalogCache::find_key(const std::string &key_hash_hex) const
{
    auto it = keys_.find(key_hash_hex);
    return it == keys_.end() ? nullptr : &it->second;
}

const CachedPolicy *CatalogCache::find_policy(const std::string &name) const
{
    auto it = policies_.find(name);
    return it == policies_.end() ? nullptr : &it->second;
}

const CachedQuery *CatalogCache::find_query(const std::string &name) const
{
    auto it = queries_.find(name);
    return it == queries_.end() ? nullptr : &it->second;
}
