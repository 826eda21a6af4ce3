// querygate.* settings. Each C variable starts at its default, as PostgreSQL's own do.
#include "pg_headers.hpp"
extern "C" {
#include "utils/guc.h"
}

#include "settings.hpp"

#include <climits>

namespace settings {

char *database = nullptr;
char *listen_addresses = nullptr;
int port = 8080;
int workers = 2;
int statement_timeout = 5000;
int max_page_size = 1000;
int max_body_size = 1024 * 1024;

void define()
{
    DefineCustomStringVariable("querygate.database", "Database whose saved queries the HTTP workers serve.",
                               nullptr, &database, "postgres", PGC_POSTMASTER, 0, nullptr, nullptr,
                               nullptr);
    DefineCustomStringVariable(
        "querygate.listen_addresses", "Address the HTTP workers listen on.",
        "One host name or IP address; \"*\" listens on every address.", &listen_addresses,
        "127.0.0.1", PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.port", "TCP port the HTTP workers listen on.", nullptr, &port,
                            8080, 1, 65535, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("querygate.workers", "Number of HTTP worker processes.",
                            "Each worker runs one query at a time.", &workers, 2, 0, 128,
                            PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
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
    MarkGUCPrefixReserved("querygate");
}

} // namespace settings
