// The access log's lines in the server log: see access_log_sink.hpp.
#include "worker/access_log_sink.hpp"

#include "pg/pg_guard.hpp"
#include "pg/pg_headers.hpp"

void ServerLogSink::write(const std::string &line) noexcept
{
    try {
        pg::guard([&line] {
            ereport(LOG,
                    (errmsg_internal("%s", line.c_str()), errhidestmt(true), errhidecontext(true)));
        });
    } catch (...) {
        // Out of memory while logging: the line is lost, the answer is not.
    }
}
