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
 * The declared type names both the lake type (the reader checks it) and,
 * by SQLite's affinity rules, the storage class.  NULL is allowed in every
 * column.
 *
 * Statistics ("stats" of a segment record, computed by one aggregate
 * SELECT over the closed segment before it is uploaded, carried by append
 * and resolve so that a reader can skip a segment without opening it):
 *   "stats":[S0,…,Sn-1]   one entry per schema column, in schema order;
 *                         optional (a record without it tells nothing)
 *   Si = {"nulls":N}      NULLs in the column, a whole number 0..rows,
 *        plus "min" and "max" (both or neither) when the column holds a
 *        non-NULL value and its bounds can be represented:
 *   INTEGER, BOOLEAN      JSON whole numbers; both omitted when a bound lies
 *                         outside ±2^53 (JSON carries no more exactly)
 *   REAL                  finite JSON numbers; both omitted when a bound is
 *                         infinite (no NaN exists: SQLite stores it as NULL)
 *   (numbers)             a bound that cJSON would not print exactly (it
 *                         prints 15 significant digits when they come
 *                         within a relative DBL_EPSILON: some integers from
 *                         2^52 up, one random double in six) is moved
 *                         outward to the nearest double that it prints
 *                         exactly, a few units in the last place at most,
 *                         so that every print and parse on the way keeps it
 *                         a bound; both are omitted when that leaves the
 *                         range (2^53 itself, -DBL_MAX)
 *   TEXT, TIMESTAMP, FILE JSON strings: SQLite's min() and max() under the
 *                         BINARY collation (memcmp order), each cut to at
 *                         most SEGMENT_STATS_TEXT_MAX bytes at a UTF-8
 *                         character boundary.  A cut min is still a lower
 *                         bound; a cut max adds "max_cut":true (the true max
 *                         starts with that prefix: read it as the prefix
 *                         followed by anything).  Both omitted when either
 *                         kept prefix holds a U+0000 byte (no JSON string of
 *                         lake carries one)
 *   BLOB                  only "nulls"
 * So an entry is {"nulls":N[,"min":A,"max":B[,"max_cut":true]]}: some 180
 * bytes of JSON per column at most (more when a string needs escapes).
 * min and max are bounds (every non-NULL value v has min <= v, and v <=
 * max or, with max_cut, v <= max or v starting with max), not always
 * values of the column: a moved number or a cut text is none (do not
 * answer MIN() or MAX() from them).  lake-metasrv's append refuses
 * statistics that break these rules (segmentStatsCheck), and readers take
 * them through segmentStatsColumn, which answers "unknown" for anything
 * absent or malformed.
 */
#ifndef LAKE_SEGMENT_H
#define LAKE_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "core/error.h"
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

typedef enum {
    LAKE_TYPE_INTEGER,
    LAKE_TYPE_REAL,
    LAKE_TYPE_TEXT,
    LAKE_TYPE_BLOB,
    LAKE_TYPE_BOOLEAN,
    LAKE_TYPE_TIMESTAMP,
    LAKE_TYPE_FILE
} lakeType;

/* "INTEGER", … for a type; the declared type of its column in `rows`. */
const char *lakeTypeName(lakeType t);
const char *lakeTypeDecl(lakeType t);

/* A parsed schema: the columns of a table in order. */
typedef struct segmentColumn {
    char *name;
    lakeType type;
} segmentColumn;

typedef struct segmentSchema {
    int ncols;
    segmentColumn *cols;
} segmentSchema;

/* Parse canonical schema JSON ([{"name","type"}…], catalog/names.h) into
 * *out (caller frees with segmentSchemaFree).  65 when it is not a valid
 * schema. */
int segmentSchemaParse(const char *schema_json, segmentSchema **out, lakeError *err);
void segmentSchemaFree(segmentSchema *s);
/* The index of the column named name (ignoring case, as SQLite does), or
 * -1. */
int segmentSchemaFind(const segmentSchema *s, const char *name);
/* "CREATE TABLE table("col" DECL, …)" for the schema's columns, with
 * their declared types in `rows` (sqlite3_free); NULL for want of
 * memory. */
char *segmentSchemaTableSql(const segmentSchema *s, const char *table);

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

/* The longest TEXT, TIMESTAMP or FILE bound kept, in bytes. */
#define SEGMENT_STATS_TEXT_MAX 64

/* Compute the statistics of the table `rows` of db (a segment of schema s)
 * into *out, a new array in the format above (caller deletes).  One
 * full scan per 600 columns; 1 when SQLite fails. */
int segmentStatsCompute(sqlite3 *db, const segmentSchema *s, struct cJSON **out, lakeError *err);

/* Check the "stats" of a segment record of rows rows against schema s by
 * the rules above (the server's check on append): an array of exactly
 * s->ncols objects with only the keys nulls, min, max and max_cut, nulls
 * whole in 0..rows, min and max both or neither and of the column's JSON
 * kind (BLOB: neither), strings of at most SEGMENT_STATS_TEXT_MAX bytes,
 * max_cut a boolean beside string bounds.  0 with *canonical set to the
 * same statistics as unformatted JSON, keys in the order above, "max_cut"
 * only when true, numbers moved outward to print exactly as the writer
 * does (caller frees); 65 "malformed segment statistics" otherwise; 1 when
 * out of memory. */
int segmentStatsCheck(const struct cJSON *stats, const segmentSchema *s, int64_t rows,
                      char **canonical, lakeError *err);

/* A bound, tagged as SQLite tags a value. */
typedef struct segmentStatsValue {
    int type;      /* SQLITE_INTEGER, SQLITE_FLOAT or SQLITE_TEXT */
    int64_t i;     /* SQLITE_INTEGER: a JSON whole number within ±2^53 */
    double r;      /* SQLITE_FLOAT: any other finite JSON number */
    const char *p; /* SQLITE_TEXT: n bytes (NUL-terminated), borrowed from the record */
    size_t n;
} segmentStatsValue;

/* One column's statistics in one segment. */
typedef struct segmentColumnStats {
    int64_t rows;       /* the segment's row count (its record's "rows") */
    int64_t nulls;      /* NULLs in the column, 0..rows */
    int has_bounds;     /* min and max are set: every non-NULL value v has
                         * min <= v <= max (SQLite's order, BINARY for text) */
    segmentStatsValue min, max;
    int max_cut;        /* max is a cut prefix: the true max starts with it,
                         * so only v < max or v starting with max is known */
} segmentColumnStats;

/* Read column col's statistics from segment (a record as resolve answers
 * it) of a table of ncols columns into *out.  1 when the record has rows
 * and "stats" with exactly ncols entries and entry col is well-formed (the
 * rules of segmentStatsCheck, but for the column's kind, which the caller
 * knows); 0, "unknown: assume anything", when they are absent or
 * malformed (*out is then zeroed).  Text pointers borrow from segment. */
int segmentStatsColumn(const struct cJSON *segment, int col, int ncols, segmentColumnStats *out);

/* The object a segment record names (its location, borrowed from the
 * record, size and sha256) as the segment cache fetches it: 1, or 0 when
 * the record lacks one of them or they are malformed. */
int segmentRecordFile(const struct cJSON *segment, fileValue *out);

/* A local segment file opened read-only. */
typedef struct segmentReader segmentReader;

/* Open path (a local file, e.g. from the segment cache) as an immutable
 * read-only database and check that its `rows` table has exactly the
 * schema's columns, names and declared types, in order.  66 when the file
 * does not exist, 65 when it is not a segment of that schema. */
int segmentReaderOpen(const char *path, const char *schema_json, segmentReader **out,
                      lakeError *err);
/* The open database (owned by r): SELECT … FROM rows. */
sqlite3 *segmentReaderDb(segmentReader *r);
/* COUNT(*) of rows. */
int segmentReaderCount(segmentReader *r, int64_t *rows, lakeError *err);
void segmentReaderClose(segmentReader *r);

#endif
