// querygate.* settings. Each C variable starts at its default, as PostgreSQL's own do.
#include "pg/pg_headers.hpp"
extern "C" {
#include "utils/guc.h"
}

#include "common/settings.hpp"

#include <climits>

namespace settings {

char *database = nullptr;
char *listen_addresses = nullptr;
int port = 8080;
int workers = 2;
int statement_timeout = 5000;
int max_page_size = 1000;
int max_body_size = 1024 * 1024;
int max_response_size = 32 * 1024 * 1024;
int max_exports = 4;
int export_min_rate = 64;
int export_rate_window = 30;
int max_export_size = 1024;
int max_connections = 10000;
int max_connections_per_ip = 1000;
int request_timeout = 30000;
int idle_timeout = 60;
int overload_target = 20;
int overload_interval = 100;
bool allow_writes = false;
bool group_commit = false;
int busy_poll = 50;
int helpers = 8;
int slow_call_threshold = 10;
int caller_share = 75;
int log_requests = log_off;
int log_requests_format = log_text;
int key_cache_size = 10000;
int adhoc_cache_size = 200;
int adhoc_work_mem = -1;
int adhoc_temp_file_limit = 1024 * 1024;
int limit_entries = 10000;
int address_entries = 10000;
int anonymous_ipv6_prefix = 64;
double anonymous_rate = 0;
int anonymous_burst = 0;
int rate_limit_headers = limit_headers_draft;
int quota_flush_interval = 10;
int stat_entries = 5000;
bool statistics = true;
char *metrics_token_file = nullptr;
bool history = true;
double history_sample_rate = 1.0;
int history_sql = history_sql_hash;
int history_retention = 7 * 24 * 3600;
int history_buffer = 8192;
int history_flush_interval = 1000;
int event_buffer = 4096;
int max_event_streams = 500;
int max_event_streams_per_key = 8;
int event_keepalive = 15;
bool ssl = false;
char *ssl_cert_file = nullptr;
char *ssl_key_file = nullptr;
char *trusted_proxies = nullptr;
char *cors_allowed_origins = nullptr;
char *jwt_secret_file = nullptr;
char *jwt_issuer = nullptr;
char *jwt_audience = nullptr;
char *jwt_policy_claim = nullptr;
char *jwt_tenant_claim = nullptr;
char *tenant = nullptr;
char *fault_injection = nullptr;
unsigned long generation = 1;

namespace {

// on/off and their spellings are accepted (hidden), as for a boolean: on is all.
const struct config_enum_entry log_requests_options[] = {
    {"off", log_off, false}, {"errors", log_errors, false},
    {"all", log_all, false}, {"on", log_all, true},
    {"true", log_all, true}, {"yes", log_all, true},
    {"1", log_all, true},    {"false", log_off, true},
    {"no", log_off, true},   {"0", log_off, true},
    {nullptr, 0, false}};

const struct config_enum_entry history_sql_options[] = {{"off", history_sql_off, false},
                                                        {"hash", history_sql_hash, false},
                                                        {"text", history_sql_text, false},
                                                        {nullptr, 0, false}};

const struct config_enum_entry log_format_options[] = {
    {"text", log_text, false}, {"json", log_json, false}, {nullptr, 0, false}};

const struct config_enum_entry rate_limit_headers_options[] = {
    {"draft", limit_headers_draft, false},
    {"legacy", limit_headers_legacy, false},
    {"refused", limit_headers_refused, false},
    {"all", limit_headers_legacy, true}, // its name before the draft's fields: the three fields
    {nullptr, 0, false}};

void define_restart_only()
{
    DefineCustomStringVariable("querygate.database",
                               "Database whose saved queries the HTTP workers serve.", nullptr,
                               &database, "postgres", PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable("querygate.listen_addresses", "Address the HTTP workers listen on.",
                               "One host name or IP address; \"*\" listens on every address.",
                               &listen_addresses, "127.0.0.1", PGC_POSTMASTER, 0, nullptr, nullptr,
                               nullptr);
    DefineCustomIntVariable("querygate.port", "TCP port the HTTP workers listen on.", nullptr,
                            &port, 8080, 1, 65535, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.workers", "Number of HTTP worker processes.",
                            "Each worker runs one query at a time.", &workers, 2, 0, 128,
                            PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("querygate.ssl", "Makes the HTTP workers speak TLS (HTTPS) only.",
                             "With the certificate and key of querygate.ssl_cert_file and "
                             "querygate.ssl_key_file, or else PostgreSQL's own.",
                             &ssl, false, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable("querygate.ssl_cert_file",
                               "The HTTP workers' TLS certificate chain (PEM).",
                               "Empty: PostgreSQL's ssl_cert_file. Relative to the data directory.",
                               &ssl_cert_file, "", PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable("querygate.ssl_key_file", "The HTTP workers' TLS private key (PEM).",
                               "Empty: PostgreSQL's ssl_key_file. Relative to the data directory.",
                               &ssl_key_file, "", PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.key_cache_size",
        "API keys each worker (and helper) keeps after their first call, the least recently used "
        "forgotten first.",
        "A key not kept is fetched by its hash when presented (an index lookup); a catalog's "
        "keys are never loaded whole.",
        &key_cache_size, 10000, 1, 10000000, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.adhoc_cache_size",
        "Ad-hoc statements (POST /sql) each worker keeps planned and checked, the least recently "
        "used forgotten first.",
        "A statement is kept by its text: one whose literals change at every call is parsed, "
        "checked and planned at every call.",
        &adhoc_cache_size, 200, 1, 100000, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.adhoc_work_mem",
        "work_mem for a call of SQL a caller wrote (POST /sql); -1: the server's work_mem.",
        "Memory each sort or hash of the statement may take before it spills to a temporary file.",
        &adhoc_work_mem, -1, -1, MAX_KILOBYTES, PGC_SIGHUP, GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.adhoc_temp_file_limit",
        "temp_file_limit for a call of SQL a caller wrote (POST /sql); -1: the server's.",
        "The temporary files its sorts and hashes may write; past it the call fails (500 "
        "query_failed) instead of filling the disk.",
        &adhoc_temp_file_limit, 1024 * 1024, -1, INT_MAX, PGC_SIGHUP, GUC_UNIT_KB, nullptr, nullptr,
        nullptr);
    DefineCustomIntVariable(
        "querygate.limit_entries", "Keys and policies with limits counted at once.",
        "About 350 bytes of shared memory each. When every entry is in use and none can be "
        "forgotten, calls of new keyed callers are refused (429). Addresses have room of their "
        "own (querygate.address_entries).",
        &limit_entries, 10000, 100, 10000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.address_entries",
        "Client addresses counted at once by querygate.anonymous_rate_limit.",
        "About 350 bytes of shared memory each. When every entry is in use, a new address "
        "takes the place of the one seen first longest ago.",
        &address_entries, 10000, 100, 10000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.anonymous_ipv6_prefix",
                            "Bits of an IPv6 address that make one caller for "
                            "querygate.anonymous_rate_limit.",
                            "64: a /64, the network one host is given, is one caller. An IPv4 "
                            "address is always one caller.",
                            &anonymous_ipv6_prefix, 64, 16, 128, PGC_SIGHUP, 0, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable(
        "querygate.stat_entries", "Query and policy pairs whose calls are counted at once.",
        "About 600 bytes of shared memory each. Calls of a pair that finds the table full are "
        "counted as unrecorded; querygate.stat_reset() empties it.",
        &stat_entries, 5000, 100, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.history_buffer",
        "Call records the workers' rings hold until the writer saves them.",
        "Shared out evenly among the workers' rings; about 1.2 kB of shared memory each. When a "
        "worker's ring is full, its new records are dropped and counted; a call never waits.",
        &history_buffer, 8192, 64, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.event_buffer", "Run events kept in shared memory for GET /events.",
        "About 200 bytes of shared memory each: a stream that reconnects with Last-Event-ID gets "
        "what it missed while it is still held, and a gap event for the rest. 0 turns GET /events "
        "off.",
        &event_buffer, 4096, 0, 1048576, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.max_event_streams", "Open GET /events streams per HTTP worker.",
        "Past it a new stream is answered 503 streams_full. An open stream holds a connection "
        "and a few kB, never the worker.",
        &max_event_streams, 500, 0, 100000, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.max_event_streams_per_key",
        "Open GET /events streams per key (per policy for bearer tokens), counting every worker.",
        "Past it a new stream is answered 429 too_many_streams.", &max_event_streams_per_key, 8, 1,
        100000, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.event_keepalive",
        "Seconds an event stream may go without bytes before a keep-alive comment is sent.",
        "Proxies close connections that stay silent; a client that has gone is found when the "
        "comment cannot be sent.",
        &event_keepalive, 15, 1, 3600, PGC_SIGHUP, GUC_UNIT_S, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.max_connections", "HTTP connections open at once, counting every worker.",
        "Over it a new connection is answered 503 too_many_connections and closed. Each worker "
        "raises its open-file limit to the hard limit; connections past that wait to be accepted.",
        &max_connections, 10000, 1, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
}

void define_reloadable()
{
    DefineCustomIntVariable("querygate.statement_timeout",
                            "Longest time a call's query may run; 0 turns the limit off.", nullptr,
                            &statement_timeout, 5000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable("querygate.max_page_size", "Largest page_size a call may ask for.",
                            nullptr, &max_page_size, 1000, 1, 1000000, PGC_SIGHUP, 0, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable("querygate.max_body_size", "Largest request body accepted.", nullptr,
                            &max_body_size, 1024 * 1024, 1024, 1024 * 1024 * 1024, PGC_SIGHUP,
                            GUC_UNIT_BYTE, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.max_response_size", "Largest answer a call may have.",
        "A page that would be larger fails with 500 response_too_large before the worker's "
        "memory grows past it; a stored value larger than what is left is refused before it "
        "is read.",
        &max_response_size, 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024, PGC_SIGHUP, GUC_UNIT_BYTE,
        nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.max_exports",
        "Exports (?stream=true) written or sent at once, counting every worker.",
        "Past it, a call asking for one is answered 503 too_many_exports; one caller, or one "
        "policy, holds at most querygate.caller_share of them.",
        &max_exports, 4, 0, 1024, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.export_min_rate",
                            "Kilobytes a second an export's reader must take, over each "
                            "querygate.export_rate_window; 0: any pace.",
                            "A reader below it has its connection closed, and the export's place "
                            "among querygate.max_exports given back.",
                            &export_min_rate, 64, 0, 1000000, PGC_SIGHUP, 0, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable("querygate.export_rate_window",
                            "How long an export's reader is judged over against "
                            "querygate.export_min_rate.",
                            nullptr, &export_rate_window, 30, 1, 3600, PGC_SIGHUP, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.max_export_size", "Largest file an export may write.",
                            "An export that would be larger fails with 500 response_too_large; 0 "
                            "sets no limit.",
                            &max_export_size, 1024, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MB, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.max_connections_per_ip",
        "HTTP connections one client address may have open at once; 0 turns the limit off.",
        "Counted across every worker, by the TCP peer's address (a proxy in front counts as one "
        "client). Over it a new connection is answered 503 too_many_connections and closed.",
        &max_connections_per_ip, 1000, 0, 1000000, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.request_timeout",
        "Longest time a connection may take to send a whole request; 0 turns the limit off.",
        "Counted to the request's last byte from the connection's opening (its first request) "
        "or from its request line (a later one, which must also come within idle_timeout more "
        "of the previous answer); bytes arriving slowly do not extend it. The connection is "
        "then closed.",
        &request_timeout, 30000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.idle_timeout", "Longest time a connection may send nothing before it is closed.",
        "A keep-alive connection between requests, or one that stops sending.", &idle_timeout, 60,
        1, 3600, PGC_SIGHUP, GUC_UNIT_S, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "querygate.overload_target",
        "Longest a request may wait for its worker while the worker is overloaded; 0 turns "
        "shedding off.",
        "A worker is overloaded once every request it read for querygate.overload_interval had "
        "waited this long or longer; then such requests are answered 503 overloaded at once, "
        "until an interval passes with none refused. Outside an overload every request is "
        "served.",
        &overload_target, 20, 0, 60000, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.overload_interval",
                            "How long requests must keep waiting querygate.overload_target or "
                            "longer before a worker sheds load, and how long without shedding "
                            "ends it.",
                            nullptr, &overload_interval, 100, 1, 60000, PGC_SIGHUP, GUC_UNIT_MS,
                            nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("querygate.allow_writes",
                             "Allows calls that write, for policies granted writes.",
                             "When off, every call runs in a read-only transaction.", &allow_writes,
                             false, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("querygate.group_commit",
                             "Lets writes share WAL flushes, made by the WAL flusher process.",
                             "Each answer still waits for its flush; a write is visible to direct "
                             "SQL sessions before it is durable.",
                             &group_commit, false, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.busy_poll",
                            "Microseconds a worker that just answered keeps looking for the next "
                            "request before it sleeps; 0 sleeps at once.",
                            "It yields the CPU between looks, so other processes still run.",
                            &busy_poll, 50, 0, 1000, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.helpers",
                            "Processes each worker may start to run writes and slow reads, so "
                            "that a call waiting for its WAL flush, a lock or its own length "
                            "holds no worker; 0 runs every call in the worker.",
                            "Each helper is a background worker: they count against "
                            "max_worker_processes, which querygate raises for them when it is "
                            "not set.",
                            &helpers, 8, 0, 64, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.slow_call_threshold",
                            "How long a read may run in a worker before it moves to a helper; "
                            "its query's next calls then go to helpers while they stay slow.",
                            "A read that spends it is cancelled and run again, from the start, "
                            "by a helper. 0 runs every read in the worker.",
                            &slow_call_threshold, 10, 0, 60000, PGC_SIGHUP, GUC_UNIT_MS, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable("querygate.caller_share",
                            "Percent of each shared pool (a worker's helpers, the export slots) "
                            "one caller's calls, or one policy's together, may hold.",
                            "At least one, and one fewer than all when the pool has two or more, "
                            "so another caller always finds one; 100: no shares.",
                            &caller_share, 75, 1, 100, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "querygate.log_requests", "Logs one line per HTTP request answered: off, errors or all.",
        "The key's name, never its secret; probes (/health, /live, /ready) that succeed "
        "are not logged.",
        &log_requests, log_off, log_requests_options, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable("querygate.log_requests_format",
                             "The access log's lines: text (key=value words) or json.", nullptr,
                             &log_requests_format, log_text, log_format_options, PGC_SIGHUP, 0,
                             nullptr, nullptr, nullptr);
    DefineCustomRealVariable("querygate.anonymous_rate_limit",
                             "Calls per second a client address may make without valid "
                             "credentials; 0 turns the limit off.",
                             "Over it, such calls are answered 429 rate_limited instead of 401.",
                             &anonymous_rate, 0, 0, 1e6, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.anonymous_burst",
                            "Calls without valid credentials an address may make at once before "
                            "querygate.anonymous_rate_limit applies; 0: the rate, rounded up.",
                            nullptr, &anonymous_burst, 0, 0, 1000000000, PGC_SIGHUP, 0, nullptr,
                            nullptr, nullptr);
    DefineCustomEnumVariable(
        "querygate.rate_limit_headers",
        "How answers to a caller with limits say where it stands: draft (the IETF draft's "
        "RateLimit field), legacy (RateLimit-Limit, -Remaining and -Reset) or refused (a 429 "
        "only).",
        "A 429 always says it, with RateLimit-Policy (legacy: the three fields) and Retry-After.",
        &rate_limit_headers, limit_headers_draft, rate_limit_headers_options, PGC_SIGHUP, 0,
        nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("querygate.statistics",
                             "Counts every call in querygate.stat_queries and GET /metrics.",
                             nullptr, &statistics, true, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("querygate.history", "Records every call in querygate.history.",
                             nullptr, &history, true, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable("querygate.history_sample_rate",
                             "Share of successful calls recorded in querygate.history (0 to 1).",
                             "Calls answered with an error are always recorded.",
                             &history_sample_rate, 1.0, 0.0, 1.0, PGC_SIGHUP, 0, nullptr, nullptr,
                             nullptr);
    DefineCustomEnumVariable(
        "querygate.history_sql",
        "What querygate.history keeps of SQL a caller wrote (POST /sql): off, hash or text.",
        "hash: \"sha256:\" and the hex of the statement's SHA-256, which tells two calls of one "
        "statement apart without keeping the literal values a caller typed into it; text: the "
        "statement, its first kilobyte; off: nothing.",
        &history_sql, history_sql_hash, history_sql_options, PGC_SIGHUP, 0, nullptr, nullptr,
        nullptr);
    DefineCustomIntVariable("querygate.history_retention",
                            "How long querygate.history keeps a record at least; 0 keeps them all.",
                            "The writer drops the partitions (a day each; an hour under a day's "
                            "retention, a minute under an hour's) older than this once a minute.",
                            &history_retention, 7 * 24 * 3600, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.history_flush_interval",
                            "How often the writer saves the recorded calls to querygate.history.",
                            "Sooner when a worker's ring is half full.", &history_flush_interval,
                            1000, 10, 60000, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    // Secrets are never settings: PostgreSQL shows even a superuser-only setting to
    // pg_read_all_settings (so to pg_monitor) and logs a changed value at reload. A setting names
    // the file instead, which only the server's user can read (auth/secret_file.hpp).
    DefineCustomStringVariable(
        "querygate.metrics_token_file",
        "File holding the bearer tokens GET /metrics accepts, one a line (mode 0600).",
        "Relative to the data directory. Empty (the default) answers /metrics 404.",
        &metrics_token_file, "", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.quota_flush_interval",
                            "How often the writer process saves quota counts to "
                            "querygate.quota_usage.",
                            "A clean stop saves them too; a crash loses at most this long's calls.",
                            &quota_flush_interval, 10, 1, 3600, PGC_SIGHUP, GUC_UNIT_S, nullptr,
                            nullptr, nullptr);
    DefineCustomStringVariable(
        "querygate.trusted_proxies",
        "Proxies (comma-separated addresses or CIDRs) whose X-Forwarded-For header is believed.",
        nullptr, &trusted_proxies, "", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable(
        "querygate.cors_allowed_origins",
        "Origins (comma-separated, or *) whose web pages may read querygate's answers (CORS).",
        "Empty: no CORS header is sent and OPTIONS is refused like any other method.",
        &cors_allowed_origins, "", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable(
        "querygate.jwt_secret_file",
        "File holding the keys that verify HS256 bearer tokens, one a line (mode 0600).",
        "Relative to the data directory; each key at least 32 bytes. Empty refuses HS256.",
        &jwt_secret_file, "", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable("querygate.jwt_issuer", "Required iss claim of bearer tokens.",
                               "Empty: iss is not checked.", &jwt_issuer, "", PGC_SIGHUP, 0,
                               nullptr, nullptr, nullptr);
    DefineCustomStringVariable("querygate.jwt_audience", "Required aud claim of bearer tokens.",
                               "Empty: aud is not checked.", &jwt_audience, "", PGC_SIGHUP, 0,
                               nullptr, nullptr, nullptr);
    DefineCustomStringVariable(
        "querygate.jwt_policy_claim", "Bearer-token claim that names the caller's policy.", nullptr,
        &jwt_policy_claim, "policy", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomStringVariable(
        "querygate.jwt_tenant_claim", "Bearer-token claim that names the caller's tenant.", nullptr,
        &jwt_tenant_claim, "tenant", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    // Set by the worker for each call (transaction-local); superuser-only, so neither a policy's
    // role nor any other session can claim another tenant.
    DefineCustomStringVariable("querygate.tenant", "The calling tenant, set for each HTTP call.",
                               "Read it with current_setting('querygate.tenant', true).", &tenant,
                               "", PGC_SUSET, GUC_NOT_IN_SAMPLE, nullptr, nullptr, nullptr);
    // For the tests of querygate's own fault handling: names a fault point (pg::fault_point) that
    // then throws std::bad_alloc, as an allocation there could. Superuser-only and hidden.
    DefineCustomStringVariable("querygate.fault_injection",
                               "Fault point that throws, for querygate's own tests.", nullptr,
                               &fault_injection, "", PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
                               nullptr, nullptr, nullptr);
    MarkGUCPrefixReserved("querygate");
}

} // namespace

bool preloaded = false;

void define(bool preloading)
{
    preloaded = preloading;
    if (preloading)
        define_restart_only();
    define_reloadable();
}

} // namespace settings
