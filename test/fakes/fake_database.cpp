// The database side without a database: records the request and returns a fixed CallResult, a page
// of one row, or, for the query named "invalid", the error bind_params would give for parameters it
// does not know (names are the caller's bytes, as in a real error body).
#include "fakes/fake_database.hpp"

#include "auth/secrets.hpp"
#include "common/run_events.hpp"
#include "common/settings.hpp"
#include "http/event_stream.hpp"
#include "rules/write_ops.hpp"

#include <memory>
#include <vector>

ApiError FakeDatabase::ready(Role *)
{
    return ApiError();
}

// The token of fake_database::metrics_token, compared as the server does.
bool FakeDatabase::metrics_token_accepted(const std::string &presented, bool &configured)
{
    configured = fake_database::metrics_token != nullptr;
    return configured && secrets::same_secret(presented, fake_database::metrics_token);
}

// A fixed snapshot, with a query name that needs every escape of a label value.
ApiError FakeDatabase::metrics(metrics::Snapshot &snapshot)
{
    metrics::QueryStats q;
    q.query = "odd\"name\\with\nescapes";
    q.policy = "p";
    q.calls = 3;
    q.by_code[0] = 2;
    q.by_code[metrics::code_slot("param_invalid")] = 1;
    q.buckets[0] = 1;
    q.buckets[metrics::duration_buckets - 1] = 2;
    q.total_seconds = 20.5;
    snapshot.queries.push_back(q);
    metrics::WorkerStats w;
    w.worker = 1;
    w.requests = 10;
    snapshot.workers.push_back(w);
    return ApiError();
}

void FakeDatabase::record(const CallRecord &call) noexcept
{
    fake_database::recorded++;
    fake_database::last_record_status = call.status;
}

void FakeDatabase::release(LimitHold &hold)
{
    hold = LimitHold();
}

void FakeDatabase::release_export(int) {} // the fake answers no export
void FakeDatabase::charge_export(const LimitHold &, unsigned long long) {}

void FakeDatabase::helper_ran(const std::string &, long long, long long) {} // nor hands any off

// One query with a parameter and a masked column: enough for the documents to be made. The key
// "adhoc" may send SQL of its own, and may write with it.
ApiError FakeDatabase::describe(const CallRequest &request, api_description::Api &out,
                                LimitReport &)
{
    out.adhoc = request.secret == "adhoc";
    out.adhoc_write_ops = out.adhoc ? WRITE_UPDATE : 0;
    api_description::Query q;
    q.name = "fixed";
    api_description::Param p;
    p.name = "id";
    p.type.kind = api_description::Kind::integer;
    q.params.push_back(p);
    api_description::Column c;
    c.name = "name";
    c.action = masking::Action::hash;
    q.columns.push_back(c);
    out.queries.push_back(q);
    return ApiError();
}

// A key "adhoc" takes SQL of its own: one table, public.accounts (aid, the key; owner, masked),
// which ?table= finds as accounts or public.accounts; any other key is refused sql_not_allowed.
ApiError FakeDatabase::describe_schema(const CallRequest &request, const std::string *table,
                                       schema_description::Schema &out, LimitReport &)
{
    if (request.secret != "adhoc")
        return api_errors::make(error_code::sql_not_allowed, "no SQL of its own");
    std::string schema, name;
    if (table != nullptr && (!schema_description::parse_name(*table, schema, name) ||
                             name != "accounts" || (!schema.empty() && schema != "public")))
        return api_errors::make(error_code::name_not_allowed, "not allowed, or not there");
    out.search_path = "pg_catalog, public";
    schema_description::Table t;
    t.schema = "public";
    t.name = "accounts";
    t.quoted = "public.accounts";
    schema_description::Column aid;
    aid.name = aid.quoted = "aid";
    aid.type = "integer";
    aid.nullable = false;
    schema_description::Column owner;
    owner.name = owner.quoted = "owner";
    owner.type = "text";
    owner.mask = masking::Action::mask;
    owner.filterable = false;
    t.columns = {aid, owner};
    t.primary_key = {"aid"};
    out.tables.push_back(t);
    return ApiError();
}

// The key "adhoc" has the SQL tools.
bool FakeDatabase::sql_tool(const CallRequest &request, const std::string &)
{
    return request.secret == "adhoc";
}

// Every third call without credentials is over the address's limit.
ApiError FakeDatabase::limit_anonymous(const std::string &, LimitReport &report)
{
    if (++fake_database::anonymous % 3 != 0)
        return ApiError();
    report.present = true;
    report.limit = 10;
    report.reset_seconds = 1;
    report.retry_after_seconds = 1;
    return api_errors::make(error_code::rate_limited, "too many calls: slow down");
}

// GET /events: a key "no-events" is not granted events; any other may watch the query "fixed".
ApiError FakeDatabase::watch_events(const CallRequest &request, bool, event_stream::Audience &out,
                                    LimitReport &)
{
    if (request.secret == "no-events")
        return api_errors::make(error_code::events_not_granted, "not granted");
    out.subject = "key:1";
    out.key = "k";
    out.policy = "p";
    out.queries =
        std::make_shared<const event_stream::QuerySet>(std::initializer_list<std::string>{"fixed"});
    return ApiError();
}

// A ring of eight events with three in it, while querygate.event_buffer is set.
const run_events::Ring *FakeDatabase::events() const
{
    static std::vector<unsigned char> memory(run_events::size_of(8));
    static run_events::Ring *ring = [] {
        run_events::Ring *r = run_events::init(memory.data(), 8);
        run_events::Event e;
        e.status = 200;
        for (const char *q : {"fixed", "other", "fixed"}) {
            std::snprintf(e.query, sizeof(e.query), "%s", q);
            run_events::put(*r, e);
        }
        return r;
    }();
    return settings::event_buffer > 0 ? ring : nullptr;
}

// Two streams of a key at most.
bool FakeDatabase::take_stream(const std::string &)
{
    if (fake_database::streams >= 2)
        return false;
    fake_database::streams++;
    return true;
}

void FakeDatabase::give_stream(const std::string &)
{
    fake_database::streams--;
}

CallResult FakeDatabase::run(const CallRequest &request, bool)
{
    fake_database::calls++;
    fake_database::last = request;
    CallResult result;
    if (request.query == "limited") {
        result.limits.present = true;
        result.limits.limit = 5;
        result.limits.reset_seconds = 60;
        result.limits.retry_after_seconds = 60;
        result.error = api_errors::make(error_code::quota_exceeded, "the quota is used up");
        return result;
    }
    if (request.query == "invalid") {
        result.error = api_errors::make(error_code::param_invalid, "invalid parameters");
        for (const CallParam &p : request.params)
            result.error.errors.emplace_back(p.name, "is not a parameter of this query");
        return result;
    }
    result.body = "[{\"id\":1,\"name\":\"fixed\"}]";
    result.has_more = request.page == 1;
    return result;
}

namespace fake_database {

int calls = 0;
int anonymous = 0;
int recorded = 0;
int last_record_status = 0;
int streams = 0;
CallRequest last;
const char *metrics_token = nullptr;

FakeDatabase &instance()
{
    static FakeDatabase database;
    return database;
}

} // namespace fake_database
