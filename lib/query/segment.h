/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * segment.h - table segments (DESIGN §6): immutable SQLite files with one
 * table `rows` typed from the lake schema, written locally, uploaded
 * through the stage under tables/<table-id>/, recorded by size, SHA-256
 * and row count.
 *
 * Promises:
 *  - A segmentWriter streams: rows go into a temporary SQLite file (one
 *    transaction per segment, journal off, a bounded page cache) and the
 *    file is closed, uploaded and deleted once it holds SEGMENT_MAX_ROWS
 *    rows or about SEGMENT_MAX_BYTES bytes, so an input of any size needs
 *    bounded memory and at most one segment of temporary disk.
 *  - Every value is checked against its column's lake type before it is
 *    stored (65 naming the column); FILE values must be valid and inside
 *    the managed stage, and are stored as canonical FILE JSON.
 *  - What was uploaded is described by records of exactly the shape
 *    registryAppend takes: [{"location","size","sha256","rows","stats"}…],
 *    plus the FILE locations the rows reference (append's "files").
 *  - A failed or abandoned writer removes its temporary files, and so
 *    does a stop signal (core/interrupt.h: they are registered there; an
 *    upload gives up once the signal has arrived).  Segments
 *    it already uploaded stay in the stage unreferenced (gc's to remove).
 *
 * Column mapping (lake type -> declared type in `rows` -> stored value):
 *   INTEGER   -> INTEGER            64-bit integer
 *   REAL      -> REAL               double
 *   TEXT      -> TEXT               valid UTF-8 (U+0000 included)
 *   BLOB      -> BLOB               bytes
 *   BOOLEAN   -> "BOOLEAN INTEGER"  0 or 1 (integer affinity)
 *   TIMESTAMP -> "TIMESTAMP TEXT"   RFC 3339 text normalised to UTC,
 *                                   "2026-12-02T13:08:02[.fff]Z" (sorts as text)
 *   FILE      -> "FILE TEXT"        canonical FILE JSON (stage/filevalue.h)
 * (The schema, the types and the statistics are catalog/schema.h's.)
 * The declared type names both the lake type (the reader checks it) and,
 * by SQLite's affinity rules, the storage class.  NULL is allowed in every
 * column.
 */
#ifndef LAKE_SEGMENT_H
#define LAKE_SEGMENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "core/error.h"
#include "catalog/schema.h"
#include "stage/stage.h"

struct cJSON;

/* A segment is closed once its file reaches this many bytes (checked as
 * rows are added, so it may run over by what was added since the last
 * check, at most SEGMENT_MAX_BYTES / 32 plus one row) or holds this many
 * rows.  A segment of 1 Mi narrow rows is some 35 MB: a cold fetch stays
 * short, a segment cache holds many, and a 10-million-row table is ten
 * segments. */
#define SEGMENT_MAX_BYTES (64LL * 1024 * 1024)
#define SEGMENT_MAX_ROWS (1024LL * 1024)
/* The SQLite page cache of a segment being written (KiB). */
#define SEGMENT_CACHE_KIB 8192

/* One value of a row, as an input gives it; the writer converts it to the
 * column's type.  Text and blob bytes are borrowed (p, n) for the call; p
 * may be NULL when n is 0 (SQLite's empty BLOB), and the value is then
 * the empty text or BLOB, never NULL. */
typedef enum {
    LAKE_VALUE_NULL,
    LAKE_VALUE_INT,
    LAKE_VALUE_REAL,
    LAKE_VALUE_TEXT,
    LAKE_VALUE_BLOB,
    LAKE_VALUE_BOOL
} lakeValueKind;

typedef struct lakeValue {
    lakeValueKind kind;
    int64_t i;     /* INT, BOOL (0 or 1) */
    double r;      /* REAL */
    const char *p; /* TEXT, BLOB: n bytes, not necessarily NUL-terminated */
    size_t n;
} lakeValue;

/* Converting a value to a column's type (what is accepted):
 *   INTEGER:   INT; BOOL as 0/1; REAL when integral and within ±2^53;
 *              TEXT that is exactly an optional sign and decimal digits in
 *              range.
 *   REAL:      INT, REAL; TEXT that strtod reads whole (finite; a value
 *              below the smallest double rounds to the nearest one).
 *   TEXT:      TEXT (valid UTF-8; a NUL byte is a character like any
 *              other); INT as its decimal text, REAL as the shortest text
 *              that reads back as the same double (core/realtext.h); BOOL
 *              as "true"/"false".
 *   BLOB:      BLOB; TEXT as its bytes, or, with the hex_blobs option
 *              (text inputs: imports, lake-put --set), TEXT of hexadecimal
 *              digit pairs as the bytes they spell (lake-query's output
 *              form, so exported rows import back unchanged).
 *   BOOLEAN:   BOOL; INT 0 or 1; TEXT true/false/1/0 (any case).
 *   TIMESTAMP: TEXT in RFC 3339 (YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM); a
 *              space for the T is accepted), stored normalised to UTC.
 *   FILE:      TEXT holding a FILE value (stage/filevalue.h) inside the
 *              writer's stage.
 * Anything else is 65 "column NAME: …". */

typedef struct segmentWriter segmentWriter;

typedef struct segmentWriterOptions {
    const char *tmp_dir; /* parent of the temporary directory; NULL: $TMPDIR, else /tmp */
    int64_t max_bytes;   /* 0: SEGMENT_MAX_BYTES (tests set a tiny figure) */
    int64_t max_rows;    /* 0: SEGMENT_MAX_ROWS */
    progress *progress;  /* upload progress, may be NULL */
    int hex_blobs;       /* text for a BLOB column is hexadecimal digits */
    /* the flag that stops an upload (liblake's lake_interrupt); NULL: the
     * stop signals (core/interrupt.h) */
    const volatile sig_atomic_t *stop;
} segmentWriterOptions;

/* Start writing segments of table table_id (a lake id: it becomes the key
 * directory tables/<table_id>) with schema schema_json through st (kept,
 * not owned).  opt may be NULL.  Creates a private temporary directory
 * (mode 0700) below tmp_dir.  64 for a table id that is not one clean key
 * component, 65 for a bad schema, 1 when the temporary directory cannot be
 * made. */
int segmentWriterOpen(stage *st, const char *table_id, const char *schema_json,
                      const segmentWriterOptions *opt, segmentWriter **out,
                      lakeError *err);

/* The writer's parsed schema (owned by w). */
const segmentSchema *segmentWriterSchema(const segmentWriter *w);

/* Add one row: n must be the schema's column count, vals[i] the value of
 * column i.  Converts and checks every value first (65 "column NAME: …",
 * and the row is not added), then stores it; may close and upload the
 * current segment (any stage error).  After a failure other than 65 the
 * writer is unusable: abandon it with segmentWriterFree. */
int segmentWriterAddRow(segmentWriter *w, const lakeValue *vals, int n, lakeError *err);

/* Check that v converts to the type of column col (as segmentWriterAddRow
 * would) without storing anything: 0, or 65 "column NAME: …".  For values
 * fixed before any input is read (lake-put --set). */
int segmentWriterCheckValue(segmentWriter *w, int col, const lakeValue *v, lakeError *err);

/* The same for SQL values (an INSERT through the virtual table): NULL,
 * INTEGER, FLOAT, TEXT and BLOB become the lakeValue kinds of those
 * names. */
int segmentWriterAddSqlRow(segmentWriter *w, sqlite3_value **vals, int n, lakeError *err);

/* Rows added so far, over all segments. */
int64_t segmentWriterRows(const segmentWriter *w);

/* Close and upload the last segment (none when it is empty) and hand over
 * what was written: *segments, the records [{"location","size","sha256",
 * "rows","stats"}…] in write order (empty when no row was added), and *files, the
 * distinct FILE locations the rows reference, sorted (kept in memory
 * until now: one string per referenced location).  The caller owns both
 * (cJSON_Delete).  Either pointer may be NULL when not wanted.  The writer
 * must still be freed. */
int segmentWriterFinish(segmentWriter *w, struct cJSON **segments, struct cJSON **files,
                        lakeError *err);

/* Release the writer and remove its temporary directory.  NULL is fine. */
void segmentWriterFree(segmentWriter *w);

/* --- statistics (the format is in the comment at the top) --------------- */

/* Compute the statistics of the table `rows` of db (a segment of schema s)
 * into *out, a new array in the format above (caller deletes).  One
 * full scan per 600 columns; 1 when SQLite fails. */
int segmentStatsCompute(sqlite3 *db, const segmentSchema *s, struct cJSON **out, lakeError *err);

/* The object a segment record names (its location, borrowed from the
 * record, size and sha256) as the segment cache fetches it: 1, or 0 when
 * the record lacks one of them or they are malformed. */
int segmentRecordFile(const struct cJSON *segment, fileValue *out);

/* --- row ranges ----------------------------------------------------------- */

/* Statistics per row range inside a segment (lake(7), SEGMENTS): every
 * writer records, beside `rows`, a table SEGMENT_RANGES of one row per
 * SEGMENT_RANGE_ROWS rows written (the last range may be shorter):
 *   first, last  the range's first and last rowid in `rows` (inclusive)
 *   rows         its row count
 *   stats        the statistics of those rows, JSON in the format of a
 *                segment record's "stats" (catalog/schema.h), the columns
 *                in the file's order
 * so a scan reads only the rowids of the ranges its WHERE can match
 * (query/prune.h).  The table is inside the file, so the segment's size
 * and SHA-256 cover it.  A segment written before (no such table) is read
 * whole. */
#define SEGMENT_RANGE_ROWS 65536
#define SEGMENT_RANGES "lake_ranges"
#define SEGMENT_RANGES_DDL                                                                                      \
    "CREATE TABLE " SEGMENT_RANGES "(first INTEGER NOT NULL, last INTEGER NOT NULL, rows INTEGER NOT NULL, " \
    "stats TEXT NOT NULL)"
/* More ranges than this in one file (a segment holds SEGMENT_MAX_ROWS /
 * SEGMENT_RANGE_ROWS): the file's ranges are not used. */
#define SEGMENT_RANGES_MAX 4096

/* The row ranges of the segment attached to db as schema (its record,
 * for the file's "columns"), in rowid order, into *out: an array of
 * objects {"first","last","rows","stats"[,"columns"]}, each read as a
 * segment record by segmentStatsColumn and pruneSegment (caller deletes).
 * *out is NULL when the file has no range statistics (written before
 * them) or they are unusable (malformed, overlapping, more than
 * SEGMENT_RANGES_MAX): the segment is then read whole.  1 for want of
 * memory. */
int segmentRangesRead(sqlite3 *db, const char *schema, const struct cJSON *record, struct cJSON **out);

/* A local segment file opened read-only. */
typedef struct segmentReader segmentReader;

/* Open path (a local file, e.g. from the segment cache) as an immutable
 * read-only database whose `rows` reads as the columns of schema_json:
 * the file's columns are found by id (the segment record's "columns",
 * else 1 to k), a column the file lacks reads NULL, a renamed one under
 * its new name.  When the file is not exactly the schema's columns a
 * temporary view named rows maps it (the segment's rowid is its column
 * "rowid"; `SELECT *` then ends with it: count the schema's columns, not
 * the result's).  record may be NULL (a segment of the table's first
 * schema).  66 when the file does not exist, 65 when it is not a segment
 * of the table (a shared column of another declared type, more columns
 * than its ids). */
int segmentReaderOpen(const char *path, const char *schema_json, const struct cJSON *record, segmentReader **out,
                      lakeError *err);
/* The same view over the segment attached to another connection as
 * `schema`: *sql = "CREATE TEMP VIEW rows AS …" (sqlite3_free), or NULL
 * when the file reads as it is.  -1 for want of memory. */
int segmentReaderViewSql(const segmentReader *r, const char *schema, char **sql);
/* The schema's column count. */
int segmentReaderColumns(const segmentReader *r);
/* The open database (owned by r): SELECT … FROM rows. */
sqlite3 *segmentReaderDb(segmentReader *r);
/* COUNT(*) of rows. */
int segmentReaderCount(segmentReader *r, int64_t *rows, lakeError *err);
void segmentReaderClose(segmentReader *r);

#endif
