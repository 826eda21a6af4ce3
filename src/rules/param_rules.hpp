// Rules on a saved query's parameters, declared with save_query(..., params => jsonb):
// {"name": {"type", "required", "default", "enum", "min", "max", "min_length", "max_length",
// "pattern", "description", "from_claim"}}. Parsed and validated at save time; checked on every
// call before anything runs. Pure C++ (jansson): the pattern is matched by the caller with
// PostgreSQL's own regex engine, which is what SQL's ~ uses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace param_rules {

enum class Type { any, integer, number, string, boolean };

struct Rule {
    std::string name;
    Type type = Type::any;
    bool required = true;
    bool nullable = false; // "nullable": true (accepts_null)
    bool has_default = false;
    bool default_is_null = false;
    std::string default_text;
    // "example": a value a caller could send, for documents and contract testers (OpenAPI's
    // examples); it must satisfy the other rules, as a default must.
    bool has_example = false;
    std::string example_text;
    std::vector<std::string> enum_values; // as text; empty: no enum
    bool has_min = false, has_max = false;
    double min = 0, max = 0;
    long min_length = -1, max_length = -1; // -1: no limit
    std::string pattern;                   // empty: none; must match the whole value
    std::string description;
    std::string from_claim; // empty: the value comes from the request
};

// Parses a rules object (JSON text). False with a message naming the parameter and the problem.
bool parse(std::string_view json, std::vector<Rule> &out, std::string &error);

// The problem with one value under a rule, not counting the pattern; empty when none.
std::string check(const Rule &rule, const std::string &value);

const Rule *find(const std::vector<Rule> &rules, const std::string &name);

// Whether a null (JSON's, in a POST body or a tool call) is bound as SQL NULL: only where the
// rules allow it, as "nullable": true, a null default, or an optional parameter without a default
// (which is NULL when left out). Without rules, a parameter is required and takes no null.
inline bool accepts_null(const Rule *rule)
{
    return rule != nullptr && (rule->nullable || (rule->has_default && rule->default_is_null) ||
                               (!rule->required && !rule->has_default));
}

} // namespace param_rules
