// Fuzzes parameter binding (src/rules/param_binding): a saved query's placeholders, their rules
// (parsed from JSON as save_query does), the caller's claims and the parameters a call gives.
// The input, with FuzzedDataProvider: from the end, how many placeholders (0 to 6), whether the
// caller has a token and how many claims (0 to 4), how many parameters are given (0 to 8) and,
// for each, whether it is null and which placeholder it names (or a name of its own); from the
// start, FuzzedDataProvider strings (a backslash and another byte end one): the rules' JSON, the
// placeholder names, each claim's name and value, each given name (when its own) and value.
// The regular expression match is a stand-in (a pattern matches a value that contains it).
// Oracles: binding succeeds exactly when the documented rules say so (a reference below); a bound
// parameter is the claim, the given value, the default or NULL, as the rules say; every error has
// its status and code, param_required only for parameters that are missing, and the problems
// list for param_required and param_invalid; the pattern is matched only for values that passed
// every other check.
#include "rules/param_binding.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using param_rules::Rule;

const CallParam *first_given(const std::vector<CallParam> &given, const std::string &name)
{
    for (const CallParam &p : given)
        if (p.name == name)
            return &p;
    return nullptr;
}

bool pattern_matches(const std::string &pattern, const std::string &value)
{
    return value.find(pattern) != std::string::npos;
}

// Whether the call binds, from the header's description rather than the code.
bool reference_binds(const std::vector<std::string> &names, const std::vector<Rule> &rules,
                     const std::unordered_map<std::string, std::string> *claims,
                     const std::vector<CallParam> &given)
{
    for (const std::string &name : names) {
        const Rule *rule = param_rules::find(rules, name);
        const CallParam *p = first_given(given, name);
        if (rule != nullptr && !rule->from_claim.empty()) {
            if (p != nullptr || claims == nullptr || claims->count(rule->from_claim) == 0)
                return false;
            continue;
        }
        if (p != nullptr) {
            if (p->value.find('\0') != std::string::npos)
                return false;
            // null: only for "nullable", a null default, or an optional parameter without one.
            const bool null_allowed =
                rule != nullptr &&
                (rule->nullable || (rule->has_default && rule->default_is_null) ||
                 (!rule->required && !rule->has_default));
            if (p->is_null && !null_allowed)
                return false;
            if (rule != nullptr && !p->is_null &&
                (!param_rules::check(*rule, p->value).empty() ||
                 (!rule->pattern.empty() && !pattern_matches(rule->pattern, p->value))))
                return false;
        } else if (rule == nullptr || (!rule->has_default && rule->required)) {
            return false;
        }
    }
    for (size_t i = 0; i < given.size(); i++) {
        if (std::find(names.begin(), names.end(), given[i].name) == names.end())
            return false;
        for (size_t j = 0; j < i; j++)
            if (given[j].name == given[i].name)
                return false;
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzedDataProvider in(data, size);
    int name_count = in.ConsumeIntegralInRange<int>(0, 6);
    bool has_token = in.ConsumeBool();
    int claim_count = in.ConsumeIntegralInRange<int>(0, 4);
    int given_count = in.ConsumeIntegralInRange<int>(0, 8);

    std::vector<Rule> rules;
    std::string error;
    if (!param_rules::parse(in.ConsumeRandomLengthString(1024), rules, error))
        rules.clear();              // a query saved without rules
    std::vector<std::string> names; // placeholders are distinct
    for (int i = 0; i < name_count; i++) {
        std::string n = in.ConsumeRandomLengthString(32);
        if (std::find(names.begin(), names.end(), n) == names.end())
            names.push_back(n);
    }
    std::unordered_map<std::string, std::string> claim_map;
    for (int i = 0; i < claim_count; i++) {
        // Claims come from a verified token, whose strings jansson reads without \u0000 (jwt.hpp).
        std::string name = in.ConsumeRandomLengthString(32);
        std::string value = in.ConsumeRandomLengthString(64);
        name.erase(std::remove(name.begin(), name.end(), '\0'), name.end());
        value.erase(std::remove(value.begin(), value.end(), '\0'), value.end());
        claim_map[name] = value;
    }
    const std::unordered_map<std::string, std::string> *claims = has_token ? &claim_map : nullptr;
    std::vector<CallParam> given;
    for (int i = 0; i < given_count; i++) {
        CallParam p;
        p.is_null = in.ConsumeBool();
        size_t which = in.ConsumeIntegralInRange<size_t>(0, names.size());
        p.name = which < names.size() ? names[which] : in.ConsumeRandomLengthString(32);
        if (!p.is_null)
            p.value = in.ConsumeRandomLengthString(64);
        given.push_back(std::move(p));
    }

    PatternCheck matches = [&](const std::string &pattern, const std::string &value) {
        // Asked only about a value that passed every other check of a rule with this pattern.
        FUZZ_CHECK(value.find('\0') == std::string::npos);
        bool passed = false;
        for (const Rule &r : rules)
            passed = passed || (r.pattern == pattern && param_rules::check(r, value).empty());
        FUZZ_CHECK(passed);
        return pattern_matches(pattern, value);
    };
    std::vector<BoundParam> out;
    ApiError e = bind_params(names, rules, claims, given, out, matches);

    FUZZ_CHECK(e.set() != reference_binds(names, rules, claims, given));
    if (!e.set()) {
        FUZZ_CHECK(out.size() == names.size());
        for (size_t i = 0; i < names.size(); i++) {
            const Rule *rule = param_rules::find(rules, names[i]);
            const CallParam *p = first_given(given, names[i]);
            if (rule != nullptr && !rule->from_claim.empty()) {
                FUZZ_CHECK(!out[i].is_null && out[i].value == claims->at(rule->from_claim));
            } else if (p != nullptr) {
                FUZZ_CHECK(out[i].is_null == p->is_null && out[i].value == p->value);
            } else if (rule->has_default) {
                FUZZ_CHECK(out[i].is_null == rule->default_is_null &&
                           out[i].value == rule->default_text);
            } else {
                FUZZ_CHECK(out[i].is_null && !rule->required);
            }
            if (!out[i].is_null)
                FUZZ_CHECK(out[i].value.find('\0') == std::string::npos);
        }
        return 0;
    }
    const ErrorCode codes[] = {error_code::param_required, error_code::param_invalid,
                               error_code::param_from_claim, error_code::sign_in_required,
                               error_code::claim_missing};
    bool known = false;
    for (const ErrorCode &c : codes)
        known = known || (e.code == c.code && e.status == c.status);
    FUZZ_CHECK(known);
    FUZZ_CHECK(!e.message.empty());
    if (e.code == error_code::param_required.code || e.code == error_code::param_invalid.code)
        FUZZ_CHECK(!e.errors.empty());
    if (e.code == error_code::param_required.code)
        for (const auto &problem : e.errors)
            FUZZ_CHECK(problem.second == "is required" && !first_given(given, problem.first));
    if (e.code == error_code::sign_in_required.code)
        FUZZ_CHECK(claims == nullptr);
    return 0;
}
