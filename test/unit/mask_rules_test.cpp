// Tests of src/rules/mask_rules.cpp: action names and their order of strictness, what a value
// shows under each action that keeps text, column patterns
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
    is(masking::action_name(Action::none), "none", "action_name: none");
    is(masking::action_name(Action::hash), "hash", "action_name: hash");
    is(masking::action_name(Action::mask), "mask", "action_name: mask");
    is(masking::action_name(Action::mask_email), "mask_email", "action_name: mask_email");
    is(masking::action_name(Action::null), "null", "action_name: null");
    is(masking::action_name(Action::drop), "drop", "action_name: drop");
    is(masking::action_name(masking::partial_action(2, 4)), "partial(2,4)",
       "action_name: partial(2,4)");
    is(masking::action_name(static_cast<Action>(42)), "drop",
       "action_name: a value no action has is taken for drop");
    is(masking::kind_of(static_cast<Action>(static_cast<int>(Action::partial) + 5000)),
       Action::drop, "kind_of: a partial value out of range is drop");
    is(masking::kind_of(masking::partial_action(0, 0)), Action::partial, "kind_of: partial(0,0)");
    ok(Action::none < masking::partial_action(31, 31) &&
           masking::partial_action(0, 0) < Action::mask_email &&
           Action::mask_email < Action::hash && Action::hash < Action::mask &&
           Action::mask < Action::null && Action::null < Action::drop,
       "strictness: none < partial < mask_email < hash < mask < null < drop");
    ok(masking::partial_action(3, 3) < masking::partial_action(1, 4) &&
           masking::partial_action(2, 3) < masking::partial_action(1, 4) &&
           masking::partial_action(1, 0) < masking::partial_action(0, 0),
       "strictness: of two partials the one showing fewer characters (then fewer first) wins");
    // Every pair of counts survives the encoding.
    bool round_trip = true;
    for (int lead = 0; lead <= masking::partial_max; lead++)
        for (int trail = 0; trail <= masking::partial_max; trail++) {
            const Action a = masking::partial_action(lead, trail);
            round_trip = round_trip && masking::partial_lead(a) == lead &&
                         masking::partial_trail(a) == trail &&
                         masking::kind_of(a) == Action::partial;
        }
    ok(round_trip, "partial_action: every (lead, trail) reads back");
    is(masking::action_name(masking::partial_action(99, -3)), "partial(31,0)",
       "partial_action clamps its counts");

    const struct {
        const char *text;
        Action action;
    } good[] = {{"hash", Action::hash},
                {"mask", Action::mask},
                {"null", Action::null},
                {"drop", Action::drop},
                {"HASH", Action::hash},
                {"Mask", Action::mask},
                {"nULL", Action::null},
                {"DROP", Action::drop},
                {"mask_email", Action::mask_email},
                {"MASK_EMAIL", Action::mask_email},
                {"partial(2,4)", masking::partial_action(2, 4)},
                {"Partial( 0 , 31 )", masking::partial_action(0, 31)},
                {"partial(1,0)", masking::partial_action(1, 0)}};
    for (const auto &g : good) {
        Action a = Action::none;
        ok(masking::parse_action(g.text, a) && a == g.action,
           std::string("parse_action: ") + g.text);
    }
    const char *bad[] = {"none",
                         "",
                         " hash",
                         "hash ",
                         "hashes",
                         "has",
                         "h*",
                         "mask,drop",
                         "nul",
                         "0",
                         "4",
                         "partial",
                         "partial()",
                         "partial(2)",
                         "partial(2,4",
                         "partial(2,4) ",
                         "partial(2,4,1)",
                         "partial(32,0)",
                         "partial(-1,2)",
                         "partial(002,1)",
                         "partial(a,b)",
                         "partial(2,4)x",
                         "mask-email",
                         "email"};
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
    for (Action x : {Action::hash, Action::mask, Action::mask_email, Action::null, Action::drop,
                     masking::partial_action(0, 0), masking::partial_action(31, 31),
                     masking::partial_action(3, 7)}) {
        Action y = Action::none;
        all = all && masking::parse_action(masking::action_name(x), y) && y == x;
    }
    ok(all, "parse_action(action_name(a)) == a");
}

// UTF-8's character lengths, as pg_mblen gives them in a UTF-8 database.
int utf8_length(const char *s)
{
    const unsigned char c = static_cast<unsigned char>(*s);
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

// What a value shows, put together as a writer does.
std::string shown(Action a, const std::string &text, bool padded = false)
{
    const masking::Shown s = masking::shown_text(a, text, padded, utf8_length);
    return text.substr(0, s.head) + masking::filler + text.substr(s.tail_from, s.tail);
}

void shown_texts()
{
    const std::string url = "postgres://admin:S3cretPW@10.0.0.5:5432/prod";
    is(shown(Action::mask, url), "p***", "mask: a URL with credentials shows its first character");
    is(shown(Action::mask, "jane@example.com"), "j***", "mask: an e-mail keeps no domain");
    is(shown(Action::mask, ""), "***", "mask: empty text is the filler");
    is(shown(Action::mask, "\xC3\xA9t\xC3\xA9"), "\xC3\xA9***",
       "mask: a first character of two bytes is kept whole");
    is(shown(Action::mask, "ab        ", true), "a***", "mask: char(n)'s padding is not shown");
    is(shown(Action::mask, "          ", true), "***", "mask: a blank char(n) is the filler");
    is(shown(Action::mask, std::string(100000, 'x')), "x***",
       "mask: the filler does not grow with the value");

    is(shown(Action::mask_email, "jane@example.com"), "j***@example.com",
       "mask_email: an e-mail address keeps its domain");
    is(shown(Action::mask_email, "jane.doe+tag@mail.corp.example.org"),
       "j***@mail.corp.example.org", "mask_email: dots and + in the local part");
    is(shown(Action::mask_email, "jane@example.com    ", true), "j***@example.com",
       "mask_email: char(n)'s padding is not part of the domain");
    const char *not_email[] = {
        "postgres://admin:S3cretPW@10.0.0.5:5432/prod",
        "admin:pw@host.example.com",
        "a@b@example.com",
        "@example.com",
        "jane@",
        "jane@localhost",
        "jane@example..com",
        "jane@-example.com",
        "jane@example.com ",
        " jane@example.com",
        "jane@exa mple.com",
        "jane@example.com/path",
        "jane@example.com:25",
        "secret text with an @ in it",
    };
    for (const char *t : not_email)
        is(shown(Action::mask_email, t), std::string(1, t[0]) + "***",
           "mask_email: not an e-mail address, shown as mask: " + tap::show(std::string(t)));
    ok(masking::is_email_address("j@m\xC3\xBCller.example"),
       "is_email_address: a domain with non-ASCII letters");
    ok(!masking::is_email_address(std::string(65, 'a') + "@example.com"),
       "is_email_address: a local part over 64 bytes");
    ok(!masking::is_email_address("a@" + std::string(64, 'b') + ".com"),
       "is_email_address: a label over 63 bytes");

    const Action p24 = masking::partial_action(2, 4);
    is(shown(p24, "4111111111111111"), "41***1111", "partial(2,4): a card number");
    is(shown(p24, "abcdefg"), "ab***defg", "partial(2,4): one character hidden");
    is(shown(p24, "abcdef"), "***", "partial(2,4): nothing would be hidden, the filler alone");
    is(shown(p24, ""), "***", "partial(2,4): empty text");
    is(shown(p24, "abcdefgh    ", true), "ab***efgh", "partial(2,4): char(n)'s padding is trimmed");
    is(shown(p24, "\xC3\xA9\xC3\xA8xyz\xE2\x82\xAC\xC3\xA0\xC3\xB9\xC3\xAE"),
       "\xC3\xA9\xC3\xA8***\xE2\x82\xAC\xC3\xA0\xC3\xB9\xC3\xAE",
       "partial(2,4): counts characters, not bytes");
    is(shown(masking::partial_action(0, 4), "123-45-6789"), "***6789",
       "partial(0,4): the end only");
    is(shown(masking::partial_action(3, 0), "123-45-6789"), "123***",
       "partial(3,0): the start only");
    is(shown(masking::partial_action(0, 0), "anything"), "***", "partial(0,0): the filler alone");
    is(shown(masking::partial_action(31, 31), std::string(63, 'a')),
       std::string(31, 'a') + "***" + std::string(31, 'a'), "partial(31,31): the largest counts");
    // A truncated multi-byte character at the end is never read past.
    is(shown(masking::partial_action(1, 1), "abc\xE2\x82"), "a***\xE2\x82",
       "partial: a character cut short at the end stays within the value");
    is(shown(Action::hash, "x").size(), std::string("***").size(),
       "shown_text of an action that keeps no text shows the filler alone");
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
    shown_texts();
    patterns();
    matching();
    strictest();
    return tap::done();
}
