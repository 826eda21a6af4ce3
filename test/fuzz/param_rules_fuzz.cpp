// Fuzzes parameter rules (src/rules/param_rules): parse, as save_query does with its params
// argument, and check, as every call does with the caller's values. The input, with
// FuzzedDataProvider: from the start, four values (FuzzedDataProvider strings: a backslash and
// another byte end one); the rest is the rules' JSON text.
// Oracles: parse refuses with a message or returns rules that keep their own promises (unique
// names, a default never required and passing its own checks, from_claim always required and
// never defaulted, min <= max, min_length <= max_length, bounds only on types they fit, a pattern
// of 1 to 500 bytes); find finds each rule by its name; a value check accepts is of the rule's
// type, one of its enum, within its bounds and its lengths, and a rule without any of those accepts
// every value.
#include "rules/param_rules.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using param_rules::Rule;
using param_rules::Type;

size_t characters(const std::string &s)
{
    size_t n = 0;
    for (unsigned char c : s)
        n += (c & 0xC0) != 0x80;
    return n;
}

bool whole_number(const std::string &s, double &out)
{
    char *end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return !s.empty() && end == s.c_str() + s.size() && std::isfinite(out);
}

void check_rule(const std::vector<Rule> &rules, const Rule &r)
{
    FUZZ_CHECK(param_rules::find(rules, r.name) == &r);
    if (r.has_default)
        FUZZ_CHECK(!r.required);
    if (r.default_is_null)
        FUZZ_CHECK(r.has_default && r.default_text.empty());
    if (!r.from_claim.empty())
        FUZZ_CHECK(r.required && !r.has_default);
    if (r.has_min || r.has_max)
        FUZZ_CHECK(r.type != Type::string && r.type != Type::boolean);
    if (r.has_min && r.has_max)
        FUZZ_CHECK(r.min <= r.max);
    FUZZ_CHECK(r.min_length >= -1 && r.max_length >= -1);
    if (r.min_length >= 0 || r.max_length >= 0)
        FUZZ_CHECK(r.type == Type::any || r.type == Type::string);
    if (r.min_length >= 0 && r.max_length >= 0)
        FUZZ_CHECK(r.min_length <= r.max_length);
    FUZZ_CHECK(r.pattern.size() <= 500);
    if (r.has_default && !r.default_is_null)
        FUZZ_CHECK(param_rules::check(r, r.default_text).empty());
}

void check_value(const Rule &r, const std::string &value)
{
    std::string problem = param_rules::check(r, value);
    bool unconstrained = (r.type == Type::any || r.type == Type::string) && r.enum_values.empty() &&
                         !r.has_min && !r.has_max && r.min_length < 0 && r.max_length < 0;
    if (unconstrained)
        FUZZ_CHECK(problem.empty());
    if (!problem.empty())
        return;
    if (r.type == Type::integer) {
        size_t i = !value.empty() && (value[0] == '+' || value[0] == '-');
        FUZZ_CHECK(value.size() > i &&
                   value.find_first_not_of("0123456789", i) == std::string::npos);
    }
    double number = 0;
    if (r.type == Type::number)
        FUZZ_CHECK(whole_number(value, number));
    if (r.type == Type::boolean)
        FUZZ_CHECK(value == "true" || value == "false");
    if (!r.enum_values.empty()) {
        bool found = false;
        for (const std::string &e : r.enum_values)
            found = found || e == value;
        FUZZ_CHECK(found);
    }
    if (r.has_min || r.has_max) {
        FUZZ_CHECK(whole_number(value, number));
        FUZZ_CHECK(!r.has_min || number >= r.min);
        FUZZ_CHECK(!r.has_max || number <= r.max);
    }
    if (r.min_length >= 0)
        FUZZ_CHECK(characters(value) >= static_cast<size_t>(r.min_length));
    if (r.max_length >= 0)
        FUZZ_CHECK(characters(value) <= static_cast<size_t>(r.max_length));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzedDataProvider in(data, size);
    std::vector<std::string> values;
    for (int i = 0; i < 4; i++)
        values.push_back(in.ConsumeRandomLengthString(128));
    std::string json = in.ConsumeRemainingBytesAsString();

    std::vector<Rule> rules;
    std::string error;
    if (!param_rules::parse(json, rules, error)) {
        FUZZ_CHECK(!error.empty());
        return 0;
    }
    for (const Rule &r : rules) {
        check_rule(rules, r);
        for (const std::string &v : values)
            check_value(r, v);
        for (const std::string &e : r.enum_values)
            check_value(r, e);
    }
    return 0;
}
