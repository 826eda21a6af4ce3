// The path every call takes on the HTTP side: see call_path.hpp.
#include "api/call_path.hpp"

#include "api/call_arguments.hpp"
#include "common/settings.hpp"
#include "http/answer_encoding.hpp"
#include "http/credentials.hpp"
#include "http/error_body.hpp"
#include "api/limit_headers.hpp"

#include <algorithm>
#include <utility>

CallPath::CallPath(services::Calls &calls, services::HandOff *hand_off)
    : calls_(calls), hand_off_(hand_off)
{
}

std::string CallPath::client_ip(const HttpRequest &request)
{
    if (trusted_generation_ != settings::generation) {
        std::string bad; // entries that do not parse are ignored (they trust nobody)
        trusted_ = client_address::parse_list(
            settings::trusted_proxies ? settings::trusted_proxies : "", bad);
        trusted_generation_ = settings::generation;
    }
    // All lines, not the first: the client writes the first, a trusted proxy may append another.
    std::string forwarded_for;
    bool forwarded = request.header_list("x-forwarded-for", forwarded_for);
    return client_address::resolve(request.client_address, forwarded ? &forwarded_for : nullptr,
                                   trusted_);
}

CallRequest CallPath::start_call(Exchange &ex, const std::string &name)
{
    const HttpRequest &request = ex.request;
    CallRequest call;
    call.query = name;
    credentials::presented(request, call);
    call.client_ip = client_ip(request);
    call.client_fd = request.socket_fd;
    call.request_id = ex.id;
    call.page_size = std::min<long>(settings::default_page_size, settings::max_page_size);
    // Prefer: timeout=N; ?timeout= or the body's "timeout" win over it.
    call.timeout_ms = call_arguments::prefer_timeout(request);
    if (ex.traced) {
        ex.trace.query = name;
        ex.trace.client = call.client_ip;
    }
    return call;
}

bool CallPath::refused_without_credentials(Exchange &ex, const CallRequest &call)
{
    if (!call.secret.empty() || !call.bearer_token.empty())
        return false;
    ex.trace.refusal = "no key or token was sent";
    LimitReport report;
    ApiError limited = calls_.limit_anonymous(call.client_ip, report);
    write_error(ex.response, limited.set() ? limited : api_errors::unauthorized(), ex.id);
    limit_headers::add(ex.response, report);
    return true;
}

CallPath::Shape CallPath::shape_of(const HttpRequest &request, const CallRequest &call)
{
    Shape shape{call.page, call.page_size, call.format};
    shape.name = call.query;
    std::string accept_encoding;
    shape.gzip = answer_encoding::accepts_gzip(
        request.header_list("accept-encoding", accept_encoding) ? &accept_encoding : nullptr);
    // Only a GET is conditional: a POST is a call that may write, and its answer is known only
    // once it ran, too late for a precondition to keep it from running.
    shape.conditional =
        request.method == "GET" && request.header_list("if-none-match", shape.if_none_match);
    return shape;
}

CallResult CallPath::run(Exchange &ex, CallRequest &call, const std::string &rpc_id,
                         const std::string &tool)
{
    CallResult result = calls_.run(call, hand_off_ != nullptr);
    ex.trace.key = std::move(result.key_name); // set by the runner while the log or history is on
    ex.trace.policy = std::move(result.policy);
    if (result.for_helper) {
        Later waiting = later_for(ex, call, result);
        waiting.rpc_id = rpc_id;
        waiting.tool = tool;
        if (elsewhere(std::move(waiting), call, result, ex.response))
            return result;
    }
    note_result(ex.trace, result);
    return result;
}

CallPath::Later CallPath::later_for(Exchange &ex, const CallRequest &call, CallResult &result)
{
    const std::string *origin = ex.request.header("origin");
    Later later{++last_token_,
                shape_of(ex.request, call),
                ex.id,
                origin ? *origin : std::string(),
                ex.trace,
                result.limits,
                std::move(result.limit_hold)};
    later.file = std::move(result.file);
    later.export_slot = std::exchange(result.export_slot, -1);
    return later;
}

bool CallPath::elsewhere(Later waiting, CallRequest &call, CallResult &result,
                         HttpResponse &response)
{
    // Nothing may throw once the helper has the call: the room and the record come first. The
    // call keeps its place in its caller's in-flight count until its answer.
    // An export's rows go into the file this worker holds and sends.
    call.export_to = waiting.file.path_for_others();
    bool handed = false;
    try {
        later_.reserve(later_.size() + 1);
        call.limits_charged = true;
        handed = hand_off_->hand_off(waiting.token, call, result.share);
    } catch (...) {
        calls_.release(waiting.limit_hold); // not anyone's: it leaves the count
        calls_.release_export(waiting.export_slot);
        throw;
    }
    if (handed) {
        response.later = waiting.token;
        later_.push_back(std::move(waiting));
        return true;
    }
    // No helper free: this worker runs it, as a call of its own (an export takes its own file
    // and place).
    calls_.release_export(waiting.export_slot);
    waiting.file.reset();
    call.export_to.clear();
    result = calls_.run(call);
    calls_.release(waiting.limit_hold);
    result.limits = waiting.limits;
    return false;
}

std::optional<CallPath::Later> CallPath::take(std::uint64_t token, CallResult &result)
{
    const auto it = std::find_if(later_.begin(), later_.end(),
                                 [token](const Later &l) { return l.token == token; });
    if (it == later_.end())
        return std::nullopt;
    Later later = std::move(*it);
    later_.erase(it);
    if (later.file.present() && !result.error.set()) {
        // An export the helper wrote: sent from this worker's file, charged by its length.
        result.file = FileBody(later.file.release(), result.written);
        calls_.charge_export(later.limit_hold, result.rows);
    }
    calls_.release(later.limit_hold);
    // A call that failed there says nothing of how long its query takes; SQL a caller wrote
    // (no name) is judged slow or not by each worker alone.
    if (!result.error.set() && !later.shape.name.empty())
        calls_.helper_ran(later.shape.name, result.revision, result.ran_us);
    result.limits = later.limits;
    note_result(later.trace, result);
    return later;
}

void CallPath::note_result(Trace &trace, CallResult &result)
{
    trace.revision = result.revision;
    trace.version = result.version;
    trace.rows = result.error.set() ? 0 : result.rows;
    trace.masked = std::move(result.masked);
    trace.params = std::move(result.params);
    trace.who = result.who;
    trace.refusal = std::move(result.refusal);
}
