// Rows to JSON: see json_output.hpp.
#include "json_output.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
}

#include <cmath>

namespace {

enum class Kind { int2, int4, int8, oid, float4, float8, numeric, boolean, json, text };

struct Column {
    char *key; // the column name as a JSON string followed by ':'
    int keylen;
    Kind kind;
    FmgrInfo output;
};

Kind kind_of(Oid type)
{
    switch (getBaseType(type)) {
    case INT2OID:
        return Kind::int2;
    case INT4OID:
        return Kind::int4;
    case INT8OID:
        return Kind::int8;
    case OIDOID:
        return Kind::oid;
    case FLOAT4OID:
        return Kind::float4;
    case FLOAT8OID:
        return Kind::float8;
    case NUMERICOID:
        return Kind::numeric;
    case BOOLOID:
        return Kind::boolean;
    case JSONOID:
    case JSONBOID:
        return Kind::json;
    default:
        return Kind::text;
    }
}

// NaN and the infinities are not JSON numbers: written as the strings PostgreSQL prints for them.
bool is_finite_number_text(const char *s)
{
    return !(strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0);
}

void append_value(StringInfo out, const Column &col, Datum value)
{
    char buf[32];
    switch (col.kind) {
    case Kind::int2:
        pg_ltoa(DatumGetInt16(value), buf);
        appendStringInfoString(out, buf);
        return;
    case Kind::int4:
        pg_ltoa(DatumGetInt32(value), buf);
        appendStringInfoString(out, buf);
        return;
    case Kind::int8:
        pg_lltoa(DatumGetInt64(value), buf);
        appendStringInfoString(out, buf);
        return;
    case Kind::oid:
        appendStringInfo(out, "%u", DatumGetObjectId(value));
        return;
    case Kind::boolean:
        appendStringInfoString(out, DatumGetBool(value) ? "true" : "false");
        return;
    case Kind::float4:
    case Kind::float8:
    case Kind::numeric: {
        char *s = OutputFunctionCall(const_cast<FmgrInfo *>(&col.output), value);
        if (is_finite_number_text(s))
            appendStringInfoString(out, s);
        else
            escape_json(out, s);
        return;
    }
    case Kind::json:
        appendStringInfoString(out, OutputFunctionCall(const_cast<FmgrInfo *>(&col.output), value));
        return;
    case Kind::text:
        escape_json(out, OutputFunctionCall(const_cast<FmgrInfo *>(&col.output), value));
        return;
    }
}

} // namespace

struct RowWriter {
    int ncols;
    Column *cols;
    TupleDesc tupdesc;
    MemoryContext scratch;
};

RowWriter *row_writer_create(TupleDesc tupdesc)
{
    RowWriter *w = static_cast<RowWriter *>(palloc0(sizeof(RowWriter)));
    w->tupdesc = tupdesc;
    w->cols = static_cast<Column *>(palloc0(sizeof(Column) * Max(tupdesc->natts, 1)));
    for (int i = 0; i < tupdesc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(tupdesc, i);
        if (attr->attisdropped)
            continue;
        Column &c = w->cols[w->ncols++];
        StringInfoData key;
        initStringInfo(&key);
        escape_json(&key, NameStr(attr->attname));
        appendStringInfoChar(&key, ':');
        c.key = key.data;
        c.keylen = key.len;
        c.kind = kind_of(attr->atttypid);
        Oid outfunc;
        bool varlena;
        getTypeOutputInfo(attr->atttypid, &outfunc, &varlena);
        fmgr_info(outfunc, &c.output);
    }
    w->scratch = AllocSetContextCreate(CurrentMemoryContext, "querygate row", ALLOCSET_SMALL_SIZES);
    return w;
}

void row_writer_append_array(RowWriter *w, StringInfo out, HeapTuple *tuples, uint64 from, uint64 to)
{
    appendStringInfoChar(out, '[');
    for (uint64 r = from; r < to; r++) {
        if (r > from)
            appendStringInfoChar(out, ',');
        appendStringInfoChar(out, '{');
        MemoryContext old = MemoryContextSwitchTo(w->scratch);
        int written = 0;
        for (int i = 0; i < w->tupdesc->natts; i++) {
            Form_pg_attribute attr = TupleDescAttr(w->tupdesc, i);
            if (attr->attisdropped)
                continue;
            const Column &c = w->cols[written];
            if (written++ > 0)
                appendStringInfoChar(out, ',');
            appendBinaryStringInfo(out, c.key, c.keylen);
            bool isnull;
            Datum value = heap_getattr(tuples[r], i + 1, w->tupdesc, &isnull);
            if (isnull)
                appendStringInfoString(out, "null");
            else
                append_value(out, c, value);
        }
        MemoryContextSwitchTo(old);
        MemoryContextReset(w->scratch);
        appendStringInfoChar(out, '}');
    }
    appendStringInfoChar(out, ']');
}
