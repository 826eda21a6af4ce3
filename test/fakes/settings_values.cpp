// The settings the HTTP side reads, which the server defines as PostgreSQL settings
// (src/pg/settings.cpp), here plain variables at their defaults, for the unit tests and fuzz
// targets that drive the request handler without a server; they set them as they need.
#include "common/settings.hpp"

namespace settings {

int max_page_size = 1000;
int max_body_size = 1024 * 1024;
char *trusted_proxies = nullptr;
char *cors_allowed_origins = nullptr;
int log_requests = log_off;
int log_requests_format = log_text;
int rate_limit_headers = limit_headers_draft;
char *metrics_token_file = nullptr;
bool history = false;
int history_sql = history_sql_hash;
int event_buffer = 0;
int max_event_streams = 500;
int max_event_streams_per_key = 2;
int event_keepalive = 15;
int export_min_rate = 64;
int export_rate_window = 30;
unsigned long generation = 0;

} // namespace settings
