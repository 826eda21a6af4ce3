#include "common/call_codec.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

static_assert(std::is_same_v<long, std::int64_t>, "CallRequest's longs travel as 64 bits");

namespace call_codec {

namespace {

// One byte that says which kind of message follows, so that a request is never read as a result.
constexpr char request_tag = 'Q';
constexpr char result_tag = 'R';

class Writer {
  public:
    explicit Writer(std::string &out) : out_(out) {}
    void flag(bool b) { out_.push_back(b ? '\1' : '\0'); }
    void number(std::int64_t n) { out_.append(reinterpret_cast<const char *>(&n), sizeof(n)); }
    void text(const std::string &s)
    {
        const auto n = static_cast<std::uint32_t>(s.size());
        out_.append(reinterpret_cast<const char *>(&n), sizeof(n));
        out_.append(s);
    }

  private:
    std::string &out_;
};

class Reader {
  public:
    Reader(const char *data, std::size_t size) : at_(data), left_(size) {}
    bool flag(bool &b)
    {
        if (left_ < 1 || (*at_ != '\0' && *at_ != '\1'))
            return false;
        b = *at_ == '\1';
        at_++;
        left_--;
        return true;
    }
    bool tag(char expected)
    {
        if (left_ < 1 || *at_ != expected)
            return false;
        at_++;
        left_--;
        return true;
    }
    bool number(std::int64_t &n) // long on this platform (LP64): page and page_size
    {
        if (left_ < sizeof(n))
            return false;
        std::memcpy(&n, at_, sizeof(n));
        at_ += sizeof(n);
        left_ -= sizeof(n);
        return true;
    }
    bool number(int &n)
    {
        std::int64_t v = 0;
        if (!number(v) || v < INT32_MIN || v > INT32_MAX)
            return false;
        n = static_cast<int>(v);
        return true;
    }
    bool text(std::string &s)
    {
        std::uint32_t n = 0;
        if (left_ < sizeof(n))
            return false;
        std::memcpy(&n, at_, sizeof(n));
        at_ += sizeof(n);
        left_ -= sizeof(n);
        if (left_ < n)
            return false;
        s.assign(at_, n);
        at_ += n;
        left_ -= n;
        return true;
    }
    bool format(AnswerFormat &f)
    {
        std::int64_t v = 0;
        if (!number(v) || v < 0 || v >= static_cast<std::int64_t>(std::size(answer_format::all)))
            return false;
        f = static_cast<AnswerFormat>(v);
        return true;
    }
    // A count of items that each take at least `min_bytes`: refused when more than could fit.
    bool count(std::uint32_t &n, std::size_t min_bytes)
    {
        std::int64_t v = 0;
        if (!number(v) || v < 0 || static_cast<std::uint64_t>(v) > left_ / min_bytes)
            return false;
        n = static_cast<std::uint32_t>(v);
        return true;
    }
    bool done() const { return left_ == 0; }

  private:
    const char *at_;
    std::size_t left_;
};

} // namespace

void encode(const CallRequest &request, std::string &out)
{
    out.clear();
    out.push_back(request_tag);
    Writer w(out);
    w.text(request.query);
    w.text(request.sql);
    w.text(request.secret);
    w.text(request.bearer_token);
    w.text(request.client_ip);
    w.number(static_cast<std::int64_t>(request.params.size()));
    for (const CallParam &p : request.params) {
        w.text(p.name);
        w.text(p.value);
        w.flag(p.is_null);
    }
    w.number(request.page);
    w.number(request.page_size);
    w.number(static_cast<std::int64_t>(request.format));
    w.number(request.timeout_ms);
    w.text(request.request_id);
    w.flag(request.stream);
    w.flag(request.safe_method);
    w.text(request.export_to);
}

void encode(const CallResult &result, std::string &out)
{
    out.clear();
    out.push_back(result_tag);
    Writer w(out);
    w.number(result.error.status);
    w.text(result.error.code);
    w.text(result.error.message);
    w.number(static_cast<std::int64_t>(result.error.errors.size()));
    for (const auto &e : result.error.errors) {
        w.text(e.first);
        w.text(e.second);
    }
    w.text(result.error.allow);
    w.text(result.body);
    w.flag(result.has_more);
    w.flag(result.for_helper);
    w.number(static_cast<std::int64_t>(result.rows));
    w.number(static_cast<std::int64_t>(result.revision));
    w.number(static_cast<std::int64_t>(result.version));
    w.text(result.masked);
    w.text(result.params);
    w.number(static_cast<std::int64_t>(result.ran_us));
    w.number(
        static_cast<std::int64_t>(result.file.present() ? result.file.size() : result.written));
}

bool decode(const char *data, std::size_t size, CallRequest &out)
{
    Reader r(data, size);
    std::uint32_t params = 0;
    if (!r.tag(request_tag) || !r.text(out.query) || !r.text(out.sql) || !r.text(out.secret) ||
        !r.text(out.bearer_token) || !r.text(out.client_ip) || !r.count(params, 9))
        return false;
    out.params.assign(params, CallParam());
    for (CallParam &p : out.params)
        if (!r.text(p.name) || !r.text(p.value) || !r.flag(p.is_null))
            return false;
    return r.number(out.page) && r.number(out.page_size) && r.format(out.format) &&
           r.number(out.timeout_ms) && r.text(out.request_id) && r.flag(out.stream) &&
           r.flag(out.safe_method) && r.text(out.export_to) && r.done();
}

bool decode(const char *data, std::size_t size, CallResult &out)
{
    Reader r(data, size);
    std::uint32_t errors = 0;
    if (!r.tag(result_tag) || !r.number(out.error.status) || !r.text(out.error.code) ||
        !r.text(out.error.message) || !r.count(errors, 8))
        return false;
    out.error.errors.assign(errors, {});
    for (auto &e : out.error.errors)
        if (!r.text(e.first) || !r.text(e.second))
            return false;
    std::int64_t rows = 0, revision = 0, ran_us = 0, written = 0;
    int version = 0;
    if (!r.text(out.error.allow) || !r.text(out.body) || !r.flag(out.has_more) ||
        !r.flag(out.for_helper) || !r.number(rows) || !r.number(revision) || !r.number(version) ||
        !r.text(out.masked) || !r.text(out.params) || !r.number(ran_us) || !r.number(written) ||
        !r.done() || rows < 0 || written < 0)
        return false;
    out.written = static_cast<std::uint64_t>(written);
    out.rows = static_cast<unsigned long long>(rows);
    out.ran_us = ran_us;
    out.revision = revision;
    out.version = version;
    return true;
}

} // namespace call_codec
