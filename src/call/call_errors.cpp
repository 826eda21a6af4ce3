// What a failed call answers: see call_errors.hpp.
#include "call/call_errors.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "utils/timestamp.h"
}

#include "call/client_watch.hpp"
#include "call/row_output.hpp"
#include "call/stop_request.hpp"
#include "common/settings.hpp"

#include <string>

namespace {

// The problem is the caller's own value, so its description goes back to the caller.
ApiError param_error(const pg::PgError &e, const std::string &param)
{
    ApiError err = api_errors::make(error_code::param_invalid, "invalid parameter value");
    std::string problem = e.message.size() > 200 ? e.message.substr(0, 200) + "..." : e.message;
    err.errors.emplace_back(param, problem);
    err.message = "invalid value for parameter " + param;
    return err;
}

// What the database's message means, once logged.
ApiError database_error(const pg::PgError &e)
{
    if (e.sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
        return api_errors::make(error_code::read_only, "this call may not write to the database");
    // ExecWithCheckOptions' message for a row-level security policy's WITH CHECK (its only mark:
    // the same SQLSTATE as a missing privilege). Under a server whose lc_messages translates it,
    // the call is the privilege's 403.
    if (e.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE &&
        e.message.rfind("new row violates row-level security policy", 0) == 0)
        return api_errors::make(error_code::row_not_allowed,
                                "the row is outside what this caller may write: a row-level "
                                "security policy refused it (its tenant, say)");
    if (e.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
        return api_errors::make(error_code::permission_denied,
                                "the policy's role lacks a privilege this query needs");
    return api_errors::make(error_code::query_failed, "the query failed");
}

} // namespace

std::string logged_name(const CallRequest &request)
{
    return request.sql.empty() ? "\"" + request.query + "\"" : "SQL a caller wrote";
}

ApiError call_error(const pg::PgError &e, const CallRequest &request, const CachedQuery *query,
                    const StatementRun::Progress &progress)
{
    const int failing_param = progress.failing_param;
    if (progress.phase == StatementRun::Phase::binding && query != nullptr && failing_param >= 0 &&
        failing_param < static_cast<int>(query->param_names.size()))
        return param_error(e, query->param_names[failing_param]);
    if (e.sqlerrcode == response_too_large_sqlstate && request.stream)
        return api_errors::make(error_code::response_too_large,
                                "the export is larger than this server writes (" +
                                    std::to_string(settings::max_export_size) +
                                    " MB): ask for fewer rows");
    if (e.sqlerrcode == response_too_large_sqlstate)
        return api_errors::make(error_code::response_too_large,
                                "the answer is larger than this server sends (" +
                                    std::to_string(settings::max_response_size) +
                                    " bytes): ask for a smaller page");
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && stop_request::requested())
        return api_errors::make(error_code::shutting_down,
                                "the server is stopping: the call was cancelled and nothing it "
                                "did was kept");
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && client_watch::gone())
        return api_errors::make(error_code::client_closed,
                                "the caller closed the connection while the query ran");
    if (e.sqlerrcode == ERRCODE_QUERY_CANCELED && progress.timeout_ms > 0 &&
        TimestampDifferenceExceeds(progress.started_at, GetCurrentTimestamp(),
                                   progress.timeout_ms - 1))
        return api_errors::make(error_code::query_timeout,
                                "the query ran longer than its time limit (" +
                                    std::to_string(progress.timeout_ms) + " ms)");
    {
        // The database's own message goes to the server log only: it may name tables, columns
        // or values the caller may not see. The call's cancel may be pending (its budget spent
        // as it failed): held, for the transaction's abort to clear.
        const pg::HeldInterrupts held;
        ereport(
            LOG,
            (errmsg("querygate: call of %s failed (request %s): %s", logged_name(request).c_str(),
                    request.request_id.c_str(), e.message.c_str()),
             e.detail.empty() ? 0 : errdetail_internal("%s", e.detail.c_str()), errhidestmt(true)));
    }
    return database_error(e);
}

namespace {

// " (at character N)", when the position is known.
std::string at_position(int position)
{
    return position > 0 ? " (at character " + std::to_string(position) + ")" : std::string();
}

ApiError refused_name(int position)
{
    return api_errors::make(error_code::name_not_allowed,
                            "the statement names a relation, system column, schema, role, type "
                            "or function that does not exist or that this caller's policy may "
                            "not use" +
                                at_position(position));
}

} // namespace

ApiError adhoc_error(const pg::PgError &e, std::size_t nparams)
{
    const int position = nparams == 0 ? e.cursorpos : 0;
    if (adhoc_hides_error(e.sqlerrcode))
        return refused_name(position);
    std::string message = e.message + at_position(position);
    if (!e.hint.empty())
        message += ". " + e.hint;
    return api_errors::make(error_code::invalid_sql, std::move(message));
}

ApiError adhoc_refusal(const AdhocStatement &statement)
{
    switch (statement.refusal) {
    case ADHOC_ALLOWED:
        break;
    case ADHOC_NOT_ONE_STATEMENT:
        return api_errors::make(error_code::invalid_sql,
                                "POST /sql takes one SELECT, VALUES, INSERT, UPDATE, DELETE or "
                                "MERGE statement");
    case ADHOC_REFUSED_NAME:
        return refused_name(statement.position);
    case ADHOC_REFUSED_FUNCTION:
        return api_errors::make(error_code::function_not_allowed,
                                "the statement calls " + statement.function +
                                    ", which SQL a caller sends may not call: it can read the "
                                    "catalogs or the server's settings" +
                                    at_position(statement.position));
    }
    return ApiError();
}
