// Tests of src/common/call_codec.cpp: a request and a result survive the trip to a helper
// and back, byte for byte (NULs, empty strings, many parameters, a large body); and no damaged
// message is accepted: every truncation, a wrong kind, trailing bytes, counts larger than the
// message, and bad flag bytes are refused.
#include "common/call_codec.hpp"
#include "tap.hpp"

#include <fcntl.h>
#include <string>

namespace {

using tap::is;
using tap::ok;

CallRequest sample_request()
{
    CallRequest r;
    r.query = "deposit";
    r.secret = std::string("qg_se\0cret", 10);
    r.bearer_token = "";
    r.client_ip = "10.0.0.7";
    for (int i = 0; i < 40; i++)
        r.params.push_back(CallParam{"p" + std::to_string(i), std::string(i, 'x'), i % 3 == 0});
    r.page = 7;
    r.page_size = 250;
    r.format = AnswerFormat::tsv;
    r.timeout_ms = 1500;
    r.request_id = "abc-123";
    r.stream = true;
    r.safe_method = true;
    r.export_to = "/proc/4242/fd/17";
    return r;
}

CallResult sample_result()
{
    CallResult r;
    r.error = api_errors::make(error_code::param_invalid, "invalid value for parameter amount");
    r.error.errors.emplace_back("amount", "not a number");
    r.error.errors.emplace_back("", std::string("\0", 1));
    r.error.allow = "GET, POST";
    r.body = std::string(200000, 'r');
    r.has_more = true;
    r.rows = 123456789012ULL;
    r.revision = 42;
    r.version = 7;
    r.masked = "[\"ssn\",\"email\"]";
    r.params = "{\"id\":7,\"ssn\":\"4b2f\"}";
    r.ran_us = 2345678;
    r.written = 9876543210ULL;
    return r;
}

bool same(const CallRequest &a, const CallRequest &b)
{
    if (a.query != b.query || a.secret != b.secret || a.bearer_token != b.bearer_token ||
        a.client_ip != b.client_ip || a.page != b.page || a.page_size != b.page_size ||
        a.format != b.format || a.timeout_ms != b.timeout_ms || a.request_id != b.request_id ||
        a.stream != b.stream || a.safe_method != b.safe_method || a.export_to != b.export_to ||
        a.params.size() != b.params.size())
        return false;
    for (std::size_t i = 0; i < a.params.size(); i++)
        if (a.params[i].name != b.params[i].name || a.params[i].value != b.params[i].value ||
            a.params[i].is_null != b.params[i].is_null)
            return false;
    return true;
}

bool same(const CallResult &a, const CallResult &b)
{
    return a.error.status == b.error.status && a.error.code == b.error.code &&
           a.error.message == b.error.message && a.error.errors == b.error.errors &&
           a.error.allow == b.error.allow && a.body == b.body && a.has_more == b.has_more &&
           a.for_helper == b.for_helper && a.rows == b.rows && a.revision == b.revision &&
           a.version == b.version && a.masked == b.masked && a.params == b.params &&
           a.ran_us == b.ran_us && a.written == b.written;
}

void round_trips()
{
    std::string bytes;
    const CallRequest request = sample_request();
    call_codec::encode(request, bytes);
    CallRequest back;
    ok(call_codec::decode(bytes.data(), bytes.size(), back) && same(request, back),
       "a request comes back whole (NUL in the key, null and empty parameters, an export's path)");

    const CallResult result = sample_result();
    call_codec::encode(result, bytes);
    CallResult rback;
    ok(call_codec::decode(bytes.data(), bytes.size(), rback) && same(result, rback),
       "a result comes back whole (an error with problems, a 200 kB body, an export's size)");

    // A helper's export: the file stays with it, its size goes back.
    CallResult exported;
    exported.file = FileBody(open("/dev/null", O_RDONLY | O_CLOEXEC), 1234567);
    call_codec::encode(exported, bytes);
    CallResult xback;
    ok(exported.file.present() && call_codec::decode(bytes.data(), bytes.size(), xback) &&
           !xback.file.present() && xback.written == 1234567,
       "an export's file stays where it is written; its size is what comes back");

    CallRequest empty;
    call_codec::encode(empty, bytes);
    CallRequest eback;
    eback.query = "left over";
    ok(call_codec::decode(bytes.data(), bytes.size(), eback) && same(empty, eback),
       "an empty request comes back empty");
}

template <typename T> void refuses_damage(const std::string &bytes, const char *kind)
{
    int accepted = 0;
    for (std::size_t n = 0; n < bytes.size(); n++) {
        T out;
        if (call_codec::decode(bytes.data(), n, out))
            accepted++;
    }
    is(accepted, 0, std::string("no truncation of a ") + kind + " is accepted");
    T out;
    const std::string longer = bytes + "x";
    ok(!call_codec::decode(longer.data(), longer.size(), out),
       std::string("a ") + kind + " with a byte after it is refused");
}

void damage()
{
    std::string request, result;
    call_codec::encode(sample_request(), request);
    CallResult small = sample_result();
    small.body = "[]";
    call_codec::encode(small, result);
    refuses_damage<CallRequest>(request, "request");
    refuses_damage<CallResult>(result, "result");

    CallResult as_result;
    CallRequest as_request;
    ok(!call_codec::decode(request.data(), request.size(), as_result),
       "a request is not read as a result");
    ok(!call_codec::decode(result.data(), result.size(), as_request),
       "a result is not read as a request");

    // The format sits before the timeout, the request id, the stream and method flags and the
    // export's path (the strings here empty: their lengths alone): one past the last.
    std::string formatted;
    call_codec::encode(CallRequest(), formatted);
    const std::size_t format_at = formatted.size() - 4 - 1 - 1 - 4 - 8 - 8;
    formatted[format_at] = static_cast<char>(std::size(answer_format::all));
    CallRequest unformatted;
    ok(!call_codec::decode(formatted.data(), formatted.size(), unformatted),
       "a format that does not exist is refused");
    formatted[format_at] = static_cast<char>(AnswerFormat::csv);
    ok(call_codec::decode(formatted.data(), formatted.size(), unformatted) &&
           unformatted.format == AnswerFormat::csv,
       "and one that does is read");

    // The parameter count sits after the tag and four empty-or-short strings: make it huge.
    CallRequest one;
    one.params.push_back(CallParam{"a", "b", false});
    std::string bytes;
    call_codec::encode(one, bytes);
    const std::size_t count_at = 1 + 4 * 4; // tag, four empty strings
    std::string huge = bytes;
    for (std::size_t i = 0; i < 8; i++)
        huge[count_at + i] = '\x7f';
    CallRequest out;
    ok(!call_codec::decode(huge.data(), huge.size(), out),
       "a parameter count beyond the message is refused before any allocation");
    std::string negative = bytes;
    negative[count_at + 7] = '\x80';
    ok(!call_codec::decode(negative.data(), negative.size(), out),
       "a negative parameter count is refused");
    // The flag after the one parameter's name and value.
    std::string bad_flag = bytes;
    bad_flag[count_at + 8 + 4 + 1 + 4 + 1] = '\x02';
    ok(!call_codec::decode(bad_flag.data(), bad_flag.size(), out),
       "a flag byte other than 0 or 1 is refused");
}

} // namespace

int main()
{
    round_trips();
    damage();
    return tap::done();
}
