// What a caller may use in SQL of its own (common/schema_description.hpp), for GET /schema and
// MCP's list_tables and describe_table, read from the catalog as its policy's role sees it, in a
// subtransaction (call/role_subtransaction.hpp), with the policy's ad-hoc search_path:
//
// - the tables: exactly the policy's allow-list, those of a kind a statement reads from by name
//   (tables, partitioned tables, views, materialized views, foreign tables), and none dropped;
// - a table's columns: those the role may SELECT (on the table, or the column itself), but those
//   the policy's masks drop; each with the strictest of the policy's mask rules that match it as
//   a call's lineage matches them: by its table's name, by a same-named column of an ancestor (a
//   partitioned table, an inheritance parent: policy/stored_copies.hpp), and for a view or a
//   materialized view by every column its values come from (its lineage, analysed as a call
//   reading all its columns would be, in a subtransaction of its own); and whether it may be
//   filtered on;
// - a table's primary key, when the role may see every column of it.
//
// A table named (?table=) is found as a statement would find it: a bare name in the ad-hoc
// search_path (as the role, so a schema it may not use is passed over), a qualified one in its
// schema. Nothing of a view's definition is shown.
#pragma once

#include "call/catalog_cache.hpp"
#include "common/api_error.hpp"
#include "common/schema_description.hpp"

#include <string>

// Inside a transaction, as the worker's own user, for an accepted caller's policy. 403
// sql_not_allowed when the policy takes no SQL of its own; with a `table`, 403 name_not_allowed
// when it names no table of the allow-list, or nothing (one answer for both, as POST /sql's).
// Throws pg::PgError when the catalog cannot be read.
ApiError describe_schema(const CachedPolicy &policy, const std::string *table,
                         schema_description::Schema &out);
