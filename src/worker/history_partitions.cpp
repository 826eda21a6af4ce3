// The run history's partitions: see history_partitions.hpp. Found as tuple routing finds them,
// made with SQL (CREATE TABLE, then ATTACH PARTITION), dropped as DROP TABLE drops them.
#include "worker/history_partitions.hpp"

#include "common/settings.hpp"

extern "C" {
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

#include <cstdio>

namespace history_partitions {

namespace {

// Whether querygate.history has the shape the writer keeps: partitioned by range of `at` (an
// administrator could have replaced it; then each batch fails with a clear error).
bool by_time(Relation parent)
{
    if (parent->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
        return false;
    PartitionKey key = RelationGetPartitionKey(parent);
    return key->strategy == PARTITION_STRATEGY_RANGE && key->partnatts == 1 &&
           key->parttypid[0] == TIMESTAMPTZOID;
}

// The parent's range bounds and partitions; nullptr when it has none (or not that shape).
PartitionBoundInfo range_bounds(Relation parent, PartitionDesc &desc)
{
    desc = nullptr;
    if (!by_time(parent))
        return nullptr;
    desc = RelationGetPartitionDesc(parent, true);
    return desc->nparts > 0 ? desc->boundinfo : nullptr;
}

// The value of range bound i, or `none` when there is none there or it is MINVALUE/MAXVALUE.
int64 bound_at(PartitionBoundInfo b, int i, int64 none)
{
    return i >= 0 && i < b->ndatums && b->kind[i][0] == PARTITION_RANGE_DATUM_VALUE
               ? DatumGetTimestampTz(b->datums[i][0])
               : none;
}

// Where `at` goes, found as tuple routing finds it: the greatest bound not above it, and the
// partition (if any) whose upper bound is the next one. Under a lock on the parent.
Place place_of(Relation parent, TimestampTz at)
{
    Place place;
    PartitionDesc desc = nullptr;
    PartitionBoundInfo b = range_bounds(parent, desc);
    if (b == nullptr)
        return place;
    PartitionKey key = RelationGetPartitionKey(parent);
    Datum value = TimestampTzGetDatum(at);
    bool equal = false;
    const int offset =
        partition_range_datum_bsearch(key->partsupfunc, key->partcollation, b, 1, &value, &equal);
    place.lower = bound_at(b, offset, history_retention::unbounded_below);
    place.upper = bound_at(b, offset + 1, history_retention::unbounded_above);
    const int index = b->indexes[offset + 1];
    if (index >= 0)
        place.relid = desc->oids[index];
    return place;
}

// A partition bound as SQL: an ISO timestamp in UTC, or MINVALUE/MAXVALUE.
void bound_sql(int64 t, char *out, std::size_t room)
{
    if (t == history_retention::unbounded_below || t == history_retention::unbounded_above) {
        std::snprintf(out, room, "%s", t < 0 ? "MINVALUE" : "MAXVALUE");
        return;
    }
    struct pg_tm tm;
    fsec_t fsec = 0;
    if (timestamp2tm(t, nullptr, &tm, &fsec, nullptr, nullptr) != 0)
        ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                        errmsg("querygate: a run history record's time is out of range")));
    std::snprintf(out, room, "'%04d-%02d-%02d %02d:%02d:%02d.%06d+00'", tm.tm_year, tm.tm_mon,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(fsec));
}

} // namespace

void make_partition(const history_retention::Span &span)
{
    const Oid nsp = get_namespace_oid("querygate", false);
    const history_retention::Name base = history_retention::name_for(span.lower);
    char name[sizeof(base.text) + 8];
    std::snprintf(name, sizeof(name), "%s", base.text);
    for (int suffix = 2; OidIsValid(get_relname_relid(name, nsp)); suffix++) {
        if (suffix > 9)
            ereport(ERROR, (errcode(ERRCODE_DUPLICATE_TABLE),
                            errmsg("querygate: no free name for a partition of querygate.history "
                                   "(%s and %s_2 to _9 are taken)",
                                   base.text, base.text)));
        std::snprintf(name, sizeof(name), "%s_%d", base.text, suffix);
    }
    char lower[64], upper[64];
    bound_sql(span.lower, lower, sizeof(lower));
    bound_sql(span.upper, upper, sizeof(upper));
    const char *quoted = quote_identifier(name);
    // The locks are waited for a moment at most (an administrator's DDL or ANALYZE on the table
    // holds the one ATTACH takes): the writer saves nothing while it waits, and a partition not
    // made now is made by the next batch, or the next pass.
    char *sql = psprintf("SET LOCAL lock_timeout = '500ms'; "
                         "CREATE TABLE querygate.%s (LIKE querygate.history INCLUDING DEFAULTS "
                         "INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION); "
                         "ALTER TABLE querygate.history ATTACH PARTITION querygate.%s "
                         "FOR VALUES FROM (%s) TO (%s)",
                         quoted, quoted, lower, upper);
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "querygate: SPI_connect failed");
    if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
        elog(ERROR, "querygate: could not make a partition of querygate.history");
    SPI_finish();
    CommandCounterIncrement(); // the parent's partitions, read again, include it
}

Place place_or_make(Oid parent_id, TimestampTz at)
{
    Relation parent = table_open(parent_id, RowExclusiveLock);
    Place place = place_of(parent, at);
    const bool shaped = by_time(parent);
    table_close(parent, NoLock);
    if (OidIsValid(place.relid))
        return place;
    if (!shaped)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("querygate: querygate.history is not partitioned by \"at\"")));
    make_partition(
        history_retention::span_for(at, settings::history_retention, place.lower, place.upper));
    parent = table_open(parent_id, RowExclusiveLock);
    place = place_of(parent, at);
    table_close(parent, NoLock);
    if (!OidIsValid(place.relid))
        elog(ERROR, "querygate: the partition made for a run history record does not hold it");
    return place;
}

Survey survey(Relation parent, TimestampTz now)
{
    Survey s;
    PartitionDesc desc = nullptr;
    PartitionBoundInfo b = range_bounds(parent, desc);
    if (b == nullptr)
        return s;
    for (int i = 0; i < b->ndatums && s.nexpired < static_cast<int>(lengthof(s.expired)); i++) {
        const int index = b->indexes[i];
        const int64 upper = bound_at(b, i, history_retention::unbounded_above);
        if (index >= 0 && history_retention::expired(upper, now, settings::history_retention))
            s.expired[s.nexpired++] = desc->oids[index];
    }
    const Place here = place_of(parent, now);
    s.current = OidIsValid(here.relid);
    if (s.current && here.upper != history_retention::unbounded_above)
        s.next = place_of(parent, here.upper);
    return s;
}

bool drop_partition(Oid parent, Oid partition)
{
    if (!ConditionalLockRelationOid(parent, AccessExclusiveLock))
        return false;
    if (!ConditionalLockRelationOid(partition, AccessExclusiveLock))
        return false;
    // Still there, and still a partition of the table (an administrator may have detached it).
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(partition)) ||
        get_partition_parent(partition, true) != parent)
        return true;
    ObjectAddress object;
    ObjectAddressSet(object, RelationRelationId, partition);
    performDeletion(&object, DROP_RESTRICT, 0);
    return true;
}

} // namespace history_partitions
