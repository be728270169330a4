/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * aggregate.h - aggregates computed segment by segment, on several
 * threads, and merged (lake-query(1), AGGREGATES).
 *
 * A statement of the shape
 *   SELECT items FROM NS.T [[AS] a] [WHERE w] [GROUP BY g…] [HAVING h]
 *          [ORDER BY o…] [LIMIT …]
 * whose aggregates are count, sum, total, avg, min and max (one
 * argument, no DISTINCT, no FILTER or OVER) and whose other expressions
 * are either constants or exactly one of the GROUP BY expressions, is not
 * run through the virtual table row by row.  Instead:
 *   - the segments the WHERE clause keeps are chosen as a scan would
 *     (pruned by their statistics, query/prune.h), on the pinned version;
 *   - each kept segment runs "SELECT g…, partials… FROM rows AS a WHERE w
 *     GROUP BY g…" on its own SQLite connection, on up to
 *     LAKE_QUERY_THREADS threads at once (one per AGGREGATE_THREAD_ROWS
 *     rows) (sum, total, min, max and count are their own
 *     partials; avg is a total and a count);
 *   - the partial rows go into a temporary table of the statement's
 *     connection, and the statement that runs instead groups and merges
 *     them (count as the sum of counts, avg as total / count, …), with the
 *     same HAVING, ORDER BY and LIMIT, and the same result column names
 *     and declared types.
 * Anything else (joins, subqueries, DISTINCT, window functions, COLLATE
 * outside WHERE, bound parameters, functions of the lake connection in a
 * segment's statement, a statement SQLite does not compile) is left to the
 * row-by-row path, which gives the same answer: integers, text, min and
 * max exactly; sums and averages of REAL values to the rounding of another
 * order of addition.  Memory stays bounded: partials are rows of a SQLite
 * table, which spills to a temporary file.
 */
#ifndef LAKE_QUERY_AGGREGATE_H
#define LAKE_QUERY_AGGREGATE_H

#include <sqlite3.h>

#include "core/error.h"
#include "query/segment.h"
#include "query/vtab.h"

/* A split aggregate starts another thread for each this many rows in the
 * kept segments (up to LAKE_QUERY_THREADS): below it, a thread's start-up
 * costs more than it saves. */
#define AGGREGATE_THREAD_ROWS 65536

/* How a statement is split (see above); every string is sqlite3_free'd by
 * aggregatePlanFree. */
typedef struct aggregatePlan {
    char *ns, *name;   /* the lake table */
    char *probe;       /* "SELECT 1 FROM "ns"."name" AS "a" [WHERE w]": the scan whose kept segments are read */
    char *segment;     /* run on each kept segment: its group keys g0…, then its partials p0… */
    int ngroups, npartials;
    int *groupItem;    /* [ngroups]: the item that is exactly group key i (for its declared type), or -1 */
    int nitems;
    char **items;      /* [nitems]: each item's expression over the partials' table */
    char *tail;        /* " GROUP BY g0… HAVING … ORDER BY … LIMIT …" of the merging statement */
    const char *end;   /* the text after the statement (after its ';') */
} aggregatePlan;

/* Which columns NS.T has (NULL: not a lake table). */
typedef const segmentSchema *(*aggregateSchemaOf)(void *arg, const char *ns, const char *name);

/* Split the statement at sql when it has the shape above: 1 and *plan
 * filled, 0 when it has not (*plan is then zeroed), -1 when memory ran
 * out.  Pure: nothing is compiled or read. */
int aggregatePlanMake(const char *sql, aggregateSchemaOf schemaOf, void *arg, aggregatePlan *plan);
void aggregatePlanFree(aggregatePlan *plan);

/* For plan and whole, the statement as written compiled on the
 * statement's connection (column names and declared types are taken from
 * it): the CREATE TEMP TABLE of the partials (QUERY_PARTIALS), and the
 * statement that merges them.  sqlite3_free; NULL for want of memory. */
char *aggregatePartialsTable(const aggregatePlan *plan, sqlite3_stmt *whole);
char *aggregateMergeSql(const aggregatePlan *plan, sqlite3_stmt *whole);

/* If the statement at sql (its tables declared) can be split, compute its
 * partials now (the table stays pinned until queryUnpin) and set
 * *rewritten (sqlite3_free) to the statement that merges them, to run
 * instead, and *end to the text after the statement.  Otherwise
 * *rewritten is NULL and nothing was read.  Never with pushdown off or
 * under --explain.  Fails with the lake error of a segment that cannot be
 * fetched or read (65, 69, 75, …) or SQLite's error on it (65). */
int queryAggregate(sqlite3 *db, queryContext *ctx, const char *sql, char **rewritten, const char **end,
                   lakeError *err);

#endif
