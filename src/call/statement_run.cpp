// A saved query's statement run for one call: see statement_run.hpp.
#include "call/statement_run.hpp"

#include "pg/pg_headers.hpp"
extern "C" {
#include "access/xact.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/timeout.h"
}

#include "call/call_hygiene.hpp"
#include "call/citus_settings.hpp"
#include "call/client_watch.hpp"
#include "call/export_file.hpp"
#include "call/history_values.hpp"
#include "call/row_output.hpp"
#include "call/stop_request.hpp"
#include "call/worker_budget.hpp"
#include "common/settings.hpp"
#include "pg/pg_guard.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

FileBody export_file_at(const std::string &path)
{
    FileBody file(export_file::open_for(path), 0);
    if (!file.present())
        throw std::runtime_error(std::string("no file for an export: ") + strerror(errno));
    return file;
}

namespace {

// Hands the parameters a call recorded for the history (history_values.hpp) to its result
// however the call ends: on success, and when its execution fails after they were read.
class CallParamsKept {
  public:
    CallParamsKept(StringInfo params, CallResult &result) : params_(params), result_(result) {}
    ~CallParamsKept()
    {
        try {
            if (params_ != nullptr && params_->len > 0)
                result_.params.assign(params_->data, params_->len);
        } catch (...) {
            // No memory for a copy: the record goes without its parameters.
        }
    }
    CallParamsKept(const CallParamsKept &) = delete;
    CallParamsKept &operator=(const CallParamsKept &) = delete;

  private:
    StringInfo params_;
    CallResult &result_;
};

// What the guarded part of a run reads and writes: plain data, made outside pg::guard
// (pg_guard.hpp), in the request's memory.
struct RunData {
    // The parameters: each one's text (nullptr for NULL) and how it is read, then its value.
    int nparams = 0;
    const char **texts = nullptr;
    int *lengths = nullptr;
    FmgrInfo *input = nullptr;
    Oid *ioparam = nullptr;
    Datum *values = nullptr;
    char *nulls = nullptr;
    StringInfo params = nullptr; // as the history keeps them; nullptr: not kept
    // The statement, and how its answer is written.
    SPIPlanPtr plan = nullptr;
    bool writes = false;
    bool returns_rows = false;
    long page = 1;
    long page_size = 0;
    AnswerFormat format = AnswerFormat::json;
    int *actions = nullptr; // the policy's mask action per output column
    int nactions = 0;
    bool masked = false; // any action but none
    // The policy's own key (or its shared scope's): its hashes compare with no other policy's.
    const char *hash_key = nullptr;
    int hash_key_len = 0;
    MemoryContext request_context = nullptr;
    int export_fd = -1; // an export's file; -1: a page
    uint64 export_limit = 0;
    // What the run made.
    StringInfo body = nullptr;
    bool has_more = false;
    uint64 rows = 0;
    TupleDesc out_desc = nullptr; // the answer's columns, for the history's list of masked ones
    uint64 exported = 0;
};

template <typename T> T *request_array(MemoryContext context, size_t n)
{
    return static_cast<T *>(MemoryContextAllocZero(context, sizeof(T) * Max(n, size_t(1))));
}

RunData run_data(const CachedQuery &query, const PlanEntry &entry, const CachedPolicy &policy,
                 const PolicyDecision &decision, const std::vector<BoundParam> &values,
                 const CallRequest &request, MemoryContext context)
{
    RunData run;
    run.nparams = static_cast<int>(query.param_names.size());
    run.texts = request_array<const char *>(context, run.nparams);
    run.lengths = request_array<int>(context, run.nparams);
    for (int i = 0; i < run.nparams; i++)
        if (!values[i].is_null) {
            run.texts[i] = values[i].value.c_str();
            run.lengths[i] = static_cast<int>(values[i].value.size());
        }
    run.actions = request_array<int>(context, decision.column_actions.size());
    run.nactions = static_cast<int>(decision.column_actions.size());
    for (size_t i = 0; i < decision.column_actions.size(); i++) {
        run.actions[i] = static_cast<int>(decision.column_actions[i]);
        run.masked = run.masked || run.actions[i] != 0;
    }
    run.hash_key = policy.hash_key.data();
    run.hash_key_len = static_cast<int>(policy.hash_key.size());
    run.values = request_array<Datum>(context, run.nparams);
    run.nulls = static_cast<char *>(MemoryContextAllocZero(context, run.nparams + 1));
    run.writes = entry.analysis->write_ops != 0;
    run.returns_rows = entry.analysis->returns_rows;
    run.page = run.writes ? 1 : request.page;
    run.page_size = request.page_size;
    run.format = request.format;
    run.request_context = context;
    run.export_limit = static_cast<uint64>(settings::max_export_size) * 1024 * 1024;
    run.plan = entry.plan;
    run.input = entry.input;
    run.ioparam = entry.ioparam;
    return run;
}

// Each parameter's text read as its type, by its input function. PostgreSQL-style: `failing`
// names the parameter being read when one raises an error.
void read_params(RunData &run, volatile int *failing)
{
    for (int i = 0; i < run.nparams; i++) {
        *failing = i;
        if (run.texts[i] == nullptr) {
            run.nulls[i] = 'n';
            continue;
        }
        run.nulls[i] = ' ';
        // Text that reaches an input function must be valid in the database encoding: the wire
        // protocol would have checked it; here nobody else does.
        if (!pg_verifymbstr(run.texts[i], run.lengths[i], true))
            ereport(ERROR, (errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
                            errmsg("is not valid %s", GetDatabaseEncodingName())));
        run.values[i] =
            InputFunctionCall(&run.input[i], const_cast<char *>(run.texts[i]), run.ioparam[i], -1);
    }
    *failing = -1;
}

// Every row into the export's file, a batch at a time: the worker holds one batch, never the
// answer. PostgreSQL-style.
void export_rows(RunData &run)
{
    Portal cursor = SPI_cursor_open(nullptr, run.plan, run.values, run.nulls, false);
    MemoryContext spi_cxt = MemoryContextSwitchTo(run.request_context);
    run.body = makeStringInfo();
    run.out_desc = CreateTupleDescCopy(cursor->tupDesc);
    MemoryContextSwitchTo(spi_cxt);
    RowWriter *writer = row_writer_create(cursor->tupDesc, run.masked ? run.actions : nullptr,
                                          run.nactions, run.hash_key, run.hash_key_len, run.format);
    row_writer_begin(writer, run.body);
    for (;;) {
        SPI_cursor_fetch(cursor, true, export_file::batch_rows);
        const uint64 n = SPI_processed;
        row_writer_rows(writer, run.body, SPI_tuptable->vals, 0, n, 0);
        run.rows += n;
        SPI_freetuptable(SPI_tuptable);
        if (n == 0)
            break;
        if (run.body->len >= export_file::flush_bytes)
            export_file::append(run.export_fd, run.body, run.exported, run.export_limit);
    }
    row_writer_end(writer, run.body);
    export_file::append(run.export_fd, run.body, run.exported, run.export_limit);
    SPI_cursor_close(cursor);
}

// A page of the answer, or a write's whole run. A write runs whole (a row limit would stop an
// UPDATE halfway) and commits before the answer is sent. A read asks for one row more than the
// page, to know whether another page follows; pages after the first are reached through a
// cursor, so skipped rows are never held in memory. PostgreSQL-style.
void page_rows(RunData &run)
{
    const uint64 want = static_cast<uint64>(run.page_size) + 1;
    Portal portal = nullptr;
    if (run.writes || run.page == 1) {
        int rc = SPI_execute_plan(run.plan, run.values, run.nulls, false,
                                  run.writes ? 0 : static_cast<long>(want));
        if (rc < 0)
            elog(ERROR, "querygate: execution failed: %s", SPI_result_code_string(rc));
    } else {
        portal = SPI_cursor_open(nullptr, run.plan, run.values, run.nulls, false);
        SPI_cursor_move(portal, true, (run.page - 1) * run.page_size);
        SPI_cursor_fetch(portal, true, static_cast<long>(want));
    }
    MemoryContext spi_cxt = MemoryContextSwitchTo(run.request_context);
    run.body = makeStringInfo();
    MemoryContextSwitchTo(spi_cxt);
    if (run.writes && !run.returns_rows) {
        run.rows = SPI_processed;
        append_rows_affected(run.body, run.format, SPI_processed);
    } else if (SPI_tuptable == nullptr) {
        if (run.format == AnswerFormat::json)
            appendStringInfoString(run.body, "[]"); // no columns: the other formats are empty
    } else {
        uint64 n = SPI_processed;
        run.has_more = !run.writes && n > static_cast<uint64>(run.page_size);
        run.rows = run.has_more ? static_cast<uint64>(run.page_size) : n;
        run.out_desc = SPI_tuptable->tupdesc;
        RowWriter *writer =
            row_writer_create(SPI_tuptable->tupdesc, run.masked ? run.actions : nullptr,
                              run.nactions, run.hash_key, run.hash_key_len, run.format);
        row_writer_append_rows(writer, run.body, SPI_tuptable->vals, 0, run.rows,
                               static_cast<Size>(settings::max_response_size));
    }
    if (portal != nullptr)
        SPI_cursor_close(portal);
}

} // namespace

void StatementRun::reset()
{
    progress_.phase = Phase::setup;
    progress_.failing_param = -1;
    progress_.timeout_ms = 0;
}

void StatementRun::begin(const CachedQuery &query, const Caller &caller, Oid role, int client_fd,
                         int call_timeout_ms, bool adhoc)
{
    progress_.timeout_ms = call_timeout_ms;
    session_.use_search_path(query.search_path);
    const char *activity = query.sql.c_str();
    const char *tenant = caller.has_tenant ? caller.tenant.c_str() : nullptr;
    const char *claims = caller.is_jwt ? caller.claims.json.c_str() : nullptr;
    const int timeout = call_timeout_ms;
    Oid *user = &saved_user_;
    int *context = &saved_sec_context_;
    int *nest = &guc_nest_level_;
    MemoryContext *outer = &call_context_;
    TimestampTz *started_at = &progress_.started_at;
    char work_mem[16] = "", temp_files[16] = "";
    if (adhoc && settings::adhoc_work_mem >= 64)
        snprintf(work_mem, sizeof(work_mem), "%d", settings::adhoc_work_mem);
    if (adhoc && settings::adhoc_temp_file_limit >= 0)
        snprintf(temp_files, sizeof(temp_files), "%d", settings::adhoc_temp_file_limit);
    pg::guard([&] {
        pgstat_report_activity(STATE_RUNNING, activity);
        // The caller's own statement: its memory and temporary files bounded by the server's
        // settings for it, transaction-local, and temp_file_limit is superuser-only.
        if (work_mem[0] != '\0')
            (void)set_config_option("work_mem", work_mem, PGC_SUSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        if (temp_files[0] != '\0')
            (void)set_config_option("temp_file_limit", temp_files, PGC_SUSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        // Transaction-local, set while still the worker's superuser: querygate.tenant is
        // superuser-only, so the policy's role cannot change it.
        if (tenant != nullptr)
            (void)set_config_option("querygate.tenant", tenant, PGC_SUSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        if (claims != nullptr)
            (void)set_config_option("request.jwt.claims", claims, PGC_USERSET, PGC_S_SESSION,
                                    GUC_ACTION_LOCAL, true, 0, false);
        // With Citus, its workers must see them too (citus_settings.hpp).
        if ((tenant != nullptr || claims != nullptr) && citus_settings::loaded())
            citus_settings::send_on();
        *nest = call_hygiene_begin();
        GetUserIdAndSecContext(user, context);
        // LOCAL_USERID_CHANGE also forbids SET ROLE inside the call.
        SetUserIdAndSecContext(role, *context | SECURITY_LOCAL_USERID_CHANGE);
        *outer = CurrentMemoryContext;
        if (SPI_connect() != SPI_OK_CONNECT)
            elog(ERROR, "querygate: SPI_connect failed");
        // The start before the timer: the timer then fires no sooner than timeout after it, so
        // a cancel at the time limit is always judged one (taken after, a worker descheduled in
        // between would see the limit fire "early" and answer 500 query_failed).
        *started_at = GetCurrentTimestamp();
        if (timeout > 0)
            enable_timeout_after(STATEMENT_TIMEOUT, timeout);
        client_watch::start(client_fd);
    });
}

void StatementRun::end()
{
    Oid user = saved_user_;
    int context = saved_sec_context_;
    int nest = guc_nest_level_;
    // Not from SPI's procedure context, which is current after the call ran and which SPI_finish
    // deletes: the checks after it may raise an error (a read call that wrote, say).
    MemoryContextSwitchTo(call_context_);
    pg::guard([&] {
        disable_timeout(STATEMENT_TIMEOUT, false);
        worker_budget::stop();
        client_watch::stop();
        stop_request::call_ended();
        SPI_finish();
        call_hygiene_end(nest, XactReadOnly);
        SetUserIdAndSecContext(user, context);
    });
}

void StatementRun::execute(const CachedQuery &query, PlanEntry &entry, const CachedPolicy &policy,
                           const PolicyDecision &decision, const std::vector<BoundParam> &values,
                           const CallRequest &request, bool record_params, CallResult &result)
{
    // Everything the guarded block touches is plain data prepared here, outside it.
    RunData run =
        run_data(query, entry, policy, decision, values, request, session_.request_context);
    // An export writes every row to its file (export_file.hpp), which the answer is sent from: a
    // new one, or in a helper its worker's. It is closed on every way out but the one that hands
    // it on.
    FileBody file = request.stream ? export_file_at(request.export_to) : FileBody();
    run.export_fd = file.fd();
    // The parameters as the history keeps them, once every one is read as its type: kept also
    // when the call then fails.
    if (record_params) {
        MemoryContext old = MemoryContextSwitchTo(session_.request_context);
        run.params = makeStringInfo();
        MemoryContextSwitchTo(old);
    }
    const CallParamsKept kept_params(run.params, result);
    Progress *progress = &progress_;
    pg::guard([&] {
        progress->phase = Phase::binding;
        read_params(run, &progress->failing_param);
        if (run.params != nullptr)
            history_values::append_params(run.params, query.param_names, query.param_types,
                                          decision.param_actions, run.values, run.nulls,
                                          run.hash_key, run.hash_key_len);
        progress->phase = Phase::executing;
        if (run.export_fd >= 0)
            export_rows(run);
        else
            page_rows(run);
    });
    if (run.export_fd >= 0)
        result.file = FileBody(file.release(), run.exported);
    else
        result.body.assign(run.body->data, run.body->len);
    result.has_more = run.has_more;
    result.rows = run.rows;
    if (run.masked && run.out_desc != nullptr && settings::history)
        result.masked = history_values::masked_list(run.out_desc, run.actions, run.nactions);
}
