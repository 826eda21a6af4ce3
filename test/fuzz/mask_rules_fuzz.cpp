// Fuzzes mask rules (src/rules/mask_rules): parse_pattern and parse_action, as mask() does with
// its arguments, and matches and action_for, as the worker does for every column of a result. The
// input, with FuzzedDataProvider: from the end, how many rules (0 to 6); from the start,
// FuzzedDataProvider strings (a backslash and another byte end one): each rule's pattern and
// action, then a column's schema and table; the rest is the column's name.
// Oracles: an action parses exactly when it is hash, mask, null or drop in any case, and its name
// reads back; a parsed pattern has two or three non-empty, lower-case parts without quotes,
// spaces or control characters, its text parses back to the same pattern, and it matches its own
// names; matches agrees with a reference glob (dynamic programming, "*" for any run, the column's
// names compared case-insensitively); action_for is the strictest action of the matching rules.
#include "rules/mask_rules.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using masking::Action;
using masking::Pattern;

std::string lower(std::string s)
{
    for (char &c : s)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return s;
}

std::string upper(std::string s)
{
    for (char &c : s)
        if (c >= 'a' && c <= 'z')
            c = static_cast<char>(c - 'a' + 'A');
    return s;
}

// Does pattern ("*" any run of bytes) match all of subject (lower-cased)?
bool reference_glob(const std::string &pattern, const std::string &subject_text)
{
    std::string subject = lower(subject_text);
    size_t n = pattern.size(), m = subject.size();
    // at[j]: pattern[0, i) matches subject[0, j)
    std::vector<char> at(m + 1, 0), next(m + 1, 0);
    at[0] = 1;
    for (size_t i = 0; i < n; i++) {
        next.assign(m + 1, 0);
        for (size_t j = 0; j <= m; j++) {
            if (pattern[i] == '*')
                next[j] = at[j] || (j > 0 && next[j - 1]);
            else
                next[j] = j > 0 && at[j - 1] && pattern[i] == subject[j - 1];
        }
        at.swap(next);
    }
    return at[m];
}

bool reference_matches(const Pattern &p, const std::string &schema, const std::string &table,
                       const std::string &column)
{
    return (p.schema.empty() || reference_glob(p.schema, schema)) &&
           reference_glob(p.table, table) && reference_glob(p.column, column);
}

void check_pattern(const std::string &text, const Pattern &p)
{
    std::vector<const std::string *> parts = {&p.table, &p.column};
    if (!p.schema.empty())
        parts.push_back(&p.schema);
    for (const std::string *part : parts) {
        FUZZ_CHECK(!part->empty() && *part == lower(*part));
        for (unsigned char c : *part)
            FUZZ_CHECK(c >= 0x20 && c != '"' && c != ' ');
    }
    size_t dots = 0;
    for (char c : text)
        dots += c == '.';
    FUZZ_CHECK(dots == (p.schema.empty() ? 1u : 2u));
    std::string written = masking::pattern_text(p);
    FUZZ_CHECK(written == lower(text));
    Pattern again;
    std::string error;
    FUZZ_CHECK(masking::parse_pattern(written, again, error));
    FUZZ_CHECK(again.schema == p.schema && again.table == p.table && again.column == p.column);
    FUZZ_CHECK(masking::matches(p, p.schema, p.table, p.column));
    FUZZ_CHECK(masking::matches(p, upper(p.schema), upper(p.table), upper(p.column)));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzedDataProvider in(data, size);
    int count = in.ConsumeIntegralInRange<int>(0, 6);
    std::vector<masking::Rule> rules;
    for (int i = 0; i < count; i++) {
        std::string pattern_text = in.ConsumeRandomLengthString(64);
        std::string action_text = in.ConsumeRandomLengthString(8);
        masking::Rule rule;
        std::string error;
        bool parsed = masking::parse_pattern(pattern_text, rule.pattern, error);
        FUZZ_CHECK(parsed == error.empty());
        if (parsed)
            check_pattern(pattern_text, rule.pattern);
        std::string a = lower(action_text);
        bool known = a == "hash" || a == "mask" || a == "null" || a == "drop";
        FUZZ_CHECK(masking::parse_action(action_text, rule.action) == known);
        if (known)
            FUZZ_CHECK(a == masking::action_name(rule.action));
        if (parsed && known)
            rules.push_back(rule);
    }
    std::string schema = in.ConsumeRandomLengthString(32);
    std::string table = in.ConsumeRandomLengthString(32);
    std::string column = in.ConsumeRemainingBytesAsString();

    Action strictest = Action::none;
    for (const masking::Rule &r : rules) {
        bool m = masking::matches(r.pattern, schema, table, column);
        FUZZ_CHECK(m == reference_matches(r.pattern, schema, table, column));
        if (m && r.action > strictest)
            strictest = r.action;
    }
    FUZZ_CHECK(masking::action_for(rules, schema, table, column) == strictest);
    return 0;
}
