// Who may act as whom. The rule is PostgreSQL's own for SET ROLE: a superuser, or a member of the
// role. querygate applies it to the people who change a policy (they could run its queries
// themselves), to whoever saved a query granted to it, and to the authors of the code its queries
// run (code_trust.hpp). And a policy's role may not be privileged (a superuser, or a role with a
// superuser's reach: see role_status) unless the policy asked for it by name.
// PostgreSQL-style code: syscache lookups, may ereport.
#pragma once

#include "pg/pg_headers.hpp"

// True when actor may act as role: a superuser, or a member of role (directly or through other
// roles). pg_database_owner stands for the current database's owner. A role that no longer exists
// may act as nobody.
bool may_act_as(Oid actor, Oid role);

// Privileged: a superuser, or a role that reaches past the database's own privileges:
// BYPASSRLS (every row-level security policy), REPLICATION (logical decoding reads every table),
// or the privileges of pg_read_all_data, pg_write_all_data (every GRANT),
// pg_execute_server_program (operating-system commands), pg_read_server_files or
// pg_write_server_files (the server's files). Missing: no such role (it was dropped).
enum RoleStatus { ROLE_MISSING, ROLE_ORDINARY, ROLE_PRIVILEGED };
RoleStatus role_status(Oid role);
bool role_is_privileged(Oid role);

// What a privileged role is, for messages: "a superuser, or a role with BYPASSRLS, ...".
extern const char *const privileged_role_detail;

// The role's name, or its OID in digits when it no longer exists. palloc'd.
char *role_name_or_oid(Oid role);
