// Binding a call's parameters: see param_binding.hpp.
#include "rules/param_binding.hpp"

#include <algorithm>
#include <utility>

namespace {

const CallParam *find_given(const std::vector<CallParam> &given, const std::string &name)
{
    for (const CallParam &p : given)
        if (p.name == name)
            return &p;
    return nullptr;
}

// For each item, whether it is the first, in order, with its name, and how many items share the
// name: one sort, so thousands of names cost n log n.
template <typename T, typename Name>
void group_by_name(const std::vector<T> &items, Name name, std::vector<bool> &first,
                   std::vector<size_t> &count)
{
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); i++)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return name(items[a]) < name(items[b]); });
    first.assign(items.size(), false);
    count.assign(items.size(), 0);
    for (size_t k = 0; k < order.size();) {
        size_t end = k + 1;
        while (end < order.size() && name(items[order[end]]) == name(items[order[k]]))
            end++;
        first[order[k]] = true; // stable: the first of the run is the first in order
        for (size_t j = k; j < end; j++)
            count[order[j]] = end - k;
        k = end;
    }
}

} // namespace

ApiError bind_params(const std::vector<std::string> &names,
                     const std::vector<param_rules::Rule> &rules,
                     const std::unordered_map<std::string, std::string> *claims,
                     const std::vector<CallParam> &given, std::vector<BoundParam> &out,
                     const PatternCheck &matches_pattern)
{
    std::vector<std::pair<std::string, std::string>> problems;
    bool only_missing = true;
    out.assign(names.size(), BoundParam());
    for (size_t i = 0; i < names.size(); i++) {
        const std::string &name = names[i];
        const param_rules::Rule *rule = param_rules::find(rules, name);
        const CallParam *p = find_given(given, name);
        if (rule != nullptr && !rule->from_claim.empty()) {
            if (p != nullptr) {
                ApiError e = api_errors::make(error_code::param_from_claim,
                                              "a parameter taken from the caller's token was sent");
                e.errors.emplace_back(name, "comes from the caller's token and cannot be sent");
                return e;
            }
            if (claims == nullptr)
                return api_errors::make(error_code::sign_in_required,
                                        "this query needs a signed-in caller (a bearer token)");
            auto claim = claims->find(rule->from_claim);
            if (claim == claims->end())
                return api_errors::make(error_code::claim_missing,
                                        "the caller's token lacks a claim this query needs");
            out[i].is_null = false;
            out[i].value = claim->second;
            continue;
        }
        if (p != nullptr) {
            out[i].is_null = p->is_null;
            out[i].value = p->value;
            if (p->value.find('\0') != std::string::npos) {
                problems.emplace_back(name, "must not contain a NUL byte");
                only_missing = false;
            } else if (p->is_null && !param_rules::accepts_null(rule)) {
                problems.emplace_back(name, "must not be null");
                only_missing = false;
            } else if (rule != nullptr && !p->is_null) {
                std::string problem = param_rules::check(*rule, p->value);
                if (problem.empty() && !rule->pattern.empty() &&
                    !matches_pattern(rule->pattern, p->value))
                    problem = "does not match the required pattern";
                if (!problem.empty()) {
                    problems.emplace_back(name, problem);
                    only_missing = false;
                }
            }
        } else if (rule != nullptr && rule->has_default) {
            out[i].is_null = rule->default_is_null;
            out[i].value = rule->default_text;
        } else if (rule == nullptr || rule->required) {
            problems.emplace_back(name, "is required");
        }
    }
    // Each name at most once in the answer (its errors object has one member per name).
    std::vector<bool> first;
    std::vector<size_t> count;
    group_by_name(
        given, [](const CallParam &p) -> const std::string & { return p.name; }, first, count);
    for (size_t i = 0; i < given.size(); i++) {
        if (!first[i])
            continue;
        const bool known = std::find(names.begin(), names.end(), given[i].name) != names.end();
        if (known && count[i] == 1)
            continue;
        problems.emplace_back(given[i].name, known ? "is given more than once"
                                                   : "is not a parameter of this query");
        only_missing = false;
    }
    if (problems.empty())
        return ApiError();
    // One problem per parameter, the first found (a value breaking its rule and also repeated).
    group_by_name(
        problems,
        [](const std::pair<std::string, std::string> &p) -> const std::string & { return p.first; },
        first, count);
    std::vector<std::pair<std::string, std::string>> unique;
    for (size_t i = 0; i < problems.size(); i++)
        if (first[i])
            unique.push_back(std::move(problems[i]));
    problems = std::move(unique);
    ApiError err = only_missing ? api_errors::make(error_code::param_required, "missing parameters")
                                : api_errors::make(error_code::param_invalid, "invalid parameters");
    err.errors = std::move(problems);
    return err;
}
