/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema.h - a table's schema and a segment's statistics, as the catalog
 * stores, checks and answers them (DESIGN §6): the model both the
 * registry (which validates what append, compact and rewrite record) and
 * lib/query (which writes, reads and prunes segments) use.
 *
 * A schema is canonical JSON [{"name","type"[,"id"]}…] (catalog/names.h).
 * Each column has a stable id, a whole number from 1: its "id", or, when
 * no column of the schema has one, its position (1 to n, as every table's
 * columns were numbered before schema evolution).  Ids are never reused
 * in a table; a rename keeps the id, a drop retires it, an add takes a new
 * one.  A segment record's "columns" lists the ids of its file's columns
 * in order (absent: 1 to k), so a segment written under any schema of the
 * table is read through any later one by id, not by name.
 *
 * Statistics ("stats" of a segment record, computed by one aggregate
 * SELECT over the closed segment before it is uploaded, carried by append
 * and resolve so that a reader can skip a segment without opening it):
 *   "stats":[S0,…,Sn-1]   one entry per column of the segment, in its file's
 *                         order (its "columns", or the schema's when absent);
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
#ifndef LAKE_SCHEMA_H
#define LAKE_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct cJSON;

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
    int64_t id; /* stable: its "id", else its position from 1 */
} segmentColumn;

typedef struct segmentSchema {
    int ncols;
    segmentColumn *cols;
    int explicit_ids; /* the JSON gave the ids (it was altered) */
} segmentSchema;

/* Parse canonical schema JSON ([{"name","type"}…], catalog/names.h) into
 * *out (caller frees with segmentSchemaFree).  65 when it is not a valid
 * schema. */
int segmentSchemaParse(const char *schema_json, segmentSchema **out, lakeError *err);
void segmentSchemaFree(segmentSchema *s);
/* The index of the column named name (ignoring case, as SQLite does), or
 * -1. */
int segmentSchemaFind(const segmentSchema *s, const char *name);
/* The index of the column of id id, or -1. */
int segmentSchemaFindId(const segmentSchema *s, int64_t id);
/* 1 when the columns' ids are 1 to n in order. */
int segmentSchemaPositional(const segmentSchema *s);
/* The ids of the columns of a segment record, in its file's order, into
 * ids[0..cap): its "columns", or 1 to k when it has none.  The count, or
 * -1 when "columns" is malformed (not distinct whole numbers from 1) or
 * more than cap. */
int segmentRecordColumns(const struct cJSON *segment, int k, int64_t *ids, int cap);
/* The columns of s of ids ids[0..n), in that order, into *out (a schema of
 * a segment's file; caller frees): 0, 1 when an id is not one of s's, -1
 * when out of memory. */
int segmentSchemaSubset(const segmentSchema *s, const int64_t *ids, int n, segmentSchema **out);
/* "CREATE TABLE table("col" DECL, …)" for the schema's columns, with
 * their declared types in `rows` (sqlite3_free); NULL for want of
 * memory. */
char *segmentSchemaTableSql(const segmentSchema *s, const char *table);

/* The longest TEXT, TIMESTAMP or FILE bound kept, in bytes. */
#define SEGMENT_STATS_TEXT_MAX 64

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

/* Read the statistics of column col of schema s from segment (a record as
 * resolve answers it, written under any schema of the table) into *out,
 * finding the column by its id among the record's columns.  1 when the
 * record has rows and "stats" (as many entries as "columns" when it has
 * them) and the column's entry is well-formed (the rules of
 * segmentStatsCheck, but for the column's kind, which the caller knows),
 * or when the segment lacks the column (added after it was written: every
 * row NULL); 0, "unknown: assume anything", when they are absent or
 * malformed (*out is then zeroed).  Text pointers borrow from segment. */
int segmentStatsColumn(const struct cJSON *segment, const segmentSchema *s, int col, segmentColumnStats *out);

/* Move the number bounds *lo and *hi outward, a few units in the last
 * place at most, to doubles that cJSON prints exactly, within ±limit: 1,
 * or 0 when there are none (the bounds are then left out).  The writer's
 * statistics and segmentStatsCheck both move them so. */
int schemaWidenToExact(double *lo, double *hi, double limit);

#endif
