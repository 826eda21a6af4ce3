// Every querygate.* setting, defined in one place (settings.cpp). The C variables hold the current
// values; PostgreSQL updates the reloadable ones on SIGHUP (the worker calls ProcessConfigFile).
#pragma once

namespace settings {

extern char *database;         // querygate.database (restart)
extern char *listen_addresses; // querygate.listen_addresses (restart)
extern int port;               // querygate.port (restart)
extern int workers;            // querygate.workers (restart)
extern bool ssl;               // querygate.ssl: the HTTP workers speak TLS (restart)
extern char *ssl_cert_file;    // querygate.ssl_cert_file; empty: PostgreSQL's ssl_cert_file
extern char *ssl_key_file;     // querygate.ssl_key_file; empty: PostgreSQL's ssl_key_file
extern int statement_timeout;  // querygate.statement_timeout, ms, 0 = none (reload)
extern int max_page_size;      // querygate.max_page_size (reload)
extern int max_body_size;      // querygate.max_body_size, bytes (reload)
extern int max_response_size;  // querygate.max_response_size, bytes (reload)
extern int max_exports;        // querygate.max_exports: exports at once, every worker (reload)
extern int export_min_rate;    // querygate.export_min_rate: kB/s an export's reader must keep
extern int export_rate_window; // querygate.export_rate_window: seconds it is judged over
extern int max_export_size;    // querygate.max_export_size, MB, 0 = no limit (reload)
extern bool allow_writes;      // querygate.allow_writes: the server-wide switch for writes (reload)
extern bool group_commit;      // querygate.group_commit: writes share WAL flushes (reload)
extern int busy_poll;          // querygate.busy_poll, us a worker polls before sleeping (reload)
extern int helpers;            // querygate.helpers: helper processes per worker (reload)
extern int slow_call_threshold;   // querygate.slow_call_threshold, ms a read runs in a worker
extern int caller_share;          // querygate.caller_share: % of each shared pool one caller holds
extern int log_requests;          // querygate.log_requests: a LogRequests (reload)
extern int log_requests_format;   // querygate.log_requests_format: a LogFormat (reload)
extern int key_cache_size;        // querygate.key_cache_size: API keys a process keeps (reload)
extern int adhoc_cache_size;      // querygate.adhoc_cache_size: ad-hoc statements kept (reload)
extern int adhoc_work_mem;        // querygate.adhoc_work_mem, kB; -1: work_mem (reload)
extern int adhoc_temp_file_limit; // querygate.adhoc_temp_file_limit, kB; -1: none (reload)
extern int limit_entries;         // querygate.limit_entries: keys and policies counted (restart)
extern int address_entries;       // querygate.address_entries: addresses counted at once (restart)
extern int anonymous_ipv6_prefix; // querygate.anonymous_ipv6_prefix: an IPv6 caller's network
extern double anonymous_rate;  // querygate.anonymous_rate_limit: calls/s per address without a key
extern int anonymous_burst;    // querygate.anonymous_burst (reload)
extern int rate_limit_headers; // querygate.rate_limit_headers: a RateLimitHeaders (reload)
extern int quota_flush_interval;   // querygate.quota_flush_interval, seconds (reload)
extern int stat_entries;           // querygate.stat_entries: queries x policies counted (restart)
extern bool statistics;            // querygate.statistics: calls are counted (reload)
extern char *metrics_token_file;   // querygate.metrics_token_file: /metrics's tokens (reload)
extern bool history;               // querygate.history: calls are recorded (reload)
extern double history_sample_rate; // querygate.history_sample_rate: successes kept (reload)
extern int history_sql;            // querygate.history_sql: a HistorySql (reload)
extern int history_retention;      // querygate.history_retention, seconds, 0 = forever (reload)
extern int history_buffer;         // querygate.history_buffer: records in the ring (restart)
extern int history_flush_interval; // querygate.history_flush_interval, ms (reload)
extern int event_buffer;           // querygate.event_buffer: run events kept, 0 = off (restart)
extern int max_event_streams;      // querygate.max_event_streams: per worker (reload)
extern int max_event_streams_per_key; // querygate.max_event_streams_per_key (reload)
extern int event_keepalive;           // querygate.event_keepalive, s without bytes on a stream
extern int max_connections; // querygate.max_connections: open at once, every worker (restart)
extern int max_connections_per_ip; // querygate.max_connections_per_ip, 0 = no limit (reload)
extern int request_timeout;   // querygate.request_timeout, ms to send a whole request, 0 = none
extern int idle_timeout;      // querygate.idle_timeout, s a keep-alive connection may idle (reload)
extern int overload_target;   // querygate.overload_target, ms a request may wait once overloaded
extern int overload_interval; // querygate.overload_interval, ms of long waits that make an overload
extern char *trusted_proxies; // querygate.trusted_proxies: CIDRs whose X-Forwarded-For is believed
extern char *cors_allowed_origins; // querygate.cors_allowed_origins: who may read answers (reload)
extern char *jwt_secret_file;      // querygate.jwt_secret_file: the HS256 keys (reload)
extern char *jwt_issuer;           // querygate.jwt_issuer (reload)
extern char *jwt_audience;         // querygate.jwt_audience (reload)
extern char *jwt_policy_claim;     // querygate.jwt_policy_claim: claim naming the policy (reload)
extern char *jwt_tenant_claim;     // querygate.jwt_tenant_claim: claim naming the tenant (reload)
extern char *tenant;          // querygate.tenant: the calling tenant, set per call by the worker
extern char *fault_injection; // querygate.fault_injection: tests only (pg_guard.hpp)

// The values of querygate.log_requests and querygate.log_requests_format (http/access_log.hpp).
enum LogRequests { log_off = 0, log_errors = 1, log_all = 2 };
enum LogFormat { log_text = 0, log_json = 1 };
// What the run history keeps of SQL a caller wrote: nothing, its SHA-256, or its text.
enum HistorySql { history_sql_off = 0, history_sql_hash = 1, history_sql_text = 2 };

// The values of querygate.rate_limit_headers: the IETF draft's RateLimit field on every answer to
// a caller with limits (RateLimit-Policy with it on a 429); the earlier drafts' three fields
// (RateLimit-Limit, -Remaining, -Reset) on every answer; or the draft's fields on a 429 only.
enum RateLimitHeaders {
    limit_headers_draft = 0,
    limit_headers_legacy = 1,
    limit_headers_refused = 2
};

// Bumped by the worker after every reload, so values derived from settings are rebuilt.
extern unsigned long generation;

// The page size used when a request names none: 100, or max_page_size if that is smaller.
constexpr int default_page_size = 100;

// Defines every setting. The restart-only ones (database, listen_addresses, port, workers) can only
// be defined while the postmaster preloads the library; otherwise they are left out, since HTTP
// is off anyway.
void define(bool preloading);
// Whether the postmaster preloaded the library (shared_preload_libraries): true in every process
// forked from it, false in a backend that loaded it by CREATE EXTENSION or LOAD.
extern bool preloaded;

} // namespace settings
