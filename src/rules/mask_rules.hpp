// Column masking rules: patterns, actions, and which rule wins. Pure C++, shared by the worker
// (which applies them) and explain (which shows them).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace masking {

// Ordered by strictness: a larger value wins.
enum class Action { none = 0, hash = 1, mask = 2, null = 3, drop = 4 };

const char *action_name(Action a);
// Parses "hash", "mask", "null" or "drop" (case-insensitive); false for anything else.
bool parse_action(std::string_view text, Action &out);

// A rule's pattern: [schema.]table.column, lower-cased; "*" in a part matches anything in it, and a
// part may mix text and "*" ("pay*"). An omitted schema matches every schema.
struct Pattern {
    std::string schema; // empty: any schema
    std::string table;
    std::string column;
};

// Parses and normalises (lower-case) a pattern; false with a reason for anything malformed.
bool parse_pattern(std::string_view text, Pattern &out, std::string &error);
// The normalised text of a pattern, as stored in the catalog.
std::string pattern_text(const Pattern &p);

struct Rule {
    Pattern pattern;
    Action action = Action::none;
};

// True when the pattern matches a column (names compared case-insensitively).
bool matches(const Pattern &p, std::string_view schema, std::string_view table,
             std::string_view column);

// The strictest action among the rules matching one column; Action::none when none does.
Action action_for(const std::vector<Rule> &rules, std::string_view schema, std::string_view table,
                  std::string_view column);

} // namespace masking
