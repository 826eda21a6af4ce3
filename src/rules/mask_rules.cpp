// Column masking rules: see mask_rules.hpp.
#include "rules/mask_rules.hpp"

#include "common/chars.hpp"

#include <algorithm>

namespace masking {

namespace {

std::string lowered(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), chars::to_lower);
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
        } else if (p < pattern.size() && pattern[p] == chars::to_lower(subject[s])) {
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

namespace {

// partial's low bits: (62 - shown) * 32 + (31 - lead), so that fewer characters shown, then fewer
// of them at the start, compare stricter; 0..2015.
constexpr int partial_span = (2 * partial_max) * 32 + partial_max;

int partial_bits(Action a)
{
    return static_cast<int>(a) - static_cast<int>(Action::partial);
}

bool is_partial(Action a)
{
    const int bits = partial_bits(a);
    return bits >= 0 && bits <= partial_span;
}

} // namespace

Action partial_action(int lead, int trail)
{
    lead = std::clamp(lead, 0, partial_max);
    trail = std::clamp(trail, 0, partial_max);
    return static_cast<Action>(static_cast<int>(Action::partial) +
                               (2 * partial_max - (lead + trail)) * 32 + (partial_max - lead));
}

int partial_lead(Action a)
{
    return is_partial(a) ? partial_max - partial_bits(a) % 32 : 0;
}

int partial_trail(Action a)
{
    return is_partial(a) ? 2 * partial_max - partial_bits(a) / 32 - partial_lead(a) : 0;
}

Action kind_of(Action a)
{
    switch (a) {
    case Action::none:
    case Action::mask_email:
    case Action::hash:
    case Action::mask:
    case Action::null:
    case Action::drop:
        return a;
    case Action::partial:
        break;
    }
    // A value no action has is taken for the strictest: a mistake never shows a value in clear.
    return is_partial(a) ? Action::partial : Action::drop;
}

std::string action_name(Action a)
{
    switch (kind_of(a)) {
    case Action::partial:
        return "partial(" + std::to_string(partial_lead(a)) + "," +
               std::to_string(partial_trail(a)) + ")";
    case Action::mask_email:
        return "mask_email";
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

namespace {

void skip_blanks(std::string_view t, size_t &i)
{
    while (i < t.size() && t[i] == ' ')
        i++;
}

// A count of 0..partial_max at t[i] (at most two digits); false for anything else.
bool parse_count(std::string_view t, size_t &i, int &out)
{
    skip_blanks(t, i);
    size_t digits = 0;
    out = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9' && digits < 3) {
        out = out * 10 + (t[i++] - '0');
        digits++;
    }
    skip_blanks(t, i);
    return digits > 0 && digits < 3 && out <= partial_max;
}

bool parse_partial(std::string_view t, Action &out)
{
    constexpr std::string_view head = "partial(";
    if (t.substr(0, head.size()) != head)
        return false;
    size_t i = head.size();
    int lead = 0, trail = 0;
    if (!parse_count(t, i, lead) || i >= t.size() || t[i++] != ',' || !parse_count(t, i, trail) ||
        i + 1 != t.size() || t[i] != ')')
        return false;
    out = partial_action(lead, trail);
    return true;
}

} // namespace

bool parse_action(std::string_view text, Action &out)
{
    std::string t = lowered(text);
    for (Action a : {Action::mask_email, Action::hash, Action::mask, Action::null, Action::drop})
        if (t == action_name(a)) {
            out = a;
            return true;
        }
    return parse_partial(t, out);
}

namespace {

size_t char_at(std::string_view text, size_t at, CharLength char_length)
{
    const int n = char_length(text.data() + at);
    return std::min(text.size() - at, static_cast<size_t>(std::max(n, 1)));
}

// The value without the blanks that pad a char(n).
std::string_view unpadded(std::string_view text, bool padded)
{
    if (padded)
        while (!text.empty() && text.back() == ' ')
            text.remove_suffix(1);
    return text;
}

bool is_atext(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-/=?^_`{|}~.").find(static_cast<char>(c)) !=
               std::string_view::npos;
}

bool is_label_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c >= 0x80;
}

bool is_domain(std::string_view d)
{
    if (d.empty() || d.size() > 253)
        return false;
    int labels = 0;
    size_t start = 0;
    while (start <= d.size()) {
        size_t end = d.find('.', start);
        if (end == std::string_view::npos)
            end = d.size();
        std::string_view label = d.substr(start, end - start);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return false;
        for (char c : label)
            if (!is_label_char(static_cast<unsigned char>(c)))
                return false;
        labels++;
        start = end + 1;
    }
    return labels >= 2;
}

} // namespace

bool is_email_address(std::string_view text)
{
    const size_t at = text.find('@');
    if (at == std::string_view::npos || at == 0 || at > 64)
        return false;
    for (size_t i = 0; i < at; i++)
        if (!is_atext(static_cast<unsigned char>(text[i])))
            return false;
    return is_domain(text.substr(at + 1));
}

Shown shown_text(Action a, std::string_view text, bool padded, CharLength char_length)
{
    text = unpadded(text, padded);
    Shown shown;
    switch (kind_of(a)) {
    case Action::mask_email:
        if (is_email_address(text)) {
            shown.head = char_at(text, 0, char_length);
            shown.tail_from = text.find('@');
            shown.tail = text.size() - shown.tail_from;
            return shown;
        }
        [[fallthrough]];
    case Action::mask:
        shown.head = text.empty() ? 0 : char_at(text, 0, char_length);
        return shown;
    case Action::partial: {
        const size_t lead = static_cast<size_t>(partial_lead(a));
        const size_t trail = static_cast<size_t>(partial_trail(a));
        // One pass, keeping where each of the last trail + 1 characters starts (a ring: no
        // allocation, whatever the value's size).
        size_t starts[partial_max + 1] = {};
        size_t count = 0, head = 0;
        for (size_t at = 0; at < text.size(); count++) {
            if (count == lead)
                head = at;
            starts[count % (trail + 1)] = at;
            at += char_at(text, at, char_length);
        }
        if (count <= lead + trail)
            return shown; // nothing would be hidden: the filler alone
        shown.head = lead == 0 ? 0 : head;
        shown.tail_from = trail == 0 ? text.size() : starts[(count - trail) % (trail + 1)];
        shown.tail = text.size() - shown.tail_from;
        return shown;
    }
    default:
        return shown;
    }
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
