// Column masking rules: patterns, actions, and which rule wins. Pure C++, shared by the worker
// (which applies them) and explain (which shows them).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace masking {

// What a masked column shows, ordered by strictness: where several rules match one column, the
// larger value wins. partial and mask_email show characters of the value, so they are the least
// strict; hash shows which values are equal and nothing of them; mask shows a first character.
// An action is one int, so that a decision stays a plain array and the strictest wins by
// comparison: partial(lead, trail) keeps its two counts in the low bits of its value
// (partial_action), ordered so that the one showing fewer characters compares stricter.
enum class Action : int {
    none = 0,
    partial = 1 << 16, // the base of every partial(lead, trail)
    mask_email = 2 << 16,
    hash = 3 << 16,
    mask = 4 << 16,
    null = 5 << 16,
    drop = 6 << 16,
};

// The most characters partial may keep at either end.
constexpr int partial_max = 31;

// partial(lead, trail): the first `lead` and the last `trail` characters of a text, each clamped
// to 0..partial_max.
Action partial_action(int lead, int trail);
// The named action of a: partial for every partial(lead, trail), a itself otherwise (none for a
// value no action has).
Action kind_of(Action a);
int partial_lead(Action a);
int partial_trail(Action a);

// "hash", "mask", "mask_email", "null", "drop", "partial(2,4)"; "none" for none or a value no
// action has.
std::string action_name(Action a);
// Parses an action_name (case-insensitive, "partial( 2 , 4 )" too); false for anything else.
bool parse_action(std::string_view text, Action &out);

// The characters of a value under mask, mask_email or partial: its first `head` bytes, the filler,
// then `tail` bytes from `tail_from`. Nothing is copied, so it cannot fail.
struct Shown {
    size_t head = 0;
    size_t tail_from = 0;
    size_t tail = 0;
};
// The fixed filler between them: its length says nothing of the value's.
constexpr char filler[] = "***";
// The bytes the character at s takes in the server's encoding (PostgreSQL's pg_mblen).
using CharLength = int (*)(const char *s);
// What `text` (a value's text output) shows under a (whose kind is mask, mask_email or partial):
// - mask: its first character;
// - mask_email: the first character and "@domain" of a value that is an e-mail address
//   (is_email_address), else as mask;
// - partial(lead, trail): its first lead and last trail characters when at least one character is
//   left between them, else nothing but the filler.
// padded: a char(n) value, whose trailing blanks are not part of it and are never shown.
Shown shown_text(Action a, std::string_view text, bool padded, CharLength char_length);
// local@domain: a local part of RFC 5322's atext and dots, a domain of two or more labels of
// letters, digits, hyphens (not at a label's ends) and non-ASCII bytes; nothing else around it.
bool is_email_address(std::string_view text);

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
