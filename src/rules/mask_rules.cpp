// Column masking rules: see mask_rules.hpp.
#include "rules/mask_rules.hpp"

#include <algorithm>

namespace masking {

namespace {

char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowered(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), lower);
    return out;
}

// Glob match with '*' only, case-insensitive on the subject (the pattern is already lower-case).
bool glob(std::string_view pattern, std::string_view subject)
{
    size_t p = 0, s = 0, star = std::string_view::npos, mark = 0;
    while (s < subject.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = s;
        } else if (p < pattern.size() && pattern[p] == lower(subject[s])) {
            p++;
            s++;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            s = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*')
        p++;
    return p == pattern.size();
}

} // namespace

const char *action_name(Action a)
{
    switch (a) {
    case Action::hash:
        return "hash";
    case Action::mask:
        return "mask";
    case Action::null:
        return "null";
    case Action::drop:
        return "drop";
    case Action::none:
        break;
    }
    return "none";
}

bool parse_action(std::string_view text, Action &out)
{
    std::string t = lowered(text);
    for (Action a : {Action::hash, Action::mask, Action::null, Action::drop})
        if (t == action_name(a)) {
            out = a;
            return true;
        }
    return false;
}

bool parse_pattern(std::string_view text, Pattern &out, std::string &error)
{
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); i++)
        if (i == text.size() || text[i] == '.') {
            parts.push_back(lowered(text.substr(start, i - start)));
            start = i + 1;
        }
    if (parts.size() < 2 || parts.size() > 3) {
        error = "a column pattern is table.column or schema.table.column";
        return false;
    }
    for (const std::string &part : parts) {
        if (part.empty()) {
            error = "a column pattern has an empty part";
            return false;
        }
        for (char c : part)
            if (c == '"' || c == ' ' || c == '\0' || static_cast<unsigned char>(c) < 0x20) {
                error = "a column pattern holds names, \"*\" and dots only";
                return false;
            }
    }
    out.schema = parts.size() == 3 ? parts[0] : std::string();
    out.table = parts[parts.size() - 2];
    out.column = parts[parts.size() - 1];
    return true;
}

std::string pattern_text(const Pattern &p)
{
    return (p.schema.empty() ? std::string() : p.schema + ".") + p.table + "." + p.column;
}

bool matches(const Pattern &p, std::string_view schema, std::string_view table,
             std::string_view column)
{
    return (p.schema.empty() || glob(p.schema, schema)) && glob(p.table, table) &&
           glob(p.column, column);
}

Action action_for(const std::vector<Rule> &rules, std::string_view schema, std::string_view table,
                  std::string_view column)
{
    Action strictest = Action::none;
    for (const Rule &r : rules)
        if (r.action > strictest && matches(r.pattern, schema, table, column))
            strictest = r.action;
    return strictest;
}

} // namespace masking
