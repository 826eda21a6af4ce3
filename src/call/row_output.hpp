// Rows in the answer's format (common/answer_format.hpp), as the HTTP API promises.
//
// JSON, an array of objects: integers and floats are numbers, numeric is an exact number,
// booleans are booleans, json and jsonb are embedded, NULL is null, and every other type is its
// text output as a string (NaN and infinities, which JSON cannot hold, as strings). NDJSON: the
// same objects, one a line, each line ended by LF.
//
// CSV and TSV (common/delimited_text.hpp): a header row of the column names, then a row of each
// value's text output, as PostgreSQL's COPY writes it (booleans t and f, json as its text).
//
// PostgreSQL-style code: call under pg::guard.
#pragma once

#include "common/answer_format.hpp"
#include "pg/pg_headers.hpp"
extern "C" {
#include "access/htup.h"
#include "access/tupdesc.h"
#include "lib/stringinfo.h"
}

struct RowWriter;

// Looks up how each column of tupdesc is written; allocated in the current memory context.
// actions: one masking::Action (as int) per non-dropped column, or nullptr for none; hash_key: the
// HMAC-SHA-256 key of the hash action.
//   hash: the value's text output, HMAC-SHA-256 with the per-database secret, as 64 hex digits
//         (deterministic: equal values still join and group);
//   mask: text keeps its first character and "***", an email keeps its domain (j***@example.com);
//         other types become null;
//   null: null;  drop: the column is left out of the object, or of the header and every row.
// Every format applies them alike. ERROR when actions does not have one entry per column: masks
// are never applied by guesswork.
RowWriter *row_writer_create(TupleDesc tupdesc, const int *actions, int nactions,
                             const char *hash_key, int hash_key_len, AnswerFormat format);

// Appends tuples[from..to) as a whole answer in the writer's format (a JSON array; NDJSON lines;
// CSV or TSV with its header row). Values are converted in a scratch context reset per row, so a
// large page costs the size of its answer, not of every intermediate string.
//
// At most `limit` bytes in `out` (0: no limit, querygate.max_response_size): past it, an ERROR
// with SQLSTATE response_too_large_sqlstate. A value is measured before it is read: a stored
// value's size is known from its header, before it is decompressed or fetched from its TOAST
// table, so a value larger than what is left is refused without ever being in memory whole.
void row_writer_append_rows(RowWriter *writer, StringInfo out, HeapTuple *tuples, uint64 from,
                            uint64 to, Size limit);

// The same answer in parts, for rows that come in batches (an export): what comes before the rows
// (JSON's "[", the header row of CSV and TSV), the rows of each batch, and what comes after.
void row_writer_begin(RowWriter *writer, StringInfo out);
void row_writer_rows(RowWriter *writer, StringInfo out, HeapTuple *tuples, uint64 from, uint64 to,
                     Size limit);
void row_writer_end(RowWriter *writer, StringInfo out);

// What a write that returns no rows answers: {"rows_affected":N} in JSON (and as NDJSON's one
// line), a column rows_affected with one row in CSV and TSV.
void append_rows_affected(StringInfo out, AnswerFormat format, uint64 n);
// querygate's own SQLSTATE for an answer over querygate.max_response_size ("QGR01").
constexpr int response_too_large_sqlstate = MAKE_SQLSTATE('Q', 'G', 'R', '0', '1');

// One value as a member ("name":value) of a JSON object, written and masked exactly as a column
// of its type under that action is in a row; nothing for drop. The caller writes the commas.
void append_member(StringInfo out, const char *name, Oid type, Datum value, bool isnull, int action,
                   const char *hash_key, int hash_key_len);
