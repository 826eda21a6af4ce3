// What a caller whose policy takes SQL of its own (grant_adhoc) may use in it, as GET /schema and
// MCP's list_tables and describe_table describe it: the tables of its policy's allow-list, each
// with the columns its policy's role may read (their types, whether they may be NULL, how its
// policy masks them, and whether a statement may filter on them), the write operations granted to
// its SQL, and where its names resolve. Made by the worker (call/schema_describer.hpp) from the
// catalog as the policy's role sees it; rendered by http/schema_document.hpp. Plain C++.
#pragma once

#include "rules/mask_rules.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace schema_description {

struct Column {
    std::string name;
    std::string quoted; // the name as SQL writes it: quoted only when it must be
    std::string type;   // format_type's, with its modifier ("character varying(20)")
    bool nullable = true;
    masking::Action mask = masking::Action::none; // never drop: a dropped column is left out
    // Whether a statement may compare, group or sort by it: a masked column only when its policy
    // allows mask predicates (PolicyRules::mask_predicates_allowed).
    bool filterable = true;
};

// The relations a statement can read from by name.
enum class Kind { table, partitioned_table, view, materialized_view, foreign_table };

struct Table {
    std::string schema;
    std::string name;
    std::string quoted; // schema.name as SQL writes it
    Kind kind = Kind::table;
    std::vector<Column> columns; // in the table's order
    // The primary key's columns, quoted, in its order; empty when the table has none or when one
    // of them is not shown (the key would name a column the caller may not see).
    std::vector<std::string> primary_key;
};

struct Schema {
    std::string search_path;   // where the statement's unqualified names resolve
    std::vector<Table> tables; // by schema, then name
    int write_ops = 0;         // WriteOp bits the SQL may use (rules/write_ops.hpp)
};

// "table", "partitioned table", "view", "materialized view", "foreign table".
const char *kind_name(Kind kind);

// The functions SQL a caller writes may call (policy/adhoc_statement.hpp), in one sentence.
extern const char functions[];

// The table as the caller may see it, as a CREATE statement of its kind: its columns shown, their
// types and NOT NULL, and its primary key when every column of it is shown; nothing else (no
// defaults, checks, indexes, triggers, owners, comments, or a view's definition, which would show
// what the caller may not read). A view's is its columns in the form a table's are given.
std::string ddl(const Table &table);

// A table's name as a caller gives it (?table=, describe_table): "name" or "schema.name", each part
// an identifier as SQL reads one (folded to lower case unless double-quoted, "" for a quote in a
// quoted one, blanks around the parts ignored). False for anything else (an empty part, a third
// part, an unclosed quote): such a name names no table.
bool parse_name(std::string_view text, std::string &schema, std::string &name);

} // namespace schema_description
