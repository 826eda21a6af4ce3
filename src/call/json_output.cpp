// Rows to JSON: see json_output.hpp.
#include "call/json_output.hpp"

extern "C" {
#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "catalog/pg_type_d.h"
#include "mb/pg_wchar.h"
#include "parser/parse_coerce.h"
#include "utils/lsyscache.h"
}

#include "rules/mask_rules.hpp"
#include "auth/secrets.hpp"

#include <cmath>

namespace {

enum class Kind { int2, int4, int8, oid, float4, float8, numeric, boolean, json, text };

struct Column {
    char *key; // the column name as a JSON string followed by ':'
    int keylen;
    Kind kind;
    masking::Action action;
    bool is_text; // string category: the mask action keeps a first character
    bool varlena; // its size is in its header (typlen -1)
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

// "j***@example.com" for an email, "j***" for other text; the first character is kept whole
// even when it takes several bytes.
void append_masked(StringInfo out, const char *text)
{
    StringInfoData masked;
    initStringInfo(&masked);
    if (*text != '\0') {
        int first = pg_mblen(text);
        appendBinaryStringInfo(&masked, text, first);
    }
    appendStringInfoString(&masked, "***");
    if (const char *at = strrchr(text, '@'))
        appendStringInfoString(&masked, at);
    escape_json(out, masked.data);
}

} // namespace

struct RowWriter {
    int ncols;
    Column *cols;
    TupleDesc tupdesc;
    MemoryContext scratch;
    const char *hash_key;
    int hash_key_len;
};

namespace {

// How a value of type `type` named `name` is written under `action`.
void init_column(Column &c, const char *name, Oid type, masking::Action action)
{
    StringInfoData key;
    initStringInfo(&key);
    escape_json(&key, name);
    appendStringInfoChar(&key, ':');
    c.key = key.data;
    c.keylen = key.len;
    c.kind = kind_of(type);
    c.action = action;
    c.is_text = TypeCategory(getBaseType(type)) == TYPCATEGORY_STRING;
    Oid outfunc;
    bool varlena;
    getTypeOutputInfo(type, &outfunc, &varlena);
    c.varlena = varlena;
    fmgr_info(outfunc, &c.output);
}

void append_column(StringInfo out, const Column &c, Datum value, bool isnull, const char *hash_key,
                   int hash_key_len)
{
    if (isnull || c.action == masking::Action::null) {
        appendStringInfoString(out, "null");
        return;
    }
    switch (c.action) {
    case masking::Action::hash: {
        char *text = OutputFunctionCall(const_cast<FmgrInfo *>(&c.output), value);
        unsigned char mac[secrets::sha256_length];
        char hex[2 * secrets::sha256_length + 1];
        secrets::hmac_sha256(hash_key, hash_key_len, text, strlen(text), mac);
        secrets::to_hex(mac, sizeof(mac), hex);
        appendStringInfoChar(out, '"');
        appendStringInfoString(out, hex);
        appendStringInfoChar(out, '"');
        return;
    }
    case masking::Action::mask:
        if (c.is_text)
            append_masked(out, OutputFunctionCall(const_cast<FmgrInfo *>(&c.output), value));
        else
            appendStringInfoString(out, "null");
        return;
    default:
        append_value(out, c, value);
    }
}

} // namespace

RowWriter *row_writer_create(TupleDesc tupdesc, const int *actions, int nactions,
                             const char *hash_key, int hash_key_len)
{
    int live = 0;
    for (int i = 0; i < tupdesc->natts; i++)
        live += !TupleDescAttr(tupdesc, i)->attisdropped;
    if (actions != nullptr && nactions != live)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("querygate: the result has %d columns, the masking decision %d",
                               live, nactions)));
    RowWriter *w = static_cast<RowWriter *>(palloc0(sizeof(RowWriter)));
    w->tupdesc = tupdesc;
    w->hash_key = hash_key;
    w->hash_key_len = hash_key_len;
    w->cols = static_cast<Column *>(palloc0(sizeof(Column) * Max(tupdesc->natts, 1)));
    for (int i = 0; i < tupdesc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(tupdesc, i);
        if (attr->attisdropped)
            continue;
        Column &c = w->cols[w->ncols++];
        init_column(c, NameStr(attr->attname), attr->atttypid,
                    actions ? static_cast<masking::Action>(actions[w->ncols - 1])
                            : masking::Action::none);
    }
    w->scratch = AllocSetContextCreate(CurrentMemoryContext, "querygate row", ALLOCSET_SMALL_SIZES);
    return w;
}

namespace {

void too_large(Size limit)
{
    ereport(ERROR, (errcode(response_too_large_sqlstate),
                    errmsg("querygate: the answer would be larger than querygate.max_response_size "
                           "(%zu bytes)",
                           static_cast<size_t>(limit))));
}

} // namespace

void row_writer_append_array(RowWriter *w, StringInfo out, HeapTuple *tuples, uint64 from,
                             uint64 to, Size limit)
{
    appendStringInfoChar(out, '[');
    for (uint64 r = from; r < to; r++) {
        if (r > from)
            appendStringInfoChar(out, ',');
        appendStringInfoChar(out, '{');
        MemoryContext old = MemoryContextSwitchTo(w->scratch);
        int written = 0; // index into cols, which skips dropped attributes
        for (int i = 0; i < w->tupdesc->natts; i++) {
            Form_pg_attribute attr = TupleDescAttr(w->tupdesc, i);
            if (attr->attisdropped)
                continue;
            const Column &c = w->cols[written++];
            if (c.action == masking::Action::drop)
                continue;
            if (out->data[out->len - 1] != '{')
                appendStringInfoChar(out, ',');
            appendBinaryStringInfo(out, c.key, c.keylen);
            bool isnull;
            Datum value = heap_getattr(tuples[r], i + 1, w->tupdesc, &isnull);
            if (limit > 0 && !isnull && c.varlena && c.action != masking::Action::null &&
                static_cast<Size>(out->len) + toast_raw_datum_size(value) > limit)
                too_large(limit);
            append_column(out, c, value, isnull, w->hash_key, w->hash_key_len);
            if (limit > 0 && static_cast<Size>(out->len) > limit)
                too_large(limit);
        }
        MemoryContextSwitchTo(old);
        MemoryContextReset(w->scratch);
        appendStringInfoChar(out, '}');
    }
    appendStringInfoChar(out, ']');
}

void append_member(StringInfo out, const char *name, Oid type, Datum value, bool isnull, int action,
                   const char *hash_key, int hash_key_len)
{
    if (static_cast<masking::Action>(action) == masking::Action::drop)
        return;
    Column c;
    init_column(c, name, type, static_cast<masking::Action>(action));
    appendBinaryStringInfo(out, c.key, c.keylen);
    append_column(out, c, value, isnull, hash_key, hash_key_len);
}
