// POST /sql: see sql_endpoint.hpp.
#include "api/sql_endpoint.hpp"

#include "api/call_arguments.hpp"
#include "auth/secrets.hpp"
#include "common/settings.hpp"
#include "http/error_body.hpp"

std::string sql_as_history_keeps(const std::string &sql)
{
    switch (settings::history_sql) {
    case settings::history_sql_text:
        return sql;
    case settings::history_sql_hash: {
        unsigned char digest[secrets::sha256_length];
        char hex[2 * secrets::sha256_length + 1];
        secrets::sha256(sql.data(), sql.size(), digest);
        secrets::to_hex(digest, sizeof(digest), hex);
        return std::string("sha256:") + hex;
    }
    default:
        return std::string();
    }
}

void note_sql_call(Exchange &ex, const std::string &sql)
{
    if (!ex.traced)
        return;
    ex.trace.adhoc = true;
    if (settings::history)
        ex.trace.sql = sql_as_history_keeps(sql);
}

void SqlEndpoint::handle(Exchange &ex)
{
    const HttpRequest &request = ex.request;
    if (request.method != "POST") {
        // A statement can write, and its text is long: never a GET.
        ApiError e = api_errors::make(error_code::method_not_allowed,
                                      "use POST on /sql, with the statement in a JSON body");
        e.allow = "POST";
        write_error(ex.response, e, ex.id);
        return;
    }
    CallRequest call = path_.start_call(ex, std::string());
    ex.trace.adhoc = ex.traced; // recorded as a call of SQL, whatever answers it
    if (path_.refused_without_credentials(ex, call))
        return;
    ApiError error = call_arguments::from_request(request, call, true);
    if (!error.set() && call.sql.find_first_not_of(" \t\r\n") == std::string::npos)
        error = api_errors::make(error_code::invalid_body,
                                 "the body's \"sql\" holds the statement, and it is missing or "
                                 "empty");
    if (error.set()) {
        write_error(ex.response, error, ex.id);
        return;
    }
    note_sql_call(ex, call.sql);
    CallResult result = path_.run(ex, call);
    if (ex.response.later != 0)
        return; // answered when the helper's result is back
    answers_.answer(result, CallPath::shape_of(request, call), ex.response, ex.id,
                    result.export_slot);
}
