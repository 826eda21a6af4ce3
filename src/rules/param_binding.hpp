// Binding a call's parameters to a saved query's placeholders under their rules (param_rules.hpp):
// given, defaulted, taken from the caller's token, or NULL. Plain C++; the one PostgreSQL piece, a
// regular expression match, is passed in.
#pragma once

#include "common/api_error.hpp"
#include "common/call.hpp"
#include "rules/param_rules.hpp"

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

struct BoundParam {
    bool is_null = true;
    std::string value; // text for the type's input function
};

// matches_pattern(pattern, value): whether value matches the rule's pattern as a whole.
using PatternCheck = std::function<bool(const std::string &, const std::string &)>;

// Binds given to the query's parameters (names, in placeholder order). claims: the caller's
// verified token claims, nullptr for a caller with a key. Returns every problem at once, checked
// only once the caller is authorized for the query (so parameter names are never revealed to anyone
// else): missing ones (param_required when nothing else is wrong); unknown, repeated, NUL-holding
// or rule-breaking ones (param_invalid); and from_claim parameters (param_from_claim when sent,
// sign_in_required without a token, claim_missing without the claim). matches_pattern is called
// only for values that passed every other check.
ApiError bind_params(const std::vector<std::string> &names,
                     const std::vector<param_rules::Rule> &rules,
                     const std::unordered_map<std::string, std::string> *claims,
                     const std::vector<CallParam> &given, std::vector<BoundParam> &out,
                     const PatternCheck &matches_pattern);
