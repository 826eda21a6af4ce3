// Tests of src/rules/param_binding.cpp: a call's parameters against a saved query's placeholders
// and their rules. Every problem at once, each parameter named once; from_claim parameters from the
// caller's token only; defaults; the pattern check last.
#include "rules/param_binding.hpp"
#include "tap.hpp"

#include <string>
#include <unordered_map>
#include <vector>

namespace {

using tap::is;
using tap::ok;

std::vector<param_rules::Rule> rules_of(const std::string &json)
{
    std::vector<param_rules::Rule> rules;
    std::string error;
    if (!param_rules::parse(json, rules, error))
        tap::diag("test setup: " + error);
    return rules;
}

struct Bound {
    ApiError error;
    std::vector<BoundParam> values;
    int pattern_calls = 0;
};

Bound bind(const std::vector<std::string> &names, const std::string &rules,
           const std::vector<CallParam> &given,
           const std::unordered_map<std::string, std::string> *claims = nullptr)
{
    Bound b;
    b.error = bind_params(names, rules_of(rules), claims, given, b.values,
                          [&b](const std::string &pattern, const std::string &value) {
                              b.pattern_calls++;
                              return value.find(pattern) != std::string::npos;
                          });
    return b;
}

// "name: problem; ..." in the error's order.
std::string problems(const ApiError &e)
{
    std::string out;
    for (const auto &p : e.errors)
        out += (out.empty() ? "" : "; ") + p.first + ": " + p.second;
    return out;
}

CallParam given(const std::string &name, const std::string &value, bool is_null = false)
{
    CallParam p;
    p.name = name;
    p.value = value;
    p.is_null = is_null;
    return p;
}

void basics()
{
    Bound b = bind({"a", "b"}, "{}", {given("b", "2"), given("a", "1")});
    ok(!b.error.set() && b.values.size() == 2 && b.values[0].value == "1" &&
           b.values[1].value == "2" && !b.values[0].is_null,
       "given parameters bound in placeholder order");
    b = bind({"a"}, "{}", {given("a", "", true)});
    is(std::string(b.error.code) + " " + problems(b.error),
       std::string("param_invalid a: must not be null"),
       "null for a parameter without rules (required): refused");
    b = bind({"a", "b"}, "{}", {});
    is(std::string(b.error.code) + " " + problems(b.error),
       std::string("param_required a: is required; b: is required"),
       "only missing: param_required naming each");
    b = bind({"a"}, "{}", {given("a", "1"), given("x", "2")});
    is(std::string(b.error.code) + " " + problems(b.error),
       std::string("param_invalid x: is not a parameter of this query"), "an unknown name");
    b = bind({"a"}, "{}", {given("a", "1"), given("a", "2"), given("a", "3")});
    is(problems(b.error), std::string("a: is given more than once"),
       "a name given three times is named once");
    std::vector<CallParam> many;
    for (int i = 0; i < 5000; i++)
        many.push_back(given("", ""));
    b = bind({"a"}, "{}", many);
    is(problems(b.error), std::string("a: is required; : is not a parameter of this query"),
       "5000 empty names: each problem once");
    b = bind({"a"}, "{}", {given("a", std::string("x\0y", 3))});
    is(problems(b.error), std::string("a: must not contain a NUL byte"), "a NUL byte");
}

void rules()
{
    Bound b = bind({"n"}, "{\"n\":{\"type\":\"integer\",\"default\":7}}", {});
    ok(!b.error.set() && b.values[0].value == "7", "a default when not given");
    b = bind({"n"}, "{\"n\":{\"type\":\"integer\",\"required\":false}}", {});
    ok(!b.error.set() && b.values[0].is_null, "an optional parameter without default is NULL");
    b = bind({"n"}, "{\"n\":{\"type\":\"integer\",\"required\":false}}", {given("n", "", true)});
    ok(!b.error.set() && b.values[0].is_null, "and takes null");
    b = bind({"n"}, "{\"n\":{\"type\":\"integer\",\"nullable\":true}}", {given("n", "", true)});
    ok(!b.error.set() && b.values[0].is_null, "a required parameter marked nullable takes null");
    b = bind({"n"}, "{\"n\":{\"type\":\"integer\"}}", {given("n", "", true)});
    is(problems(b.error), std::string("n: must not be null"), "a required integer refuses null");
    b = bind({"n"}, "{\"n\":{\"type\":\"integer\",\"default\":7}}", {given("n", "", true)});
    is(problems(b.error), std::string("n: must not be null"),
       "so does one with a default that is not null");
    b = bind({"n"}, "{\"n\":{\"default\":null}}", {given("n", "", true)});
    ok(!b.error.set() && b.values[0].is_null, "a null default takes null");
    b = bind({"n"}, "{\"n\":{\"type\":\"integer\"}}", {given("n", "x"), given("n", "y")});
    is(problems(b.error), std::string("n: must be an integer"),
       "a value breaking its rule and repeated: one problem, the first found");
    b = bind({"s"}, "{\"s\":{\"pattern\":\"ok\"}}", {given("s", "not this")});
    is(problems(b.error), std::string("s: does not match the required pattern"),
       "the pattern is checked");
    b = bind({"s"}, "{\"s\":{\"pattern\":\"ok\",\"max_length\":3}}", {given("s", "too long")});
    ok(b.pattern_calls == 0 && problems(b.error).find("s: ") == 0,
       "the pattern is not run on a value that already broke a rule");
}

void claims()
{
    const std::string r = "{\"u\":{\"from_claim\":\"sub\"}}";
    Bound b = bind({"u"}, r, {});
    is(std::string(b.error.code), std::string("sign_in_required"), "from_claim without a token");
    std::unordered_map<std::string, std::string> c = {{"sub", "alice"}};
    b = bind({"u"}, r, {}, &c);
    ok(!b.error.set() && b.values[0].value == "alice", "from_claim bound from the token");
    std::unordered_map<std::string, std::string> none;
    b = bind({"u"}, r, {}, &none);
    is(std::string(b.error.code), std::string("claim_missing"), "a token without the claim");
    b = bind({"u"}, r, {given("u", "mallory")}, &c);
    is(std::string(b.error.code) + " " + problems(b.error),
       std::string("param_from_claim u: comes from the caller's token and cannot be sent"),
       "a from_claim parameter sent by the caller");
}

} // namespace

int main()
{
    basics();
    rules();
    claims();
    return tap::done();
}
