/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prune.h - deciding from a segment's statistics (query/segment.h) that
 * it holds no row a scan wants, so the scan never fetches or opens it.
 *
 * Promises:
 *  - A segment is pruned only when its statistics prove that no row of it
 *    passes a term, under SQLite's own comparison rules (BINARY
 *    collation; the column's affinity applied to the value, as SQLite
 *    applies it when it compares a column with a constant).  Whenever the
 *    proof needs something the statistics do not say (no statistics, no
 *    bounds, a value of another storage class than the column's, a BLOB
 *    column), the segment is kept.  SQLite checks every term again on the
 *    rows of kept segments, so pruning changes what is read, never the
 *    answer.
 *  - A cut text bound (SEGMENT_STATS_TEXT_MAX) is taken as what it proves:
 *    a cut min is still a lower bound; a cut max stands for "this prefix
 *    followed by anything".
 */
#ifndef LAKE_QUERY_PRUNE_H
#define LAKE_QUERY_PRUNE_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "query/segment.h"

struct cJSON;

/* One term of a scan's WHERE clause on column col. */
typedef enum {
    PRUNE_EQ = '=',
    PRUNE_LT = '<',
    PRUNE_LE = 'l',
    PRUNE_GT = '>',
    PRUNE_GE = 'g',
    PRUNE_IN = 'I',
    PRUNE_ISNULL = 'N',
    PRUNE_NOTNULL = 'n'
} pruneOp;

typedef struct pruneTerm {
    pruneOp op;
    int col;
    sqlite3_value **vals; /* the value compared with (IN: the list); none for the NULL tests */
    int nvals;
} pruneTerm;

/* 1 when segment g (a segment record of a registration) cannot hold a row
 * that passes every term, with why it cannot in why when why is not NULL
 * (e.g. "k > 500: max 400"); 0 when it may.  cols is the table's schema.
 * The values may have their numeric type settled by the call
 * (sqlite3_value_numeric_type). */
int pruneSegment(const struct cJSON *g, const segmentSchema *cols, const pruneTerm *terms, int nterms,
                 char *why, size_t n);

/* Where pruneWith reads a segment's statistics of column col of the
 * table's schema: as segmentStatsColumn answers (1 known, into *out; 0
 * unknown). */
typedef int (*pruneStatsFn)(void *arg, int col, segmentColumnStats *out);

/* pruneSegment for a segment of rows rows (-1 when its record does not
 * say) whose statistics fn reads (a registration index, catalog/regindex.h). */
int pruneWith(int64_t rows, pruneStatsFn fn, void *arg, const segmentSchema *cols, const pruneTerm *terms,
              int nterms, char *why, size_t n);

/* A span of rowids of a segment, first to last inclusive. */
typedef struct pruneSpan {
    int64_t first, last;
} pruneSpan;

/* Of a segment's row ranges (segmentRangesRead's array), the spans a scan
 * with terms must read: each range pruneSegment cannot rule out, adjacent
 * ones merged, in rowid order, into *spans (free; NULL when none) and
 * *nspans; *kept is how many ranges were kept.  -1 for want of memory. */
int pruneRanges(const struct cJSON *ranges, const segmentSchema *cols, const pruneTerm *terms, int nterms,
                pruneSpan **spans, int *nspans, int *kept);

/* A copy of terms[0..n) with copies of their values, into *out (NULL
 * when n is 0): one for another thread, or kept past the scan.  -1 for
 * want of memory. */
int pruneTermsCopy(const pruneTerm *terms, int n, pruneTerm **out);
void pruneTermsFree(pruneTerm *terms, int n);

/* "=", "<", … "IN", "IS NULL", "IS NOT NULL" */
const char *pruneOpSql(pruneOp op);

#endif
