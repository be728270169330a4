/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * import.h - streaming record readers for `lake-query --import` (DESIGN §9):
 * CSV (RFC 4180, a header row naming the columns) and JSON Lines (one
 * object per line, keys naming the columns), chosen by the caller or by the
 * first non-blank byte of the input ('{' means JSON Lines).
 *
 * Promises:
 *  - Streams: input is read through a fixed buffer; memory is bounded by
 *    one record (IMPORT_RECORD_MAX bytes of CSV fields, or one JSON line of
 *    at most IMPORT_RECORD_MAX bytes and its parse tree).
 *  - Each record comes out as one lakeValue per schema column (query/
 *    segment.h), which segmentWriterAddRow takes as is; a column the input
 *    does not name, or a JSON key that is absent, is NULL.
 *  - Bad input is 65 naming the line: "line N: …" for malformed CSV (an
 *    unterminated quote, text after a closing quote, a row with another number of fields
 *    than the header), malformed JSON, a line over the cap, an unknown or
 *    repeated column; importRun adds the line to the writer's type errors
 *    ("line N: column c: 'abc' is not an INTEGER").  Line numbers count
 *    physical lines from 1; a CSV record is named by the line it starts on.
 *
 * Both formats: a UTF-8 BOM and blank bytes at the start are skipped.
 *
 * CSV decisions: CRLF or LF ends a record; an unquoted
 * empty field is NULL, a quoted one ("") is the empty string; blank lines
 * are skipped, except in a one-column file, where an empty line is a
 * record whose value is NULL (how -f csv writes that row); header names
 * are matched to columns ignoring case.  A quote or a lone CR inside an
 * unquoted field is data, as sqlite3's .import reads it, unless
 * IMPORT_STRICT; a header holding a lone CR (a file with CR-only line
 * ends) is 65 saying so.
 *
 * JSON Lines decisions: blank lines are skipped; null is NULL, true/false
 * are booleans; a number written as an integer (digits, an optional '-')
 * is an integer, exact over the whole 64-bit range, any other number
 * (2.0, -0.0, 1e3, or an integer out of that range) a real; strings are
 * text; an object is accepted only for a FILE column (the FILE value
 * itself) and is otherwise 65, as is an array: nested data is not
 * flattened or stored as JSON text silently.  Each line is strict JSON
 * (core/jsonstrict.h): RFC 8259 exactly, no \u0000 (no key or TEXT value
 * from JSON holds a NUL; a BLOB comes as hex), no key twice; else 65.
 */
#ifndef LAKE_IMPORT_H
#define LAKE_IMPORT_H

#include <stdint.h>

#include "core/error.h"
#include "core/progress.h"
#include "query/segment.h"
#include "stage/stage.h"

/* The most bytes of one CSV record's fields, or of one JSON line. */
#define IMPORT_RECORD_MAX (16LL * 1024 * 1024)

/* IMPORT_STRICT may be or'ed into the format given to importOpen and
 * importRun: a quote or a lone CR in an unquoted CSV field is then 65
 * instead of data. */
typedef enum { IMPORT_AUTO, IMPORT_CSV, IMPORT_JSONL, IMPORT_STRICT = 0x100 } importFormat;

typedef struct importReader importReader;

/* Start reading records from in (kept, not owned) for the columns of
 * schema (kept, not owned).  IMPORT_AUTO reads ahead to the first non-blank
 * byte to decide.  For CSV the header row is read and matched here (65
 * naming an unknown or repeated column).  record_max 0 means
 * IMPORT_RECORD_MAX (tests set less). */
int importOpen(lakeReader *in, importFormat fmt, const segmentSchema *schema,
               int64_t record_max, importReader **out, lakeError *err);

/* The format in use (never IMPORT_AUTO after importOpen). */
importFormat importFormatOf(const importReader *r);

/* Read the next record.  Returns 1 with *vals pointing to schema->ncols
 * values (owned by r, valid until the next call), 0 at the end of the
 * input, or the error code (65 naming the line, 1 for a read error). */
int importNext(importReader *r, const lakeValue **vals, lakeError *err);

/* The line the last record returned by importNext started on. */
int64_t importLine(const importReader *r);

void importClose(importReader *r);

/* Read every record of in into w, prefixing the writer's errors with the
 * record's line; the number of records in *rows (may be NULL).  prog (may
 * be NULL) counts the bytes read and the rows.  Does not finish w. */
int importRun(lakeReader *in, importFormat fmt, segmentWriter *w, int64_t *rows,
              progress *prog, lakeError *err);

#endif
