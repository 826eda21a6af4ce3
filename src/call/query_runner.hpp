// Runs one call of a saved query: authenticate, authorize, bind, execute, serialize, in one
// transaction; and the rest of what the HTTP side asks of the database (http/services.hpp), which
// this class implements. The interface is plain C++; the implementation (query_runner.cpp) is the
// PostgreSQL side.
#pragma once

#include "common/api_description.hpp"
#include "common/call.hpp"
#include "common/history.hpp"
#include "common/metrics.hpp"
#include "api/services.hpp"

#include <cstdint>
#include <memory>
#include <string>

class GroupCommit; // worker/group_commit.hpp: the worker's, which it holds answers with
namespace event_stream {
struct Audience; // http/event_stream.hpp
}
namespace run_events {
struct Ring; // common/run_events.hpp
}

class QueryRunner final : public services::Calls,
                          public services::Describer,
                          public services::Schemas,
                          public services::Events,
                          public services::Health,
                          public services::Recorder {
  public:
    explicit QueryRunner(GroupCommit &group_commit);
    ~QueryRunner() override;
    QueryRunner(const QueryRunner &) = delete;
    QueryRunner &operator=(const QueryRunner &) = delete;

    // Once, after the worker has connected to its database.
    void start();
    // Never with querygate.group_commit on for a write, whose writes wait for no flush in the
    // worker anyway; a read is handed on when its query is known to be slow, or stopped and
    // handed on when it runs past querygate.slow_call_threshold here (call/worker_budget.hpp).
    CallResult run(const CallRequest &request, bool may_hand_off = false) override;
    using Role = services::Health::Role;
    ApiError ready(Role *role = nullptr) override;
    ApiError describe(const CallRequest &request, api_description::Api &out,
                      LimitReport &limits) override;
    ApiError describe_schema(const CallRequest &request, const std::string *table,
                             schema_description::Schema &out, LimitReport &limits) override;
    bool sql_tool(const CallRequest &request, const std::string &tool) override;
    ApiError watch_events(const CallRequest &request, bool charge, event_stream::Audience &out,
                          LimitReport &limits) override;
    // The catalog's count of changes, keys' included, after taking its committed changes (a short
    // transaction); 0 when no transaction could start. A change means open streams must be
    // checked again (worker/event_pump.hpp).
    std::uint64_t catalog_generation();
    const run_events::Ring *events() const override;
    bool take_stream(const std::string &subject) override;
    void give_stream(const std::string &subject) override;
    ApiError metrics(metrics::Snapshot &snapshot) override;
    // The tokens are read again at each reload; a file that cannot be read is said once in the log.
    bool metrics_token_accepted(const std::string &presented, bool &configured) override;
    void record(const CallRecord &call) noexcept override;
    void helper_ran(const std::string &query, long long revision, long long ran_us) override;
    void release(LimitHold &hold) override;
    void release_export(int slot) override;
    void charge_export(const LimitHold &hold, unsigned long long rows) override;
    ApiError limit_anonymous(const std::string &address, LimitReport &report) override;

    struct State; // query_runner.cpp

  private:
    std::unique_ptr<State> state_;
};
