// What SQL a caller writes may use: see schema_description.hpp.
#include "common/schema_description.hpp"

#include "common/chars.hpp"

namespace schema_description {

const char functions[] =
    "Built-in functions that are immutable (operators, text, numbers, dates, JSON, arrays), the "
    "clock (now(), current_date and their kin), random numbers and formatting (format, to_char, "
    "to_json) may be called, none that can read the catalogs or the server's settings "
    "(current_setting, version, current_user, has_table_privilege, pg_* functions), and none "
    "that is not built in (refused as a name, as one that does not exist is).";

const char *kind_name(Kind kind)
{
    switch (kind) {
    case Kind::table:
        return "table";
    case Kind::partitioned_table:
        return "partitioned table";
    case Kind::view:
        return "view";
    case Kind::materialized_view:
        return "materialized view";
    case Kind::foreign_table:
        return "foreign table";
    }
    return "table";
}

namespace {

const char *create_keyword(Kind kind)
{
    switch (kind) {
    case Kind::view:
        return "VIEW";
    case Kind::materialized_view:
        return "MATERIALIZED VIEW";
    case Kind::foreign_table:
        return "FOREIGN TABLE";
    case Kind::table:
    case Kind::partitioned_table:
        break;
    }
    return "TABLE";
}

// The blanks SQL's scanner skips between tokens.
bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void skip_blanks(std::string_view &text)
{
    while (!text.empty() && blank(text.front()))
        text.remove_prefix(1);
}

// One identifier at the start of `text` (after blanks), as SQL reads it; `text` is left after it.
// An unquoted one is folded to lower case as PostgreSQL folds it in a UTF-8 database: ASCII
// letters only.
bool identifier(std::string_view &text, std::string &out)
{
    skip_blanks(text);
    out.clear();
    if (!text.empty() && text.front() == '"') {
        text.remove_prefix(1);
        for (;;) {
            const std::size_t quote = text.find('"');
            if (quote == std::string_view::npos)
                return false;
            out.append(text.substr(0, quote));
            text.remove_prefix(quote + 1);
            if (text.empty() || text.front() != '"')
                break;
            out.push_back('"'); // "" in a quoted identifier is one quote
            text.remove_prefix(1);
        }
        return !out.empty();
    }
    while (!text.empty() && text.front() != '.' && text.front() != '"' && !blank(text.front())) {
        out.push_back(chars::to_lower(text.front()));
        text.remove_prefix(1);
    }
    return !out.empty();
}

} // namespace

std::string ddl(const Table &table)
{
    std::string out = "CREATE ";
    out.append(create_keyword(table.kind)).append(" ").append(table.quoted).append(" (");
    const char *separator = "\n    ";
    for (const Column &c : table.columns) {
        out.append(separator).append(c.quoted).append(" ").append(c.type);
        if (!c.nullable)
            out.append(" NOT NULL");
        separator = ",\n    ";
    }
    if (!table.primary_key.empty()) {
        out.append(separator).append("PRIMARY KEY (");
        for (std::size_t i = 0; i < table.primary_key.size(); i++)
            out.append(i == 0 ? "" : ", ").append(table.primary_key[i]);
        out.append(")");
    }
    out.append("\n);");
    return out;
}

bool parse_name(std::string_view text, std::string &schema, std::string &name)
{
    std::string first;
    if (!identifier(text, first))
        return false;
    skip_blanks(text);
    if (text.empty()) {
        schema.clear();
        name = std::move(first);
        return true;
    }
    if (text.front() != '.')
        return false;
    text.remove_prefix(1);
    std::string second;
    if (!identifier(text, second))
        return false;
    skip_blanks(text);
    if (!text.empty())
        return false;
    schema = std::move(first);
    name = std::move(second);
    return true;
}

} // namespace schema_description
