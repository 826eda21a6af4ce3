// The database side of the request handler (api/services.hpp) without a database, for the fuzz
// targets that drive the handler without a server: what is fuzzed is the HTTP side in front of
// it, not the calls. An ordinary implementation of the interfaces, as call/query_runner.hpp is
// the server's. See fake_database.cpp.
#pragma once

#include "api/services.hpp"

class FakeDatabase final : public services::Calls,
                           public services::Describer,
                           public services::Schemas,
                           public services::Events,
                           public services::Health,
                           public services::Recorder {
  public:
    CallResult run(const CallRequest &request, bool may_hand_off = false) override;
    ApiError limit_anonymous(const std::string &address, LimitReport &report) override;
    void release(LimitHold &hold) override;
    void release_export(int slot) override;
    void charge_export(const LimitHold &hold, unsigned long long rows) override;
    void helper_ran(const std::string &query, long long revision, long long ran_us) override;
    ApiError describe(const CallRequest &request, api_description::Api &out,
                      LimitReport &limits) override;
    ApiError describe_schema(const CallRequest &request, const std::string *table,
                             schema_description::Schema &out, LimitReport &limits) override;
    bool sql_tool(const CallRequest &request, const std::string &tool) override;
    const run_events::Ring *events() const override;
    ApiError watch_events(const CallRequest &request, bool charge, event_stream::Audience &out,
                          LimitReport &limits) override;
    bool take_stream(const std::string &subject) override;
    void give_stream(const std::string &subject) override;
    ApiError ready(Role *role = nullptr) override;
    ApiError metrics(metrics::Snapshot &snapshot) override;
    bool metrics_token_accepted(const std::string &presented, bool &configured) override;
    void record(const CallRecord &call) noexcept override;
};

namespace fake_database {

// The one every target shares.
FakeDatabase &instance();

// Calls of run() so far, and the last request it was given.
extern int calls;
extern int anonymous; // calls of limit_anonymous()
extern int recorded;  // calls of record(), and the status the last one recorded
extern int last_record_status;
extern int streams; // event streams open (take_stream less give_stream)
extern CallRequest last;
extern const char *metrics_token; // the one token GET /metrics accepts; null: none is set

} // namespace fake_database
