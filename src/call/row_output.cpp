// Rows in the answer's format: see row_output.hpp.
#include "call/row_output.hpp"

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
#include "common/delimited_text.hpp"

#include <cmath>

namespace {

enum class Kind { int2, int4, int8, oid, float4, float8, numeric, boolean, json, text };

struct Column {
    const char *name;
    char *key; // the column name as a JSON string followed by ':'
    int keylen;
    Kind kind;
    masking::Action action;
    bool is_text; // string category: mask, mask_email and partial keep characters of it
    bool padded;  // char(n): its trailing blanks are not part of the value
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

// What a text shows under c's action (mask, mask_email or partial: masking::shown_text), in the
// server's encoding. In the current memory context.
char *masked_text(const Column &c, const char *text)
{
    const masking::Shown shown = masking::shown_text(c.action, text, c.padded, pg_mblen);
    StringInfoData masked;
    initStringInfo(&masked);
    appendBinaryStringInfo(&masked, text, static_cast<int>(shown.head));
    appendStringInfoString(&masked, masking::filler);
    appendBinaryStringInfo(&masked, text + shown.tail_from, static_cast<int>(shown.tail));
    return masked.data;
}

// The actions that show some characters of a text (and null for a value of another type).
bool keeps_text(masking::Action a)
{
    const masking::Action kind = masking::kind_of(a);
    return kind == masking::Action::mask || kind == masking::Action::mask_email ||
           kind == masking::Action::partial;
}

} // namespace

struct RowWriter {
    int ncols;
    Column *cols;
    TupleDesc tupdesc;
    MemoryContext scratch;
    const char *hash_key;
    int hash_key_len;
    AnswerFormat format;
    uint64 written; // rows so far (row_writer_rows)
};

namespace {

// How a value of type `type` named `name` is written under `action`.
void init_column(Column &c, const char *name, Oid type, masking::Action action)
{
    StringInfoData key;
    initStringInfo(&key);
    escape_json(&key, name);
    appendStringInfoChar(&key, ':');
    c.name = name;
    c.key = key.data;
    c.keylen = key.len;
    c.kind = kind_of(type);
    // A value no action has is drop (masking::kind_of), compared as such below.
    c.action =
        masking::kind_of(action) == masking::Action::partial ? action : masking::kind_of(action);
    c.is_text = TypeCategory(getBaseType(type)) == TYPCATEGORY_STRING;
    c.padded = getBaseType(type) == BPCHAROID;
    Oid outfunc;
    bool varlena;
    getTypeOutputInfo(type, &outfunc, &varlena);
    c.varlena = varlena;
    fmgr_info(outfunc, &c.output);
}

// The hash action's text of a value: its text output's HMAC-SHA-256, as 64 hex digits.
void hash_hex(const Column &c, Datum value, const char *hash_key, int hash_key_len,
              char (&hex)[2 * secrets::sha256_length + 1])
{
    char *text = OutputFunctionCall(const_cast<FmgrInfo *>(&c.output), value);
    unsigned char mac[secrets::sha256_length];
    secrets::hmac_sha256(hash_key, hash_key_len, text, strlen(text), mac);
    secrets::to_hex(mac, sizeof(mac), hex);
}

void append_column(StringInfo out, const Column &c, Datum value, bool isnull, const char *hash_key,
                   int hash_key_len)
{
    const masking::Action kind = masking::kind_of(c.action);
    if (isnull || kind == masking::Action::null || kind == masking::Action::drop ||
        (keeps_text(kind) && !c.is_text)) {
        appendStringInfoString(out, "null");
        return;
    }
    if (kind == masking::Action::hash) {
        char hex[2 * secrets::sha256_length + 1];
        hash_hex(c, value, hash_key, hash_key_len, hex);
        appendStringInfoChar(out, '"');
        appendStringInfoString(out, hex);
        appendStringInfoChar(out, '"');
    } else if (keeps_text(kind)) {
        escape_json(out,
                    masked_text(c, OutputFunctionCall(const_cast<FmgrInfo *>(&c.output), value)));
    } else {
        append_value(out, c, value);
    }
}

delimited_text::Kind delimited_kind(AnswerFormat f)
{
    return f == AnswerFormat::csv ? delimited_text::Kind::csv : delimited_text::Kind::tsv;
}

// One field of a CSV or TSV row: the value's text output, masked as in JSON.
void append_field(StringInfo out, delimited_text::Kind kind, const Column &c, Datum value,
                  bool isnull, const char *hash_key, int hash_key_len)
{
    const auto put = [out](const char *data, size_t n) {
        appendBinaryStringInfo(out, data, static_cast<int>(n));
    };
    const masking::Action action = masking::kind_of(c.action);
    if (isnull || action == masking::Action::null || action == masking::Action::drop ||
        (keeps_text(action) && !c.is_text)) {
        delimited_text::null_field(kind, put);
        return;
    }
    if (action == masking::Action::hash) {
        char hex[2 * secrets::sha256_length + 1];
        hash_hex(c, value, hash_key, hash_key_len, hex);
        put(hex, 2 * secrets::sha256_length);
        return;
    }
    const char *text = OutputFunctionCall(const_cast<FmgrInfo *>(&c.output), value);
    if (keeps_text(action))
        text = masked_text(c, text);
    delimited_text::field(kind, text, put);
}

} // namespace

RowWriter *row_writer_create(TupleDesc tupdesc, const int *actions, int nactions,
                             const char *hash_key, int hash_key_len, AnswerFormat format)
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
    w->format = format;
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

namespace {

// Whether a value of c may be read at all within the limit: a stored value's size is in its header.
void check_before(const StringInfo out, const Column &c, Datum value, bool isnull, Size limit)
{
    if (limit > 0 && !isnull && c.varlena && c.action != masking::Action::null &&
        static_cast<Size>(out->len) + toast_raw_datum_size(value) > limit)
        too_large(limit);
}

void check_after(const StringInfo out, Size limit)
{
    if (limit > 0 && static_cast<Size>(out->len) > limit)
        too_large(limit);
}

// One row as a JSON object.
void append_object(RowWriter *w, StringInfo out, HeapTuple tuple, Size limit)
{
    appendStringInfoChar(out, '{');
    int written = 0; // index into cols, which skips dropped attributes
    bool first = true;
    for (int i = 0; i < w->tupdesc->natts; i++) {
        if (TupleDescAttr(w->tupdesc, i)->attisdropped)
            continue;
        const Column &c = w->cols[written++];
        if (c.action == masking::Action::drop)
            continue;
        if (!first)
            appendStringInfoChar(out, ',');
        first = false;
        appendBinaryStringInfo(out, c.key, c.keylen);
        bool isnull;
        Datum value = heap_getattr(tuple, i + 1, w->tupdesc, &isnull);
        check_before(out, c, value, isnull, limit);
        append_column(out, c, value, isnull, w->hash_key, w->hash_key_len);
        check_after(out, limit);
    }
    appendStringInfoChar(out, '}');
}

// The header row of a CSV or TSV answer, or (tuple given) one row of it.
void append_record(RowWriter *w, StringInfo out, HeapTuple tuple, Size limit)
{
    const delimited_text::Kind kind = delimited_kind(w->format);
    const auto put = [out](const char *data, size_t n) {
        appendBinaryStringInfo(out, data, static_cast<int>(n));
    };
    int written = 0;
    bool first = true;
    for (int i = 0; i < w->tupdesc->natts; i++) {
        if (TupleDescAttr(w->tupdesc, i)->attisdropped)
            continue;
        const Column &c = w->cols[written++];
        if (c.action == masking::Action::drop)
            continue;
        if (!first)
            appendStringInfoChar(out, delimited_text::separator(kind));
        first = false;
        if (tuple == nullptr) {
            delimited_text::field(kind, c.name, put);
            continue;
        }
        bool isnull;
        Datum value = heap_getattr(tuple, i + 1, w->tupdesc, &isnull);
        check_before(out, c, value, isnull, limit);
        append_field(out, kind, c, value, isnull, w->hash_key, w->hash_key_len);
        check_after(out, limit);
    }
    const std::string_view end = delimited_text::record_end(kind);
    put(end.data(), end.size());
}

} // namespace

void row_writer_begin(RowWriter *w, StringInfo out)
{
    if (w->format == AnswerFormat::json)
        appendStringInfoChar(out, '[');
    else if (w->format == AnswerFormat::csv || w->format == AnswerFormat::tsv)
        append_record(w, out, nullptr, 0);
}

void row_writer_rows(RowWriter *w, StringInfo out, HeapTuple *tuples, uint64 from, uint64 to,
                     Size limit)
{
    const bool delimited = w->format == AnswerFormat::csv || w->format == AnswerFormat::tsv;
    for (uint64 r = from; r < to; r++) {
        MemoryContext old = MemoryContextSwitchTo(w->scratch);
        if (delimited) {
            append_record(w, out, tuples[r], limit);
        } else {
            if (w->format == AnswerFormat::json && w->written > 0)
                appendStringInfoChar(out, ',');
            append_object(w, out, tuples[r], limit);
            if (w->format == AnswerFormat::ndjson)
                appendStringInfoChar(out, '\n');
        }
        w->written++;
        MemoryContextSwitchTo(old);
        MemoryContextReset(w->scratch);
    }
}

void row_writer_end(RowWriter *w, StringInfo out)
{
    if (w->format == AnswerFormat::json)
        appendStringInfoChar(out, ']');
}

void row_writer_append_rows(RowWriter *w, StringInfo out, HeapTuple *tuples, uint64 from, uint64 to,
                            Size limit)
{
    row_writer_begin(w, out);
    row_writer_rows(w, out, tuples, from, to, limit);
    row_writer_end(w, out);
}

void append_rows_affected(StringInfo out, AnswerFormat format, uint64 n)
{
    switch (format) {
    case AnswerFormat::json:
    case AnswerFormat::ndjson:
        appendStringInfo(out, "{\"rows_affected\":" UINT64_FORMAT "}", n);
        if (format == AnswerFormat::ndjson)
            appendStringInfoChar(out, '\n');
        return;
    case AnswerFormat::csv:
    case AnswerFormat::tsv: {
        const std::string_view end = delimited_text::record_end(delimited_kind(format));
        appendStringInfoString(out, "rows_affected");
        appendBinaryStringInfo(out, end.data(), static_cast<int>(end.size()));
        appendStringInfo(out, UINT64_FORMAT, n);
        appendBinaryStringInfo(out, end.data(), static_cast<int>(end.size()));
        return;
    }
    }
}

void append_member(StringInfo out, const char *name, Oid type, Datum value, bool isnull, int action,
                   const char *hash_key, int hash_key_len)
{
    if (masking::kind_of(static_cast<masking::Action>(action)) == masking::Action::drop)
        return;
    Column c;
    init_column(c, name, type, static_cast<masking::Action>(action));
    appendBinaryStringInfo(out, c.key, c.keylen);
    append_column(out, c, value, isnull, hash_key, hash_key_len);
}
