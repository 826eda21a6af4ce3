// What the HTTP side asks of the database side, as small interfaces the HTTP side owns: one per
// family of endpoints. The PostgreSQL side implements them (call/query_runner.hpp); the fuzz
// targets implement them without a database (test/fuzz/fake_database.hpp). So nothing in http/
// depends on how a call runs, and the handler is tested like the rest of the plain code.
// Plain C++.
#pragma once

#include "common/api_description.hpp"
#include "common/call.hpp"
#include "common/history.hpp"
#include "common/metrics.hpp"
#include "common/schema_description.hpp"

#include <cstdint>
#include <string>

namespace event_stream {
struct Audience; // http/event_stream.hpp
}
namespace run_events {
struct Ring; // common/run_events.hpp
}

namespace services {

// GET|POST /q/{name} and MCP's tools/call: a call, and what its resources need afterwards.
class Calls {
  public:
    virtual ~Calls() = default;
    // With may_hand_off, a granted write, or a read known to be slow (or that ran past its
    // budget), is not finished here: the result says so (for_helper) after the checks every call
    // passes, and a helper runs the whole call again (worker/call_helpers.hpp).
    virtual CallResult run(const CallRequest &request, bool may_hand_off = false) = 0;
    // A call with no credentials at all from `address`: a 429 error when over
    // querygate.anonymous_rate_limit, else none.
    virtual ApiError limit_anonymous(const std::string &address, LimitReport &report) = 0;
    // A call handed to a helper has ended: it leaves its caller's in-flight count.
    virtual void release(LimitHold &hold) = 0;
    // An export's file was sent, or its connection is gone: its place among querygate.max_exports
    // goes back (CallResult::export_slot; -1: none).
    virtual void release_export(int slot) = 0;
    // An export a helper wrote `rows` into, charged by its length under its call's hold before
    // the hold is released. Never throws.
    virtual void charge_export(const LimitHold &hold, unsigned long long rows) = 0;
    // A call of `query` handed to a helper was answered, after running `ran_us` there: whether
    // the query is still slow.
    virtual void helper_ran(const std::string &query, long long revision, long long ran_us) = 0;
};

// GET /openapi.json, GET /catalog and MCP's tools/list: what the request's key or token may call,
// after the same authentication and limits a call has; the caller's limits in `limits`.
class Describer {
  public:
    virtual ~Describer() = default;
    virtual ApiError describe(const CallRequest &request, api_description::Api &out,
                              LimitReport &limits) = 0;
};

// GET /schema and MCP's SQL tools: what the request's caller may use in SQL of its own.
class Schemas {
  public:
    virtual ~Schemas() = default;
    // The caller's schema (common/schema_description.hpp), after the same authentication and
    // limits as a call; the caller's limits in `limits`. 403 sql_not_allowed when its policy takes
    // no SQL of its own. With a `table` (schema_description::parse_name's form), that table alone:
    // 403 name_not_allowed, one answer for both, when it names no table of the allow-list or
    // nothing at all.
    virtual ApiError describe_schema(const CallRequest &request, const std::string *table,
                                     schema_description::Schema &out, LimitReport &limits) = 0;
    // MCP's tools/call of `tool`, one of the names of its SQL tools (http/sql_tools.hpp): whether
    // the caller's policy takes SQL of its own and grants no saved query of that name, which would
    // keep the name. The caller is authenticated and nothing is charged (the call that follows
    // is); false for a caller that is refused, whom that call then answers.
    virtual bool sql_tool(const CallRequest &request, const std::string &tool) = 0;
};

// GET /events.
class Events {
  public:
    virtual ~Events() = default;
    // The run events' shared ring, or null when events are off.
    virtual const run_events::Ring *events() const = 0;
    // Whether the request's key or token may watch run events (403 events_not_granted when its
    // policy is not granted them), and what it may see, in `out`. With `charge`, the same
    // authentication and limits as a call (a stream opening); without, a stream already open is
    // checked again against the catalog as it is now.
    virtual ApiError watch_events(const CallRequest &request, bool charge,
                                  event_stream::Audience &out, LimitReport &limits) = 0;
    // A stream of `subject` opens or closes: its place among
    // querygate.max_event_streams_per_key, counted across workers; false when there is none.
    virtual bool take_stream(const std::string &subject) = 0;
    virtual void give_stream(const std::string &subject) = 0;
};

// GET /ready and GET /metrics.
class Health {
  public:
    virtual ~Health() = default;
    // What the server is: a primary, or a hot standby and how far its replay is behind.
    struct Role {
        bool standby = false;
        // A standby's: WAL received and not yet replayed, in bytes, and how long ago the last
        // transaction it replayed committed on the primary, in seconds (-1: none yet).
        long long replay_lag_bytes = 0;
        double replayed_ago_s = -1;
    };
    // Whether a call could be served now: a transaction starts and the catalog is loaded (the
    // extension installed). An error (503 unavailable) when not.
    virtual ApiError ready(Role *role = nullptr) = 0;
    // Every worker's statistics. An error (503 unavailable) when they cannot be read.
    virtual ApiError metrics(metrics::Snapshot &snapshot) = 0;
    // Whether `presented` is one of the tokens of querygate.metrics_token_file (compared in
    // constant time). `configured` says whether there is any: with none, /metrics does not exist.
    virtual bool metrics_token_accepted(const std::string &presented, bool &configured) = 0;
};

// A call answered, for the run history and the run events: never waits, never throws.
class Recorder {
  public:
    virtual ~Recorder() = default;
    virtual void record(const CallRecord &call) noexcept = 0;
};

// Where a call the database side did not run goes (worker/call_helpers.hpp), within its caller's
// and policy's `share`: false when no helper can take it now, and the worker runs it itself.
class HandOff {
  public:
    virtual ~HandOff() = default;
    virtual bool hand_off(std::uint64_t token, const CallRequest &call, const PoolShare &share) = 0;
};

// The database side, as the request handler holds it.
struct Database {
    Calls &calls;
    Describer &describer;
    Schemas &schemas;
    Events &events;
    Health &health;
    Recorder &recorder;
};

} // namespace services
