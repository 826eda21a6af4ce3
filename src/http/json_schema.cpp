// JSON Schema of what a caller may call: see json_schema.hpp.
#include "http/json_schema.hpp"

#include <cerrno>
#include <cstdlib>
#include <new>

namespace json_schema {

using api_description::Column;
using api_description::Kind;
using api_description::Param;
using api_description::Query;
using api_description::ValueType;

Owned::Owned(json_t *value) : v(value)
{
    if (v == nullptr)
        throw std::bad_alloc();
}

// Not json_object(): the postgres executable exports a function of that name (the SQL function
// json_object), and the dynamic linker binds this library's call to it, not to jansson's; an
// unversioned definition satisfies jansson's versioned reference. json_pack is jansson's alone
// (test/run checks that no library function this extension calls is also one of PostgreSQL's).
Owned object()
{
    return Owned(json_pack("{}"));
}
Owned array()
{
    return Owned(json_array());
}
Owned str(const std::string &s)
{
    return Owned(json_stringn(s.data(), s.size()));
}
Owned integer(long long n)
{
    return Owned(json_integer(n));
}
Owned boolean(bool b)
{
    return Owned(json_boolean(b));
}
// A whole number as an integer (1, not 1.0), any other as a real.
Owned number(double d)
{
    if (d >= -9.0e15 && d <= 9.0e15 && d == static_cast<double>(static_cast<long long>(d)))
        return integer(static_cast<long long>(d));
    return Owned(json_real(d));
}

void set(Owned &obj, const char *key, Owned value)
{
    if (json_object_set_new(obj.v, key, value.take()) != 0)
        throw std::bad_alloc();
}
void set(Owned &obj, const std::string &key, Owned value)
{
    set(obj, key.c_str(), std::move(value));
}
void append(Owned &arr, Owned value)
{
    if (json_array_append_new(arr.v, value.take()) != 0)
        throw std::bad_alloc();
}

Owned typed(const char *type, const std::string &description)
{
    Owned s = object();
    set(s, "type", str(type));
    set(s, "description", str(description));
    return s;
}

namespace {

Owned object_with(Owned properties, Owned required)
{
    Owned s = object();
    set(s, "type", str("object"));
    set(s, "properties", std::move(properties));
    if (json_array_size(required.v) > 0)
        set(s, "required", std::move(required));
    set(s, "additionalProperties", boolean(false));
    return s;
}

} // namespace

Owned closed_object(Owned properties, std::initializer_list<const char *> required)
{
    Owned names = array();
    for (const char *name : required)
        append(names, str(name));
    return object_with(std::move(properties), std::move(names));
}

Owned complete_object(Owned properties)
{
    Owned names = array();
    const char *key;
    json_t *value;
    json_object_foreach(properties.v, key, value)
    {
        append(names, str(key));
    }
    return object_with(std::move(properties), std::move(names));
}

std::string dump(const Owned &doc, bool indent)
{
    char *text = json_dumps(doc.v, JSON_PRESERVE_ORDER | (indent ? JSON_INDENT(1) : JSON_COMPACT));
    if (text == nullptr)
        throw std::bad_alloc();
    std::string out(text);
    free(text);
    return out;
}

const char *kind_name(Kind k)
{
    switch (k) {
    case Kind::integer:
        return "integer";
    case Kind::number:
        return "number";
    case Kind::boolean:
        return "boolean";
    case Kind::json:
        return "json";
    case Kind::string:
        return "string";
    }
    return "string";
}

namespace {

// "type": one name, or a list with "null" (and "string" for numbers: NaN and the infinities).
Owned type_list(Kind kind, bool nullable)
{
    if (kind == Kind::json)
        return Owned(json_null()); // any value: no "type" at all (the caller leaves it out)
    Owned list = array();
    append(list, str(kind_name(kind)));
    if (kind == Kind::number && nullable)
        append(list, str("string"));
    if (nullable)
        append(list, str("null"));
    if (json_array_size(list.v) == 1)
        return str(kind_name(kind));
    return list;
}

// A value's schema by its type (an answer's column, nullable, or a parameter, not).
Owned value_schema(const ValueType &t, bool nullable)
{
    Owned s = object();
    Owned type = type_list(t.kind, nullable);
    if (!json_is_null(type.v))
        set(s, "type", std::move(type));
    if (!t.format.empty())
        set(s, "format", str(t.format));
    if (!t.postgres.empty())
        set(s, "description", str("PostgreSQL type " + t.postgres));
    return s;
}

// A rule's text value as its type has it in JSON (an integer's enum value as a number, say).
Owned typed(const ValueType &t, const std::string &text)
{
    if (t.kind == Kind::integer || t.kind == Kind::number) {
        errno = 0;
        char *end = nullptr;
        const double d = std::strtod(text.c_str(), &end);
        if (errno == 0 && end != text.c_str() && *end == '\0')
            return number(d);
    }
    if (t.kind == Kind::boolean && (text == "true" || text == "false"))
        return boolean(text == "true");
    return str(text);
}

} // namespace

bool required(const Param &p)
{
    return !p.has_rule || (p.rule.required && !p.rule.has_default);
}

Owned param_schema(const Param &p)
{
    Owned s = value_schema(p.type, p.has_rule && param_rules::accepts_null(&p.rule));
    if (!p.has_rule)
        return s;
    const param_rules::Rule &r = p.rule;
    if (!r.description.empty())
        set(s, "description", str(r.description));
    if (!r.enum_values.empty()) {
        Owned values = array();
        for (const auto &v : r.enum_values)
            append(values, typed(p.type, v));
        set(s, "enum", std::move(values));
    }
    if (r.has_min)
        set(s, "minimum", number(r.min));
    if (r.has_max)
        set(s, "maximum", number(r.max));
    if (r.min_length >= 0)
        set(s, "minLength", integer(r.min_length));
    if (r.max_length >= 0)
        set(s, "maxLength", integer(r.max_length));
    if (!r.pattern.empty()) {
        // The rule matches the whole value; ECMA-262's pattern matches anywhere unless anchored.
        if (ecma_compatible(r.pattern))
            set(s, "pattern", str("^(?:" + r.pattern + ")$"));
        else
            set(s, "x-postgresql-pattern", str(r.pattern));
    }
    if (r.has_default)
        set(s, "default", r.default_is_null ? Owned(json_null()) : typed(p.type, r.default_text));
    // A value a contract tester or a generated client can send: the rule's example, else what the
    // rules already name (the default, the first allowed value, the minimum).
    const std::string *example = r.has_example                         ? &r.example_text
                                 : r.has_default && !r.default_is_null ? &r.default_text
                                 : !r.enum_values.empty()              ? &r.enum_values.front()
                                                                       : nullptr;
    Owned examples = array();
    if (example != nullptr)
        append(examples, typed(p.type, *example));
    else if (r.has_min)
        append(examples, number(r.min));
    if (json_array_size(examples.v) > 0)
        set(s, "examples", std::move(examples));
    return s;
}

namespace {

// What a text shows under an action that keeps some of it (masking::shown_text).
std::string masked_description(masking::Action a)
{
    switch (masking::kind_of(a)) {
    case masking::Action::mask_email:
        return "masked by the caller's policy: an e-mail address as its first character, *** and "
               "its @domain; any other text as its first character and ***";
    case masking::Action::partial:
        return "masked by the caller's policy: its first " +
               std::to_string(masking::partial_lead(a)) + " and last " +
               std::to_string(masking::partial_trail(a)) +
               " characters around ***, or *** alone when that would hide nothing";
    default:
        return "masked by the caller's policy: its first character and ***";
    }
}

// A column of the answer as the caller's policy serves it; null for a dropped one.
json_t *column_schema(const Column &c)
{
    using masking::Action;
    switch (masking::kind_of(c.action)) {
    case Action::drop:
        return nullptr;
    case Action::null: {
        Owned s = object();
        set(s, "type", str("null"));
        set(s, "description", str("always null: the caller's policy hides it"));
        return s.take();
    }
    case Action::hash: {
        Owned s = object();
        Owned t = array();
        append(t, str("string"));
        append(t, str("null"));
        set(s, "type", std::move(t));
        set(s, "pattern", str("^[0-9a-f]{64}$"));
        set(s, "description",
            str("hashed by the caller's policy: HMAC-SHA-256 of its text, in hex"));
        return s.take();
    }
    case Action::mask:
    case Action::mask_email:
    case Action::partial: {
        Owned s = object();
        if (c.is_text) {
            Owned t = array();
            append(t, str("string"));
            append(t, str("null"));
            set(s, "type", std::move(t));
            set(s, "description", str(masked_description(c.action)));
        } else {
            set(s, "type", str("null"));
            set(s, "description", str("masked by the caller's policy: null"));
        }
        return s.take();
    }
    default:
        return value_schema(c.type, true).take();
    }
}

} // namespace

const char *served_kind_name(const Column &c)
{
    using masking::Action;
    switch (masking::kind_of(c.action)) {
    case Action::null:
        return "null";
    case Action::hash:
        return "string";
    case Action::mask:
    case Action::mask_email:
    case Action::partial:
        return c.is_text ? "string" : "null";
    default:
        return kind_name(c.type.kind);
    }
}

Owned row_schema(const Query &q)
{
    Owned s = object();
    set(s, "type", str("object"));
    Owned props = object();
    if (q.writes && !q.returns_rows) {
        Owned n = object();
        set(n, "type", str("integer"));
        set(n, "description", str("rows the write changed"));
        set(props, "rows_affected", std::move(n));
        Owned req = array();
        append(req, str("rows_affected"));
        set(s, "required", std::move(req));
    } else {
        Owned req = array();
        for (const Column &c : q.columns)
            if (json_t *cs = column_schema(c)) {
                // Two columns of one name are one member of the row's object (the last's).
                const bool named = json_object_get(props.v, c.name.c_str()) != nullptr;
                set(props, c.name, Owned(cs));
                if (!named)
                    append(req, str(c.name));
            }
        if (json_array_size(req.v) > 0)
            set(s, "required", std::move(req));
    }
    set(s, "properties", std::move(props));
    set(s, "additionalProperties", boolean(false));
    return s;
}

void add_paging(Owned &properties)
{
    Owned page = object();
    set(page, "type", str("integer"));
    set(page, "minimum", integer(1));
    set(page, "description",
        str("the page of rows to answer, from 1 (1 when not given); "
            "has_more says whether another follows"));
    Owned size = object();
    set(size, "type", str("integer"));
    set(size, "minimum", integer(1));
    set(size, "description", str("rows a page (the server's default page size when not given)"));
    set(properties, "page", std::move(page));
    set(properties, "page_size", std::move(size));
}

Owned params_schema(const Query &q)
{
    Owned s = object();
    set(s, "type", str("object"));
    Owned props = object();
    Owned req = array();
    for (const Param &p : q.params) {
        set(props, p.name, param_schema(p));
        if (required(p))
            append(req, str(p.name));
    }
    set(s, "properties", std::move(props));
    if (json_array_size(req.v) > 0)
        set(s, "required", std::move(req));
    set(s, "additionalProperties", boolean(false));
    return s;
}

bool ecma_compatible(const std::string &p)
{
    bool in_class = false;
    for (std::size_t i = 0; i < p.size(); i++) {
        const char c = p[i];
        if (c == '\\') {
            if (i + 1 >= p.size())
                return false;
            const char e = p[++i];
            // Class escapes both read alike, and escaped punctuation is the character itself.
            if (std::string("dDwWsS").find(e) != std::string::npos ||
                std::string(".\\/^$|?*+()[]{}-").find(e) != std::string::npos)
                continue;
            return false; // \b, \m, \y, \A, \Z, octal and the like differ or do not exist
        }
        if (in_class) {
            if (c == '[' && i + 1 < p.size() &&
                (p[i + 1] == ':' || p[i + 1] == '=' || p[i + 1] == '.'))
                return false; // [:alpha:], [=a=], [.a.]: POSIX only
            if (c == ']')
                in_class = false;
            continue;
        }
        if (c == '[') {
            in_class = true;
            if (i + 1 < p.size() && p[i + 1] == '^')
                i++;
            if (i + 1 < p.size() && p[i + 1] == ']')
                return false; // a leading ] is a character in POSIX, an empty class in ECMA
            continue;
        }
        if (c == '(' && i + 1 < p.size() && p[i + 1] == '?')
            return false; // (?:...), (?=...), (?i) and the like: options differ
        if (static_cast<unsigned char>(c) < 0x20)
            return false;
    }
    return !in_class;
}

} // namespace json_schema
