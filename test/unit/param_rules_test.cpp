// Tests of src/rules/param_rules.cpp: parsing a saved query's parameter rules (every rule, every
// way to get one wrong, the message naming the parameter) and checking values against them.
#include "rules/param_rules.hpp"
#include "tap.hpp"

#include <string>
#include <vector>

namespace {

using param_rules::Rule;
using param_rules::Type;
using tap::is;
using tap::like;
using tap::ok;

// The one rule of {"p": spec}; a failed parse is reported and gives a default Rule.
Rule one(const std::string &spec)
{
    std::vector<Rule> rules;
    std::string error;
    if (!param_rules::parse("{\"p\":" + spec + "}", rules, error) || rules.size() != 1) {
        tap::diag("test setup: " + spec + ": " + error);
        return Rule();
    }
    return rules[0];
}

// {"p": spec} is refused with a message naming p and the problem.
void refused(const std::string &spec, const std::string &why, const std::string &name)
{
    std::vector<Rule> rules;
    std::string error;
    bool parsed = param_rules::parse("{\"p\":" + spec + "}", rules, error);
    ok(!parsed && error.find("parameter \"p\": ") == 0 && error.find(why) != std::string::npos,
       name, parsed ? "accepted" : "message " + tap::show(error));
}

void documents()
{
    std::vector<Rule> rules;
    std::string error;
    ok(param_rules::parse("{}", rules, error) && rules.empty(), "parse: {} has no rules");
    const char *not_objects[] = {"",  "[]",   "null",     "\"integer\"", "42",
                                 "{", "{}{}", "{\"a\":}", "{'a':1}",     "{\"a\":\"integer\",}"};
    for (const char *text : not_objects) {
        rules.clear();
        bool parsed = param_rules::parse(text, rules, error);
        ok(!parsed && error == "parameter rules must be a JSON object keyed by parameter name",
           "parse refuses " + tap::show(std::string(text)), error);
    }
    rules.clear();
    ok(!param_rules::parse("{\"a\\u0000b\":\"integer\"}", rules, error),
       "parse refuses a parameter name with a NUL");
    rules.clear();
    ok(!param_rules::parse(std::string("{\"a\":\"integer\"}\0", 16), rules, error),
       "parse refuses a NUL after the object");

    rules.clear();
    ok(param_rules::parse(
           "{\"b\":\"integer\",\"a\":{\"type\":\"string\"},\"c\":{},\"\xC3\xA9\":\"bool\"}", rules,
           error),
       "parse: four parameters", error);
    ok(rules.size() == 4 && rules[0].name == "b" && rules[1].name == "a" && rules[2].name == "c" &&
           rules[3].name == "\xC3\xA9",
       "parse: parameters in the order written");
    ok(rules.size() == 4 && rules[0].type == Type::integer && rules[1].type == Type::string &&
           rules[2].type == Type::any && rules[3].type == Type::boolean,
       "parse: their types");

    const Rule *r = param_rules::find(rules, "a");
    ok(r != nullptr && r->name == "a" && r == &rules[1], "find: a rule by name");
    is(param_rules::find(rules, "A"), nullptr, "find: names are case-sensitive");
    is(param_rules::find(rules, "z"), nullptr, "find: no such rule");
    is(param_rules::find({}, "a"), nullptr, "find: no rules");
}

void types()
{
    const struct {
        const char *name;
        Type type;
    } names[] = {{"integer", Type::integer}, {"int", Type::integer},     {"number", Type::number},
                 {"float", Type::number},    {"string", Type::string},   {"str", Type::string},
                 {"text", Type::string},     {"boolean", Type::boolean}, {"bool", Type::boolean}};
    for (const auto &n : names) {
        std::vector<Rule> rules;
        std::string error;
        std::string shorthand = "{\"p\":\"" + std::string(n.name) + "\"}";
        ok(param_rules::parse(shorthand, rules, error) && rules.size() == 1 &&
               rules[0].type == n.type && rules[0].required,
           std::string("type name ") + n.name + ", shorthand: that type, required");
        rules.clear();
        std::string full = "{\"p\":{\"type\":\"" + std::string(n.name) + "\"}}";
        ok(param_rules::parse(full, rules, error) && rules.size() == 1 && rules[0].type == n.type,
           std::string("type name ") + n.name + " in an object");
    }
    Rule r = one("{}");
    ok(r.name == "p" && r.type == Type::any && r.required && !r.has_default &&
           r.enum_values.empty() && !r.has_min && !r.has_max && r.min_length == -1 &&
           r.max_length == -1 && r.pattern.empty() && r.description.empty() && r.from_claim.empty(),
       "an empty object: any type, required, nothing else");

    std::vector<Rule> rules;
    std::string error;
    ok(!param_rules::parse("{\"p\":\"bigint\"}", rules, error) &&
           error == "parameter \"p\": unknown type \"bigint\" (integer, number, string or boolean)",
       "shorthand: an unknown type, named in the message", error);
    refused("\"Integer\"", "unknown type \"Integer\"", "shorthand: type names are case-sensitive");
    refused("\"\"", "unknown type \"\"", "shorthand: an empty type");
    refused("{\"type\":\"uuid\"}", "type must be integer, number, string or boolean",
            "an unknown type in an object");
    refused("{\"type\":1}", "type must be", "a type that is not a string");
    refused("42", "rules must be a JSON object or a type name", "rules as a number");
    refused("null", "rules must be a JSON object or a type name", "rules as null");
    refused("[\"integer\"]", "rules must be a JSON object or a type name", "rules as an array");
    refused("true", "rules must be a JSON object or a type name", "rules as true");
    refused("{\"typ\":\"integer\"}", "unknown rule \"typ\"", "an unknown rule, named");
    refused("{\"Type\":\"integer\"}", "unknown rule \"Type\"", "rule names are case-sensitive");
}

void required_and_defaults()
{
    ok(!one("{\"required\":false}").required, "required false");
    ok(one("{\"required\":true}").required, "required true");
    refused("{\"required\":\"yes\"}", "required must be true or false", "required as a string");
    refused("{\"required\":1}", "required must be true or false", "required as a number");
    refused("{\"nullable\":\"yes\"}", "nullable must be true or false", "nullable as a string");

    Rule r = one("{\"type\":\"integer\",\"default\":5}");
    ok(r.has_default && !r.default_is_null && r.default_text == "5" && !r.required,
       "an integer default: its text, not required");
    r = one("{\"default\":null}");
    ok(r.has_default && r.default_is_null && !r.required, "a null default");
    r = one("{\"default\":\"x\\u00e9\"}");
    ok(r.default_text == "x\xC3\xA9", "a string default, decoded");
    r = one("{\"default\":\"\"}");
    ok(r.has_default && !r.default_is_null && r.default_text.empty(), "an empty string default");
    is(one("{\"default\":true}").default_text, "true", "a true default");
    is(one("{\"default\":false}").default_text, "false", "a false default");
    is(one("{\"default\":-12}").default_text, "-12", "a negative integer default");
    is(one("{\"default\":9223372036854775807}").default_text, "9223372036854775807",
       "the largest int64 default");
    is(one("{\"default\":1.5}").default_text, "1.5", "a real default");
    is(one("{\"default\":-0.25}").default_text, "-0.25", "a negative real default");
    ok(!one("{\"default\":1,\"required\":false}").required, "a default with required false");
    refused("{\"default\":1,\"required\":true}", "a parameter with a default cannot be required",
            "a default with required true");
    refused("{\"required\":true,\"default\":1}", "a parameter with a default cannot be required",
            "required true, then a default");
    refused("{\"default\":{}}", "default must be a string, a number, a boolean or null",
            "an object default");
    refused("{\"default\":[1]}", "default must be a string, a number, a boolean or null",
            "an array default");
    refused("{\"type\":\"integer\",\"default\":\"abc\"}", "the default must be an integer",
            "a default that is not of the type");
    Rule ex = one("{\"type\":\"integer\",\"min\":1,\"example\":42}");
    ok(ex.has_example && ex.example_text == "42" && ex.required, "an example (still required)");
    refused("{\"type\":\"integer\",\"min\":1,\"example\":0}", "the example must be at least 1",
            "an example that breaks a rule");
    refused("{\"example\":null}", "example must be a string, a number or a boolean",
            "a null example");
    refused("{\"type\":\"integer\",\"default\":1.5}", "the default must be an integer",
            "a real default for an integer");
    refused("{\"type\":\"boolean\",\"default\":\"yes\"}", "the default must be true or false",
            "a boolean default that is not one");
    refused("{\"type\":\"integer\",\"max\":3,\"default\":5}", "the default must be at most 3",
            "a default above max");
    refused("{\"enum\":[\"a\",\"b\"],\"default\":\"c\"}", "the default must be one of: a, b",
            "a default outside the enum");
    refused("{\"max_length\":2,\"default\":\"abc\"}", "the default must be at most 2 characters",
            "a default longer than max_length");
    ok(one("{\"type\":\"integer\",\"max\":3,\"default\":null}").default_is_null,
       "a null default is not checked against the rules");
}

void enums()
{
    Rule r = one("{\"enum\":[\"a\",1,-2,true,false,2.5,\"\"]}");
    std::vector<std::string> expected = {"a", "1", "-2", "true", "false", "2.5", ""};
    ok(r.enum_values == expected, "enum values as text, in order");
    refused("{\"enum\":[]}", "enum must be a non-empty array", "an empty enum");
    refused("{\"enum\":\"a\"}", "enum must be a non-empty array", "an enum that is a string");
    refused("{\"enum\":{\"a\":1}}", "enum must be a non-empty array", "an enum that is an object");
    refused("{\"enum\":[null]}", "enum values must be strings, numbers or booleans",
            "null in an enum");
    refused("{\"enum\":[\"a\",[\"b\"]]}", "enum values must be strings, numbers or booleans",
            "an array in an enum");
    refused("{\"enum\":[{}]}", "enum values must be strings, numbers or booleans",
            "an object in an enum");
}

// Real numbers in rules are kept as the shortest text that reads back as the same double, and a
// number parameter matches an enum value by value.
void real_numbers()
{
    Rule r = one("{\"type\":\"number\",\"enum\":[0.1,1.0,2.5e3]}");
    std::vector<std::string> expected = {"0.1", "1", "2500"};
    ok(r.enum_values == expected, "reals kept as their shortest text",
       r.enum_values.size() == 3 ? r.enum_values[0] : "");
    is(param_rules::check(r, "0.1"), std::string(), "0.1 is the enum's 0.1");
    is(param_rules::check(r, "1.0"), std::string(), "1.0 is the enum's 1");
    is(param_rules::check(r, "2.5e3"), std::string(), "2.5e3 is the enum's 2500");
    is(param_rules::check(r, "0.2"), std::string("must be one of: 0.1, 1, 2500"), "0.2 is not");
    Rule d = one("{\"type\":\"number\",\"default\":0.1}");
    is(d.default_text, std::string("0.1"), "a real default is bound as written");
    Rule n = one("{\"type\":\"number\"}");
    for (const char *bad : {"0x1A", " 1", "1 ", "inf", "nan", "1e999", "+1", ".5", "01", "1.", ""})
        is(param_rules::check(n, bad), std::string("must be a number"),
           std::string("a number in JSON's grammar only: ") + tap::show(std::string(bad)));
    for (const char *good : {"0", "-0", "1.5", "-2e-3", "1E10"})
        is(param_rules::check(n, good), std::string(), std::string("a number: ") + good);
}

void bounds()
{
    Rule r = one("{\"type\":\"integer\",\"min\":1,\"max\":10}");
    ok(r.has_min && r.has_max && r.min == 1 && r.max == 10, "min and max");
    r = one("{\"type\":\"number\",\"min\":-1.5}");
    ok(r.has_min && !r.has_max && r.min == -1.5, "a real min, no max");
    r = one("{\"min\":3,\"max\":3}");
    ok(r.has_min && r.has_max && r.type == Type::any, "min equal to max, any type");
    refused("{\"min\":\"1\"}", "min must be a number", "min as a string");
    refused("{\"max\":null}", "max must be a number", "max as null");
    refused("{\"min\":5,\"max\":4}", "min is greater than max", "min above max");
    refused("{\"type\":\"string\",\"min\":1}", "min and max apply to numbers only",
            "min on a string");
    refused("{\"type\":\"boolean\",\"max\":1}", "min and max apply to numbers only",
            "max on a boolean");

    r = one("{\"type\":\"string\",\"min_length\":2,\"max_length\":5}");
    ok(r.min_length == 2 && r.max_length == 5, "min_length and max_length");
    r = one("{\"min_length\":0,\"max_length\":0}");
    ok(r.min_length == 0 && r.max_length == 0, "lengths of 0, any type");
    refused("{\"min_length\":-1}", "min_length must be a non-negative integer",
            "a negative min_length");
    refused("{\"max_length\":1.5}", "max_length must be a non-negative integer",
            "a real max_length");
    refused("{\"max_length\":\"3\"}", "max_length must be a non-negative integer",
            "max_length as a string");
    refused("{\"min_length\":3,\"max_length\":2}", "min_length is greater than max_length",
            "min_length above max_length");
    refused("{\"type\":\"integer\",\"max_length\":3}",
            "min_length and max_length apply to text only", "max_length on an integer");
    refused("{\"type\":\"number\",\"min_length\":1}",
            "min_length and max_length apply to text only", "min_length on a number");
    refused("{\"type\":\"boolean\",\"max_length\":5}",
            "min_length and max_length apply to text only", "max_length on a boolean");
}

void text_rules()
{
    is(one("{\"pattern\":\"^[a-z]+$\"}").pattern, "^[a-z]+$", "pattern kept");
    is(one("{\"pattern\":\"" + std::string(500, 'a') + "\"}").pattern.size(), 500u,
       "a pattern of 500 characters");
    refused("{\"pattern\":\"" + std::string(501, 'a') + "\"}",
            "pattern must be a regular expression of 1 to 500 characters",
            "a pattern of 501 characters");
    refused("{\"pattern\":\"\"}", "pattern must be a regular expression of 1 to 500 characters",
            "an empty pattern");
    refused("{\"pattern\":5}", "pattern must be a regular expression",
            "a pattern that is a number");
    is(one("{\"description\":\"The account id\"}").description, "The account id",
       "description kept");
    refused("{\"description\":1}", "description must be a string",
            "a description that is a number");

    Rule r = one("{\"from_claim\":\"sub\"}");
    ok(r.from_claim == "sub" && r.required, "from_claim: required");
    r = one("{\"from_claim\":\"tenant\",\"required\":true}");
    ok(r.from_claim == "tenant" && r.required, "from_claim with required true");
    refused("{\"from_claim\":\"\"}", "from_claim must name a token claim", "an empty from_claim");
    refused("{\"from_claim\":7}", "from_claim must name a token claim", "a from_claim number");
    refused("{\"from_claim\":\"sub\",\"required\":false}",
            "a from_claim parameter is always required and has no default",
            "from_claim, not required");
    refused("{\"from_claim\":\"sub\",\"default\":\"x\"}",
            "a from_claim parameter is always required and has no default",
            "from_claim with a default");
    refused("{\"from_claim\":\"sub\",\"default\":null}",
            "a from_claim parameter is always required and has no default",
            "from_claim with a null default");
}

void checks()
{
    Rule any = one("{}");
    is(param_rules::check(any, ""), "", "any: the empty string passes");
    is(param_rules::check(any, std::string("a\0b", 3)), "",
       "any: a NUL passes (refused elsewhere)");

    Rule integer = one("\"integer\"");
    for (const char *v : {"0", "42", "-42", "+42", "007", "99999999999999999999999999"})
        is(param_rules::check(integer, v), "", std::string("integer accepts ") + v);
    for (const char *v : {"", "-", "+", "4.2", "1e3", " 42", "42 ", "0x1F", "4_2", "--1", "1-",
                          "\xEF\xBC\x94\xEF\xBC\x92", "NaN", "true"})
        is(param_rules::check(integer, v), "must be an integer",
           "integer refuses " + tap::show(std::string(v)));
    is(param_rules::check(integer, std::string("4\0002", 3)), "must be an integer",
       "integer refuses a NUL between digits");

    Rule number = one("\"number\"");
    for (const char *v : {"0", "-1.5", "1e10", "1E-10", "123456789012345678901234567890"})
        is(param_rules::check(number, v), "", std::string("number accepts ") + v);
    for (const char *v : {"", "abc", "1.5x", "1,5", "inf", "-Infinity", "NaN"})
        is(param_rules::check(number, v), "must be a number",
           "number refuses " + tap::show(std::string(v)));
    is(param_rules::check(number, std::string("1\0", 2)), "must be a number",
       "number refuses a NUL after the digits");

    Rule boolean = one("\"boolean\"");
    is(param_rules::check(boolean, "true"), "", "boolean accepts true");
    is(param_rules::check(boolean, "false"), "", "boolean accepts false");
    for (const char *v : {"TRUE", "True", "1", "0", "t", "yes", "", " true"})
        is(param_rules::check(boolean, v), "must be true or false",
           "boolean refuses " + tap::show(std::string(v)));

    Rule text = one("\"string\"");
    is(param_rules::check(text, "1; DROP TABLE x"), "", "string accepts anything");

    Rule e = one("{\"type\":\"string\",\"enum\":[\"red\",\"green\"]}");
    is(param_rules::check(e, "red"), "", "enum: a listed value");
    is(param_rules::check(e, "Red"), "must be one of: red, green", "enum: case matters");
    is(param_rules::check(e, ""), "must be one of: red, green", "enum: the empty string");
    is(param_rules::check(e, "red "), "must be one of: red, green", "enum: a trailing space");
    Rule ei = one("{\"type\":\"integer\",\"enum\":[1,2]}");
    is(param_rules::check(ei, "2"), "", "integer enum: a listed value");
    is(param_rules::check(ei, "3"), "must be one of: 1, 2", "integer enum: another value");
    is(param_rules::check(ei, "x"), "must be an integer", "integer enum: the type comes first");

    Rule range = one("{\"type\":\"integer\",\"min\":1,\"max\":10}");
    is(param_rules::check(range, "1"), "", "range: min itself");
    is(param_rules::check(range, "10"), "", "range: max itself");
    is(param_rules::check(range, "0"), "must be at least 1", "range: below min");
    is(param_rules::check(range, "11"), "must be at most 10", "range: above max");
    is(param_rules::check(range, "-99999999999999999999"), "must be at least 1",
       "range: far below min");
    is(param_rules::check(range, "99999999999999999999"), "must be at most 10",
       "range: far above max");
    Rule real = one("{\"type\":\"number\",\"min\":-0.5,\"max\":2.25}");
    is(param_rules::check(real, "-0.5"), "", "real range: min itself");
    is(param_rules::check(real, "-0.51"), "must be at least -0.5", "real range: below min");
    is(param_rules::check(real, "2.26"), "must be at most 2.25", "real range: above max");
    Rule any_range = one("{\"min\":0}");
    is(param_rules::check(any_range, "abc"), "must be a number",
       "any type with min: a value that is no number");
    is(param_rules::check(any_range, "5"), "", "any type with min: a number in range");
    Rule big = one("{\"type\":\"number\",\"max\":1e20}");
    is(param_rules::check(big, "1e21"), "must be at most 1e+20", "a large max in the message");

    Rule len = one("{\"type\":\"string\",\"min_length\":2,\"max_length\":3}");
    is(param_rules::check(len, "ab"), "", "length: at min");
    is(param_rules::check(len, "abc"), "", "length: at max");
    is(param_rules::check(len, "a"), "must be at least 2 characters", "length: below min");
    is(param_rules::check(len, "abcd"), "must be at most 3 characters", "length: above max");
    is(param_rules::check(len, ""), "must be at least 2 characters", "length: empty");
    is(param_rules::check(len, "\xC3\xA9\xC3\xA9\xC3\xA9"), "",
       "length: three 2-byte characters are 3 characters");
    is(param_rules::check(len, "\xF0\x9F\x98\x80\xF0\x9F\x98\x80"), "",
       "length: two 4-byte characters are 2 characters");
    is(param_rules::check(len, "\xE6\x97\xA5"), "must be at least 2 characters",
       "length: one 3-byte character is 1 character");
    is(param_rules::check(len, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA7"),
       "must be at most 3 characters", "length: four CJK characters");
    is(param_rules::check(len, std::string("a\0b", 3)), "", "length: a NUL is a character");
    Rule zero = one("{\"max_length\":0}");
    is(param_rules::check(zero, ""), "", "max_length 0: the empty string");
    is(param_rules::check(zero, "a"), "must be at most 0 characters",
       "max_length 0: one character");
    Rule huge = one("{\"max_length\":1000000}");
    is(param_rules::check(huge, std::string(1000001, 'x')), "must be at most 1000000 characters",
       "max_length: a value of 1000001 characters");

    Rule order = one("{\"type\":\"integer\",\"enum\":[5,50],\"max\":10}");
    is(param_rules::check(order, "7"), "must be one of: 5, 50", "the enum comes before max");
    is(param_rules::check(order, "50"), "must be at most 10", "max after the enum");
    Rule pattern = one("{\"pattern\":\"^a$\"}");
    is(param_rules::check(pattern, "zzz"), "", "check leaves the pattern to the caller");
}

} // namespace

int main()
{
    documents();
    types();
    required_and_defaults();
    enums();
    real_numbers();
    bounds();
    text_rules();
    checks();
    return tap::done();
}
