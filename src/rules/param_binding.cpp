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

using Problems = std::vector<std::pair<std::string, std::string>>;

// A from_claim parameter's value, from the caller's token: an error when it was sent, or when the
// caller has no token or its token lacks the claim.
ApiError bind_from_claim(const std::string &name, const param_rules::Rule &rule, const CallParam *p,
                         const std::unordered_map<std::string, std::string> *claims,
                         BoundParam &out)
{
    if (p != nullptr) {
        ApiError e = api_errors::make(error_code::param_from_claim,
                                      "a parameter taken from the caller's token was sent");
        e.errors.emplace_back(name, "comes from the caller's token and cannot be sent");
        return e;
    }
    if (claims == nullptr)
        return api_errors::make(error_code::sign_in_required,
                                "this query needs a signed-in caller (a bearer token)");
    auto claim = claims->find(rule.from_claim);
    if (claim == claims->end())
        return api_errors::make(error_code::claim_missing,
                                "the caller's token lacks a claim this query needs");
    out.is_null = false;
    out.value = claim->second;
    return ApiError();
}

// The problem with a value given under its rule (nullptr: none), or empty.
std::string given_problem(const param_rules::Rule *rule, const CallParam &p,
                          const PatternCheck &matches_pattern)
{
    if (p.value.find('\0') != std::string::npos)
        return "must not contain a NUL byte";
    if (p.is_null && !param_rules::accepts_null(rule))
        return "must not be null";
    if (rule == nullptr || p.is_null)
        return std::string();
    std::string problem = param_rules::check(*rule, p.value);
    if (problem.empty() && !rule->pattern.empty() && !matches_pattern(rule->pattern, p.value))
        problem = "does not match the required pattern";
    return problem;
}

// The parameters given that the query does not have, or given more than once: each name at most
// once in the answer (its errors object has one member per name). Whether there was one.
bool misnamed_problems(const std::vector<std::string> &names, const std::vector<CallParam> &given,
                       Problems &problems)
{
    std::vector<bool> first;
    std::vector<size_t> count;
    group_by_name(
        given, [](const CallParam &p) -> const std::string & { return p.name; }, first, count);
    bool found = false;
    for (size_t i = 0; i < given.size(); i++) {
        if (!first[i])
            continue;
        const bool known = std::find(names.begin(), names.end(), given[i].name) != names.end();
        if (known && count[i] == 1)
            continue;
        problems.emplace_back(given[i].name, known ? "is given more than once"
                                                   : "is not a parameter of this query");
        found = true;
    }
    return found;
}

// One problem per parameter, the first found (a value breaking its rule and also repeated).
void keep_first_per_name(Problems &problems)
{
    std::vector<bool> first;
    std::vector<size_t> count;
    group_by_name(
        problems,
        [](const std::pair<std::string, std::string> &p) -> const std::string & { return p.first; },
        first, count);
    Problems unique;
    for (size_t i = 0; i < problems.size(); i++)
        if (first[i])
            unique.push_back(std::move(problems[i]));
    problems = std::move(unique);
}

} // namespace

ApiError bind_params(const std::vector<std::string> &names,
                     const std::vector<param_rules::Rule> &rules,
                     const std::unordered_map<std::string, std::string> *claims,
                     const std::vector<CallParam> &given, std::vector<BoundParam> &out,
                     const PatternCheck &matches_pattern)
{
    Problems problems;
    bool only_missing = true;
    out.assign(names.size(), BoundParam());
    for (size_t i = 0; i < names.size(); i++) {
        const std::string &name = names[i];
        const param_rules::Rule *rule = param_rules::find(rules, name);
        const CallParam *p = find_given(given, name);
        if (rule != nullptr && !rule->from_claim.empty()) {
            ApiError e = bind_from_claim(name, *rule, p, claims, out[i]);
            if (e.set())
                return e;
        } else if (p != nullptr) {
            out[i].is_null = p->is_null;
            out[i].value = p->value;
            std::string problem = given_problem(rule, *p, matches_pattern);
            if (!problem.empty()) {
                problems.emplace_back(name, std::move(problem));
                only_missing = false;
            }
        } else if (rule != nullptr && rule->has_default) {
            out[i].is_null = rule->default_is_null;
            out[i].value = rule->default_text;
        } else if (rule == nullptr || rule->required) {
            problems.emplace_back(name, "is required");
        }
    }
    if (misnamed_problems(names, given, problems))
        only_missing = false;
    if (problems.empty())
        return ApiError();
    keep_first_per_name(problems);
    ApiError err = only_missing ? api_errors::make(error_code::param_required, "missing parameters")
                                : api_errors::make(error_code::param_invalid, "invalid parameters");
    err.errors = std::move(problems);
    return err;
}
