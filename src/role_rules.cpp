// Who may act as whom: see role_rules.hpp.
#include "role_rules.hpp"

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

RoleStatus role_status(Oid role)
{
    HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
    if (!HeapTupleIsValid(tuple))
        return ROLE_MISSING;
    Form_pg_authid authid = reinterpret_cast<Form_pg_authid>(GETSTRUCT(tuple));
    bool privileged = authid->rolsuper || authid->rolbypassrls;
    ReleaseSysCache(tuple);
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
