// Tests of src/rules/mask_rules.cpp: action names and their order of strictness, column patterns
// ([schema.]table.column, lower-cased, "*" anywhere in a part), matching, and which rule wins.
#include "rules/mask_rules.hpp"
#include "tap.hpp"

#include <string>
#include <vector>

namespace {

using masking::Action;
using masking::Pattern;
using tap::is;
using tap::like;
using tap::ok;

Pattern pattern(const std::string &text)
{
    Pattern p;
    std::string error;
    if (!masking::parse_pattern(text, p, error))
        tap::diag("test setup: " + text + ": " + error);
    return p;
}

bool match(const std::string &pat, const char *schema, const char *table, const char *column)
{
    return masking::matches(pattern(pat), schema, table, column);
}

// Refused, with a reason.
void refused(const std::string &text, const char *why, const std::string &name)
{
    Pattern p;
    std::string error;
    bool parsed = masking::parse_pattern(text, p, error);
    ok(!parsed && error.find(why) != std::string::npos, name,
       parsed ? "accepted" : "reason " + tap::show(error));
}

masking::Rule rule(const std::string &text, Action a)
{
    masking::Rule r;
    r.pattern = pattern(text);
    r.action = a;
    return r;
}

void actions()
{
    is(std::string(masking::action_name(Action::none)), "none", "action_name: none");
    is(std::string(masking::action_name(Action::hash)), "hash", "action_name: hash");
    is(std::string(masking::action_name(Action::mask)), "mask", "action_name: mask");
    is(std::string(masking::action_name(Action::null)), "null", "action_name: null");
    is(std::string(masking::action_name(Action::drop)), "drop", "action_name: drop");
    is(std::string(masking::action_name(static_cast<Action>(42))), "none",
       "action_name: a value out of range is none");
    ok(Action::none < Action::hash && Action::hash < Action::mask && Action::mask < Action::null &&
           Action::null < Action::drop,
       "strictness: none < hash < mask < null < drop");

    const struct {
        const char *text;
        Action action;
    } good[] = {{"hash", Action::hash}, {"mask", Action::mask}, {"null", Action::null},
                {"drop", Action::drop}, {"HASH", Action::hash}, {"Mask", Action::mask},
                {"nULL", Action::null}, {"DROP", Action::drop}};
    for (const auto &g : good) {
        Action a = Action::none;
        ok(masking::parse_action(g.text, a) && a == g.action,
           std::string("parse_action: ") + g.text);
    }
    const char *bad[] = {"none", "",          " hash", "hash ", "hashes", "has",
                         "h*",   "mask,drop", "nul",   "0",     "4"};
    for (const char *b : bad) {
        Action a = Action::mask;
        bool parsed = masking::parse_action(b, a);
        ok(!parsed && a == Action::mask, "parse_action refuses " + tap::show(std::string(b)));
    }
    Action a = Action::mask;
    ok(!masking::parse_action(std::string("hash\0", 5), a) && a == Action::mask,
       "parse_action refuses hash followed by a NUL");
    ok(!masking::parse_action("h\xC3\xA1sh", a), "parse_action refuses non-ASCII");
    // Every action's name parses back to it.
    bool all = true;
    for (Action x : {Action::hash, Action::mask, Action::null, Action::drop}) {
        Action y = Action::none;
        all = all && masking::parse_action(masking::action_name(x), y) && y == x;
    }
    ok(all, "parse_action(action_name(a)) == a");
}

void patterns()
{
    {
        Pattern p;
        std::string error;
        ok(masking::parse_pattern("users.email", p, error) && p.schema.empty() &&
               p.table == "users" && p.column == "email",
           "parse_pattern: table.column, no schema");
    }
    {
        Pattern p;
        std::string error;
        ok(masking::parse_pattern("Public.Users.EMAIL", p, error) && p.schema == "public" &&
               p.table == "users" && p.column == "email",
           "parse_pattern: schema.table.column, lower-cased");
    }
    {
        Pattern p;
        std::string error;
        ok(masking::parse_pattern("*.PAY*.*", p, error) && p.schema == "*" && p.table == "pay*" &&
               p.column == "*",
           "parse_pattern: stars kept");
    }
    {
        Pattern p;
        std::string error = "kept";
        ok(masking::parse_pattern("a.b", p, error) && error == "kept",
           "parse_pattern: success leaves the error alone");
    }
    {
        std::string long_name(10000, 'X');
        Pattern p;
        std::string error;
        ok(masking::parse_pattern(long_name + "." + long_name, p, error) &&
               p.table == std::string(10000, 'x'),
           "parse_pattern: long parts");
    }
    is(masking::pattern_text(pattern("Users.Email")), "users.email", "pattern_text: no schema");
    is(masking::pattern_text(pattern("S.T.C")), "s.t.c", "pattern_text: with a schema");
    is(masking::pattern_text(pattern("*.pay*.*")), "*.pay*.*", "pattern_text: stars");
    is(masking::pattern_text(pattern(masking::pattern_text(pattern("A.B.C")))), "a.b.c",
       "pattern_text: parsing its text gives the same text");

    refused("", "table.column or schema.table.column", "parse_pattern: empty");
    refused("email", "table.column or schema.table.column", "parse_pattern: one part");
    refused("a.b.c.d", "table.column or schema.table.column", "parse_pattern: four parts");
    refused("a..b", "empty part", "parse_pattern: an empty middle part");
    refused(".a.b", "empty part", "parse_pattern: an empty first part");
    refused("a.b.", "empty part", "parse_pattern: an empty last part");
    refused(".", "empty part", "parse_pattern: a lone dot");
    refused("..", "empty part", "parse_pattern: two dots");
    refused("a b.c", "names, \"*\" and dots only", "parse_pattern: a space");
    refused(" a.b", "names, \"*\" and dots only", "parse_pattern: a leading space");
    refused("\"A\".b", "names, \"*\" and dots only", "parse_pattern: quotes");
    refused("a\tb.c", "names, \"*\" and dots only", "parse_pattern: a tab");
    refused("a.b\n", "names, \"*\" and dots only", "parse_pattern: a newline");
    refused(std::string("a.b\0c", 5), "names, \"*\" and dots only", "parse_pattern: a NUL byte");
    refused("a.\x1F", "names, \"*\" and dots only", "parse_pattern: a control character");
}

void matching()
{
    ok(match("users.email", "public", "users", "email"), "matches: exact, any schema");
    ok(match("users.email", "other", "users", "email"), "matches: no schema, another schema");
    ok(match("users.email", "PUBLIC", "Users", "EMAIL"),
       "matches: names compared case-insensitively");
    ok(!match("users.email", "public", "users", "emails"), "matches: a longer column");
    ok(!match("users.email", "public", "user", "email"), "matches: a shorter table");
    ok(!match("users.email", "public", "users", ""), "matches: an empty column");
    ok(match("public.users.email", "public", "users", "email"), "matches: with the schema");
    ok(!match("public.users.email", "audit", "users", "email"), "matches: another schema");
    ok(match("pub*.users.email", "public", "users", "email"), "matches: a schema with a star");
    ok(!match("pub*.users.email", "private", "users", "email"),
       "matches: a schema with a star, another schema");
    ok(match("*.*", "s", "t", "c"), "matches: *.* holds every column");
    ok(match("*.*.*", "s", "t", "c"), "matches: *.*.* holds every column");
    ok(match("*.*", "", "", ""), "matches: * holds empty names");
    ok(match("users.pay*", "s", "users", "payment"), "matches: a prefix");
    ok(match("users.pay*", "s", "users", "pay"), "matches: a star holds nothing too");
    ok(!match("users.pay*", "s", "users", "prepay"), "matches: a prefix, not a suffix");
    ok(match("users.*pay", "s", "users", "prepay"), "matches: a suffix");
    ok(!match("users.*pay", "s", "users", "payment"), "matches: a suffix, not a prefix");
    ok(match("users.*ss*", "s", "users", "password"), "matches: a middle");
    ok(match("users.a*b*c", "s", "users", "aXXbYYc"), "matches: two stars");
    ok(match("users.a*b*c", "s", "users", "abc"), "matches: two stars holding nothing");
    ok(!match("users.a*b*c", "s", "users", "acb"), "matches: two stars, wrong order");
    ok(match("users.*ab", "s", "users", "aab"), "matches: a star that must backtrack");
    ok(match("users.*a*a*a*b", "s", "users", "aaaaaaaaaab"),
       "matches: several stars, backtracking");
    ok(!match("users.*a*a*a*b", "s", "users", std::string(5000, 'a').c_str()),
       "matches: several stars against 5000 bytes without the end");
    ok(match("users.**", "s", "users", "anything"), "matches: a double star");
    ok(match("users.e*l", "s", "users", "EMAIL"), "matches: a star, the subject upper-case");
    ok(!match("users.a?c", "s", "users", "abc"), "matches: ? is no wildcard");
    ok(match("users.a?c", "s", "users", "a?c"), "matches: ? matches itself");
    ok(!match("users.[ab]", "s", "users", "a"), "matches: brackets are no class");
    ok(!match("users.a_c", "s", "users", "abc"), "matches: _ is no wildcard");
    ok(!match("users.a%", "s", "users", "abc"), "matches: % is no wildcard");
    ok(masking::matches(pattern("t.c"), "s", "t", std::string_view("c\0", 2)) == false,
       "matches: a NUL after the name is part of it");
    ok(match("t.caf\xC3\xA9", "s", "t", "caf\xC3\xA9"), "matches: non-ASCII bytes as they are");
}

void strictest()
{
    std::vector<masking::Rule> rules = {
        rule("users.*", Action::hash),
        rule("users.email", Action::mask),
        rule("public.users.ssn", Action::drop),
        rule("*.ssn", Action::null),
    };
    is(masking::action_for({}, "s", "t", "c"), Action::none, "action_for: no rules, none");
    is(masking::action_for(rules, "public", "orders", "id"), Action::none,
       "action_for: no rule matches, none");
    is(masking::action_for(rules, "public", "users", "name"), Action::hash,
       "action_for: one rule matches");
    is(masking::action_for(rules, "public", "users", "email"), Action::mask,
       "action_for: mask beats hash");
    is(masking::action_for(rules, "public", "users", "ssn"), Action::drop,
       "action_for: drop beats null and hash");
    is(masking::action_for(rules, "audit", "users", "ssn"), Action::null,
       "action_for: in another schema null beats hash");
    is(masking::action_for(rules, "audit", "orders", "SSN"), Action::null,
       "action_for: case-insensitive");
    std::vector<masking::Rule> reversed(rules.rbegin(), rules.rend());
    is(masking::action_for(reversed, "public", "users", "ssn"), Action::drop,
       "action_for: the order of rules does not matter");
    std::vector<masking::Rule> none_rule = {rule("t.c", Action::none)};
    is(masking::action_for(none_rule, "s", "t", "c"), Action::none,
       "action_for: a rule with action none changes nothing");
}

} // namespace

int main()
{
    actions();
    patterns();
    matching();
    strictest();
    return tap::done();
}
