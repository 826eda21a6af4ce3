// Parameter rules: see param_rules.hpp.
#include "rules/param_rules.hpp"

#include <jansson.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace param_rules {

namespace {

struct JsonDeleter {
    void operator()(json_t *j) const { json_decref(j); }
};

bool parse_type(const char *t, Type &out)
{
    static const struct {
        const char *name;
        Type type;
    } names[] = {{"integer", Type::integer}, {"int", Type::integer},     {"number", Type::number},
                 {"float", Type::number},    {"string", Type::string},   {"str", Type::string},
                 {"text", Type::string},     {"boolean", Type::boolean}, {"bool", Type::boolean}};
    for (const auto &n : names)
        if (std::strcmp(t, n.name) == 0) {
            out = n.type;
            return true;
        }
    return false;
}

// The text form of a JSON scalar, as a request would send it.
bool scalar_text(json_t *v, std::string &out)
{
    char buf[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        out.assign(json_string_value(v), json_string_length(v));
        return true;
    case JSON_INTEGER:
        out = std::to_string(static_cast<long long>(json_integer_value(v)));
        return true;
    case JSON_REAL: {
        // The shortest text that reads back as the same double: 0.1 stays "0.1" (%.17g wrote
        // "0.10000000000000001", which no caller would send, and bound it as a default).
        // A whole number short enough to be exact is written without exponent (2.5e3 is "2500").
        const double d = json_real_value(v);
        if (d == std::floor(d) && std::fabs(d) < 1e15) {
            std::snprintf(buf, sizeof(buf), "%.0f", d);
        } else {
            for (int precision = 1; precision <= 17; precision++) {
                std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
                if (std::strtod(buf, nullptr) == d)
                    break;
            }
        }
        out = buf;
        return true;
    }
    case JSON_TRUE:
        out = "true";
        return true;
    case JSON_FALSE:
        out = "false";
        return true;
    default:
        return false;
    }
}

// JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (strtod alone also takes
// hexadecimal, leading spaces, "inf" and "nan").
bool is_json_number(const std::string &s)
{
    size_t i = 0;
    auto digits = [&] {
        size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9')
            i++;
        return i > start;
    };
    if (i < s.size() && s[i] == '-')
        i++;
    if (i < s.size() && s[i] == '0')
        i++;
    else if (!digits())
        return false;
    if (i < s.size() && s[i] == '.') {
        i++;
        if (!digits())
            return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < s.size() && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!digits())
            return false;
    }
    return i == s.size();
}

bool parse_number(const std::string &s, double &out)
{
    if (!is_json_number(s))
        return false;
    char *end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && std::isfinite(out);
}

size_t utf8_length(const std::string &s)
{
    size_t n = 0;
    for (unsigned char c : s)
        n += (c & 0xC0) != 0x80;
    return n;
}

// The values of "enum", as text; false when one is not a scalar.
bool parse_enum(json_t *v, std::vector<std::string> &out)
{
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        std::string text;
        if (!scalar_text(item, text))
            return false;
        out.push_back(text);
    }
    return true;
}

// One member of a parameter's rules object, read into r: the problem, or empty.
std::string parse_member(const std::string &k, json_t *v, Rule &r, bool &required_given)
{
    if (k == "type") {
        if (!json_is_string(v) || !parse_type(json_string_value(v), r.type))
            return "type must be integer, number, string or boolean";
    } else if (k == "required") {
        if (!json_is_boolean(v))
            return "required must be true or false";
        r.required = json_is_true(v);
        required_given = true;
    } else if (k == "nullable") {
        if (!json_is_boolean(v))
            return "nullable must be true or false";
        r.nullable = json_is_true(v);
    } else if (k == "example") {
        r.has_example = true;
        if (!scalar_text(v, r.example_text))
            return "example must be a string, a number or a boolean";
    } else if (k == "default") {
        r.has_default = true;
        if (json_is_null(v))
            r.default_is_null = true;
        else if (!scalar_text(v, r.default_text))
            return "default must be a string, a number, a boolean or null";
    } else if (k == "enum") {
        if (!json_is_array(v) || json_array_size(v) == 0)
            return "enum must be a non-empty array";
        if (!parse_enum(v, r.enum_values))
            return "enum values must be strings, numbers or booleans";
    } else if (k == "min" || k == "max") {
        if (!json_is_number(v))
            return k + " must be a number";
        (k == "min" ? r.min : r.max) = json_number_value(v);
        (k == "min" ? r.has_min : r.has_max) = true;
    } else if (k == "min_length" || k == "max_length") {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return k + " must be a non-negative integer";
        (k == "min_length" ? r.min_length : r.max_length) =
            static_cast<long>(json_integer_value(v));
    } else if (k == "pattern") {
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 500)
            return "pattern must be a regular expression of 1 to 500 characters";
        r.pattern = json_string_value(v);
    } else if (k == "description") {
        if (!json_is_string(v))
            return "description must be a string";
        r.description = json_string_value(v);
    } else if (k == "from_claim") {
        if (!json_is_string(v) || json_string_length(v) == 0)
            return "from_claim must name a token claim";
        r.from_claim = json_string_value(v);
    } else {
        return "unknown rule \"" + k + "\"";
    }
    return std::string();
}

// The rules of one parameter, read whole, against each other (a default makes the parameter
// optional): the problem, or empty.
std::string check_together(Rule &r, bool required_given)
{
    if (r.has_default && required_given && r.required)
        return "a parameter with a default cannot be required";
    if (r.has_default)
        r.required = false;
    if (!r.from_claim.empty() && (r.has_default || (required_given && !r.required)))
        return "a from_claim parameter is always required and has no default";
    if ((r.has_min || r.has_max) && (r.type == Type::string || r.type == Type::boolean))
        return "min and max apply to numbers only";
    if ((r.min_length >= 0 || r.max_length >= 0) && r.type != Type::any && r.type != Type::string)
        return "min_length and max_length apply to text only";
    if (r.has_min && r.has_max && r.min > r.max)
        return "min is greater than max";
    if (r.min_length >= 0 && r.max_length >= 0 && r.min_length > r.max_length)
        return "min_length is greater than max_length";
    if (r.has_default && !r.default_is_null) {
        std::string problem = check(r, r.default_text);
        if (!problem.empty())
            return "the default " + problem;
    }
    if (r.has_example) {
        std::string problem = check(r, r.example_text);
        if (!problem.empty())
            return "the example " + problem;
    }
    return std::string();
}

bool parse_one(const char *name, json_t *spec, Rule &r, std::string &error)
{
    r.name = name;
    auto fail = [&](const std::string &what) {
        error = "parameter \"" + r.name + "\": " + what;
        return false;
    };
    if (json_is_string(spec)) { // "aid": "integer" is short for {"type": "integer"}
        if (!parse_type(json_string_value(spec), r.type))
            return fail("unknown type \"" + std::string(json_string_value(spec)) +
                        "\" (integer, number, string or boolean)");
        return true;
    }
    if (!json_is_object(spec))
        return fail("rules must be a JSON object or a type name");
    bool required_given = false;
    const char *key;
    json_t *v;
    json_object_foreach(spec, key, v)
    {
        std::string problem = parse_member(key, v, r, required_given);
        if (!problem.empty())
            return fail(problem);
    }
    std::string problem = check_together(r, required_given);
    return problem.empty() || fail(problem);
}

} // namespace

bool parse(std::string_view json, std::vector<Rule> &out, std::string &error)
{
    json_error_t jerr;
    std::unique_ptr<json_t, JsonDeleter> root(
        json_loadb(json.data(), json.size(), JSON_REJECT_DUPLICATES, &jerr));
    if (!root || !json_is_object(root.get())) {
        error = "parameter rules must be a JSON object keyed by parameter name";
        return false;
    }
    const char *name;
    json_t *spec;
    json_object_foreach(root.get(), name, spec)
    {
        Rule r;
        if (!parse_one(name, spec, r, error))
            return false;
        out.push_back(std::move(r));
    }
    return true;
}

std::string check(const Rule &rule, const std::string &value)
{
    double number = 0;
    switch (rule.type) {
    case Type::integer: {
        size_t i = (!value.empty() && (value[0] == '-' || value[0] == '+')) ? 1 : 0;
        bool ok = value.size() > i;
        for (; ok && i < value.size(); i++)
            ok = value[i] >= '0' && value[i] <= '9';
        if (!ok)
            return "must be an integer";
        break;
    }
    case Type::number:
        if (!parse_number(value, number))
            return "must be a number";
        break;
    case Type::boolean:
        if (value != "true" && value != "false")
            return "must be true or false";
        break;
    case Type::string:
    case Type::any:
        break;
    }
    if (!rule.enum_values.empty()) {
        bool found = false;
        double e_number = 0;
        for (const std::string &e : rule.enum_values)
            // A number matches by value: 1.0 is the enum's 1, and 1e1 its 10.
            found = found || e == value ||
                    (rule.type == Type::number && parse_number(e, e_number) && e_number == number);
        if (!found) {
            std::string list;
            for (const std::string &e : rule.enum_values)
                list += (list.empty() ? "" : ", ") + e;
            return "must be one of: " + list;
        }
    }
    if (rule.has_min || rule.has_max) {
        if (!parse_number(value, number))
            return "must be a number";
        char buf[64];
        if (rule.has_min && number < rule.min) {
            std::snprintf(buf, sizeof(buf), "%.15g", rule.min);
            return std::string("must be at least ") + buf;
        }
        if (rule.has_max && number > rule.max) {
            std::snprintf(buf, sizeof(buf), "%.15g", rule.max);
            return std::string("must be at most ") + buf;
        }
    }
    size_t length = utf8_length(value);
    if (rule.min_length >= 0 && length < static_cast<size_t>(rule.min_length))
        return "must be at least " + std::to_string(rule.min_length) + " characters";
    if (rule.max_length >= 0 && length > static_cast<size_t>(rule.max_length))
        return "must be at most " + std::to_string(rule.max_length) + " characters";
    return std::string();
}

const Rule *find(const std::vector<Rule> &rules, const std::string &name)
{
    for (const Rule &r : rules)
        if (r.name == name)
            return &r;
    return nullptr;
}

} // namespace param_rules
