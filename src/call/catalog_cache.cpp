// The worker's catalog cache and both halves of its invalidation: see catalog_cache.hpp.
#include "call/catalog_cache.hpp"

#include "auth/secrets.hpp"

extern "C" {
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include "common/comma_list.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

#include <algorithm>
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

// Receiver state. The callback runs inside PostgreSQL's invalidation processing: it only sets
// flags, one for each part of the cache a table feeds. api_key's and saved_query's changes come a
// row at a time (catalog_changes.hpp), except on a hot standby, where their tables' messages
// (replayed from the WAL) are all there is: there every key, or every query, is forgotten.
enum Part : unsigned {
    queries_part = 1, // every kept query forgotten
    policies_part = 2,
    jwks_part = 4,
    keys_part = 8, // every kept key forgotten
    every_part = 15,
};
constexpr int catalog_table_count = 7;
const char *const catalog_tables[catalog_table_count] = {
    "saved_query", "policy", "query_grant", "api_key", "mask_rule", "jwks", "mask_secret"};
// What a change to each table (in the order above) makes stale. A mask_secret change is the
// policies': their hash keys derive from it.
const unsigned table_parts[catalog_table_count] = {
    queries_part, policies_part, policies_part, keys_part, policies_part, jwks_part, policies_part};
// Told a row at a time on a primary (catalog_changes.hpp).
const bool by_row[catalog_table_count] = {true, false, false, true, false, false, false};
Oid watched[catalog_table_count] = {InvalidOid};
unsigned dirty = every_part;

void on_relcache_invalidation(Datum, Oid relid)
{
    if (relid == InvalidOid) {
        dirty = every_part; // a lost message (the queue overflowed): anything may have changed
        return;
    }
    for (int i = 0; i < catalog_table_count; i++)
        if (watched[i] == relid && (!by_row[i] || RecoveryInProgress()))
            dirty |= table_parts[i];
}

// Rows of a catalog statement as C strings (nullptr for NULL), copied out of SPI's memory into the
// transaction's, so C++ code can read them after the guarded call returns.
struct TextRows {
    uint64 nrows = 0;
    int ncols = 0;
    char **cells = nullptr; // row-major
    const char *at(uint64 row, int col) const { return cells[row * ncols + col]; }
};

// SPI's last result as text, into `outer`. Inside a guarded block, connected to SPI.
void copy_result(MemoryContext outer, TextRows &rows)
{
    rows.nrows = SPI_processed;
    rows.ncols = SPI_tuptable->tupdesc->natts;
    rows.cells = static_cast<char **>(
        MemoryContextAllocZero(outer, sizeof(char *) * Max(rows.nrows * rows.ncols, 1)));
    for (uint64 r = 0; r < rows.nrows; r++)
        for (int c = 0; c < rows.ncols; c++) {
            char *v = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, c + 1);
            rows.cells[r * rows.ncols + c] = v ? MemoryContextStrdup(outer, v) : nullptr;
        }
}

TextRows fetch(const char *sql)
{
    TextRows rows;
    pg::guard([&] {
        MemoryContext outer = CurrentMemoryContext;
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
            elog(ERROR, "querygate: catalog read failed: %s", sql);
        copy_result(outer, rows);
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

// The digest catalog_changes names a key by, from its hash in hex (as the api_key trigger takes
// it from the hash's bytes).
std::uint64_t digest_of_hex(const std::string &hex)
{
    unsigned char prefix[8] = {0};
    const auto nibble = [](char c) {
        return static_cast<unsigned>(c >= 'a'   ? c - 'a' + 10
                                     : c >= 'A' ? c - 'A' + 10
                                                : c - '0') &
               15u;
    };
    for (std::size_t i = 0; i < sizeof(prefix) && 2 * i + 1 < hex.size(); i++)
        prefix[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    return catalog_changes::key_digest(prefix, sizeof(prefix));
}

} // namespace

void CatalogCache::register_invalidation()
{
    CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum)0);
}

bool CatalogCache::refresh()
{
    if (dirty != 0) {
        // Taken before anything is read: a message that arrives while the parts load (a lock
        // taken lets it in) is of a change committed after this transaction's snapshot, so it is
        // not in them, and its flag must stay for the next request.
        const unsigned stale = dirty;
        dirty = 0;
        try {
            if (!reload(stale)) {
                dirty |= every_part; // so that its creation is noticed by the next request
                return false;
            }
        } catch (...) {
            dirty |= stale; // loaded again by the next request
            throw;
        }
    }
    take_changes();
    return true;
}

void CatalogCache::take_changes()
{
    // Keys and queries changed since the last call: forgotten here, fetched again when needed.
    if (key_reader_.read(changed_))
        forget_keys();
    else if (!changed_.empty()) {
        for (std::uint64_t digest : changed_)
            forget_key(digest);
        key_changes_++;
    }
    if (query_reader_.read(changed_))
        forget_queries();
    else if (!changed_.empty()) {
        for (std::uint64_t digest : changed_) {
            const auto [from, to] = query_names_.equal_range(digest);
            for (auto it = from; it != to; ++it)
                queries_.erase(it->second);
            query_names_.erase(digest);
        }
        generation_++;
    }
}

bool CatalogCache::reload(unsigned stale)
{
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
    if (!installed)
        stale = every_part;
    if (stale & queries_part)
        forget_queries();
    if (stale & policies_part)
        policies_.clear();
    if (stale & jwks_part)
        jwks_.clear();
    if (stale & keys_part)
        forget_keys();
    if (stale & (queries_part | policies_part | jwks_part))
        generation_++;
    installed_ = installed;
    if (!installed)
        return false;
    if (stale & policies_part)
        load_policies();
    if (stale & jwks_part)
        load_jwks();
    return true;
}

void CatalogCache::load_policies()
{
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
}

void CatalogCache::load_jwks()
{
    TextRows jwks = fetch("SELECT keys::pg_catalog.text FROM querygate.jwks");
    jwks_ = jwks.nrows > 0 ? jwks.at(0, 0) : "";
}

// An active key's row by its hash: what authenticate() checks and its limits. Planned once; the
// digest decoded in SQL, so the unique index on key_hash finds it.
constexpr char key_by_hash[] =
    "SELECT name, policy, "
    "(EXTRACT(epoch FROM expires_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8, "
    "allowed_ips IS NULL, pg_catalog.array_to_string(allowed_ips::pg_catalog.text[], ','), "
    "tenant, id, rate_per_second, burst, max_in_flight, quota, quota_period " // limit_columns
    "FROM querygate.api_key WHERE key_hash OPERATOR(pg_catalog.=) "
    "pg_catalog.decode($1, 'hex') AND revoked_at IS NULL";

// The one row `sql` finds for the text `arg`, through a plan made once and kept in `plan`. With a
// snapshot taken now, after refresh() read the rings: every change it was told of is in it, and a
// change it was not told of yet is told at the next call.
static TextRows fetch_row(SPIPlanPtr &plan, const char *sql, const char *arg)
{
    TextRows rows;
    SPIPlanPtr *kept = &plan;
    pg::guard([&rows, kept, sql, arg] {
        MemoryContext outer = CurrentMemoryContext;
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        if (*kept == nullptr) {
            Oid types[1] = {TEXTOID};
            SPIPlanPtr prepared = SPI_prepare(sql, 1, types);
            if (prepared == nullptr || SPI_keepplan(prepared) != 0)
                elog(ERROR, "querygate: could not plan a catalog lookup: %s", sql);
            *kept = prepared;
        }
        Datum values[1] = {CStringGetTextDatum(arg)};
        PushActiveSnapshot(GetLatestSnapshot());
        const int rc = SPI_execute_plan(*kept, values, nullptr, true, 1);
        PopActiveSnapshot();
        if (rc != SPI_OK_SELECT)
            elog(ERROR, "querygate: a catalog lookup failed: %s", sql);
        copy_result(outer, rows);
        SPI_finish();
    });
    return rows;
}

bool CatalogCache::fetch_key(const std::string &key_hash_hex, CachedKey &out)
{
    const TextRows k = fetch_row(key_plan_, key_by_hash, key_hash_hex.c_str());
    if (k.nrows == 0)
        return false;
    out.name = k.at(0, 0);
    out.policy = k.at(0, 1) ? k.at(0, 1) : "";
    out.expires_at_unix_us = k.at(0, 2) ? std::strtoll(k.at(0, 2), nullptr, 10) : 0;
    out.any_address = std::strcmp(k.at(0, 3), "t") == 0;
    if (!out.any_address) {
        std::string bad; // cidr values from the catalog always parse
        out.allowed_ips = client_address::parse_list(k.at(0, 4) ? k.at(0, 4) : "", bad);
    }
    out.has_tenant = k.at(0, 5) != nullptr;
    out.tenant = out.has_tenant ? k.at(0, 5) : "";
    out.id = std::strtoll(k.at(0, 6), nullptr, 10);
    out.limits = read_limits(k, 0, 7);
    return true;
}

const CachedKey *CatalogCache::find_key(const std::string &key_hash_hex)
{
    const std::uint64_t digest = digest_of_hex(key_hash_hex);
    if (const auto it = keys_.find(digest); it != keys_.end()) {
        if (it->second->hash_hex == key_hash_hex) {
            key_order_.splice(key_order_.begin(), key_order_, it->second); // used now
            return &it->second->key;
        }
    }
    // Room first, so that nothing fails once the key is fetched.
    key_order_.emplace_front();
    keys_.reserve(keys_.size() + 1);
    KeyEntry &entry = key_order_.front();
    bool found = false;
    try {
        found = fetch_key(key_hash_hex, entry.key);
        if (found) {
            entry.hash_hex = key_hash_hex;
            entry.digest = digest;
        }
    } catch (...) {
        key_order_.pop_front();
        throw;
    }
    if (!found) {
        key_order_.pop_front(); // an unknown key is not remembered: a new one needs no notice
        return nullptr;
    }
    // Two hashes with one digest (as likely as a 64-bit collision): the newer is kept.
    forget_key(digest);
    keys_.emplace(digest, key_order_.begin());
    const std::size_t most = static_cast<std::size_t>(std::max(1, settings::key_cache_size));
    while (keys_.size() > most)
        forget_key(key_order_.back().digest); // the least recently used
    return &entry.key;
}

void CatalogCache::forget_key(std::uint64_t digest)
{
    const auto it = keys_.find(digest);
    if (it == keys_.end())
        return;
    key_order_.erase(it->second);
    keys_.erase(it);
}

void CatalogCache::forget_keys()
{
    keys_.clear();
    key_order_.clear();
    key_reader_.start(); // what changed before now concerns no key cached now
    key_changes_++;
}

const CachedPolicy *CatalogCache::find_policy(const std::string &name) const
{
    auto it = policies_.find(name);
    return it == policies_.end() ? nullptr : &it->second;
}

// A saved query's row by its name (the primary key). The worker's search_path follows the saved
// queries it runs, so every function, operator and type here is schema-qualified: nothing a
// search_path names can run in this superuser session. Parameter names are [A-Za-z0-9_], so a
// comma joins them safely; types as oids.
constexpr char query_by_name[] =
    "SELECT name, sql, prepared_sql, pg_catalog.array_to_string(param_names, ','), "
    "pg_catalog.array_to_string(param_types::pg_catalog.oid[], ','), "
    "search_path, revision, param_rules::pg_catalog.text, "
    "saved_by::pg_catalog.oid, version, description FROM querygate.saved_query "
    "WHERE name OPERATOR(pg_catalog.=) $1";

bool CatalogCache::fetch_query(const std::string &name, CachedQuery &cq)
{
    const TextRows q = fetch_row(query_plan_, query_by_name, name.c_str());
    if (q.nrows == 0)
        return false;
    cq.name = q.at(0, 0);
    cq.sql = q.at(0, 1);
    cq.prepared_sql = q.at(0, 2);
    cq.param_names = comma_list::split(q.at(0, 3));
    for (const auto &t : comma_list::split(q.at(0, 4)))
        cq.param_types.push_back(static_cast<Oid>(std::strtoul(t.c_str(), nullptr, 10)));
    cq.search_path = q.at(0, 5);
    cq.revision = std::strtoll(q.at(0, 6), nullptr, 10);
    cq.saved_by = static_cast<Oid>(std::strtoul(q.at(0, 8), nullptr, 10));
    cq.version = static_cast<int>(std::strtol(q.at(0, 9), nullptr, 10));
    cq.description = q.at(0, 10) ? q.at(0, 10) : "";
    if (const char *rules = q.at(0, 7)) {
        std::string error; // validated at save time; a failure here leaves no rules
        if (!param_rules::parse(rules, cq.rules, error))
            cq.rules.clear();
    }
    return true;
}

const CachedQuery *CatalogCache::find_query(const std::string &name)
{
    if (const auto it = queries_.find(name); it != queries_.end())
        return &it->second;
    CachedQuery cq;
    if (!fetch_query(name, cq))
        return nullptr; // an unknown query is not remembered: a new one needs no notice
    queries_.reserve(queries_.size() + 1);
    query_names_.reserve(query_names_.size() + 1);
    CachedQuery &kept = queries_.emplace(name, std::move(cq)).first->second;
    query_names_.emplace(catalog_changes::query_digest(name), name);
    return &kept;
}

void CatalogCache::forget_queries()
{
    queries_.clear();
    query_names_.clear();
    query_reader_.start(); // what changed before now concerns no query kept now
    generation_++;
}
