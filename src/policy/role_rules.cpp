// Who may act as whom: see role_rules.hpp.
#include "policy/role_rules.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "utils/acl.h"
#include "utils/syscache.h"
}

bool may_act_as(Oid actor, Oid role)
{
    if (actor == ROLE_PG_DATABASE_OWNER) {
        HeapTuple tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
        if (!HeapTupleIsValid(tuple))
            return false;
        actor = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple))->datdba;
        ReleaseSysCache(tuple);
    }
    if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(actor)))
        return false;
    return is_member_of_role(actor, role);
}

namespace {

// The predefined roles whose privileges reach past every GRANT, or out of the database.
const Oid superuser_reach[] = {ROLE_PG_READ_ALL_DATA, ROLE_PG_WRITE_ALL_DATA,
                               ROLE_PG_EXECUTE_SERVER_PROGRAM, ROLE_PG_READ_SERVER_FILES,
                               ROLE_PG_WRITE_SERVER_FILES};

} // namespace

const char *const privileged_role_detail =
    "A privileged role is a superuser, or a role with BYPASSRLS or REPLICATION, or with the "
    "privileges of pg_read_all_data, pg_write_all_data, pg_execute_server_program, "
    "pg_read_server_files or pg_write_server_files: every call would reach past the database's "
    "GRANTs and row-level security, or out of the database.";

RoleStatus role_status(Oid role)
{
    HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
    if (!HeapTupleIsValid(tuple))
        return ROLE_MISSING;
    Form_pg_authid authid = reinterpret_cast<Form_pg_authid>(GETSTRUCT(tuple));
    bool privileged = authid->rolsuper || authid->rolbypassrls || authid->rolreplication;
    ReleaseSysCache(tuple);
    for (Oid reach : superuser_reach)
        privileged = privileged || has_privs_of_role(role, reach);
    return privileged ? ROLE_PRIVILEGED : ROLE_ORDINARY;
}

bool role_is_privileged(Oid role)
{
    return role_status(role) == ROLE_PRIVILEGED;
}

char *role_name_or_oid(Oid role)
{
    char *name = GetUserNameFromId(role, true);
    return name ? name : psprintf("%u", role);
}
