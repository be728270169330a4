/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vtab.h - lake tables in SQLite: the "lake" virtual-table module.
 *
 * Every table a statement names as namespace.table is made visible through
 * an attached in-memory schema per namespace (SQLite reads "a.b" as schema
 * a, table b) holding a virtual table per lake table.  Only the tables a
 * statement names are declared, from the cached directory, with no source
 * call; a table is resolved (one resolve, or none from a fresh cache) the
 * first time the statement reads or writes it, and that version is pinned
 * for the rest of the statement.  Reads stream the version's segments in
 * order through the segment cache.  INSERT buffers rows into new segments
 * and, when the statement commits, uploads them and appends one version
 * with the pinned version as expected_version; a conflict is retried
 * against the new version (appends commute).  DELETE and UPDATE mark the
 * rows they change and, when the statement commits, rewrite the segments
 * holding one as one new version (query/rewrite.h); a lost race sets
 * replan, and the caller runs the statement again.
 *
 * Pushdown: a scan reads only the columns the statement uses (colUsed).
 * Comparisons of a column with a constant (=, <, <=, >, >= under the
 * BINARY collation), IN lists (all at once), IS NULL and IS NOT NULL
 * prune the segments whose statistics prove no row passes (query/prune.h)
 * before they are fetched; the comparisons are also evaluated inside each
 * segment read, so rows that fail them never cross into the outer
 * statement.  SQLite checks every term again (none is omitted), so the
 * answer never depends on the pushdown.  One equality with another
 * table's column (a join) is taken as a lookup: the rows the rest of the
 * plan keeps are copied once per statement into a temporary database
 * indexed by that column's key, and each outer row searches it; the costs
 * SQLite is told (rows from the registration, a lookup's search and a
 * share of its build) let it order the joins.  LIMIT needs
 * no pushdown: segments are opened one by one as the scan reaches them,
 * so a scan that stops early never fetches the rest.  A cursor keeps up to
 * 32 segments open between scans (a join's inner table is scanned once
 * per outer row).  Aggregates over one table skip the row-by-row path
 * altogether (query/aggregate.h).  LAKE_QUERY_NO_PUSHDOWN=1 turns all of
 * it off.
 */
#ifndef LAKE_QUERY_VTAB_H
#define LAKE_QUERY_VTAB_H

#include <signal.h>
#include <sqlite3.h>

#include "catalog/cache.h"
#include "core/error.h"
#include "query/segcache.h"
#include "query/segment.h"
#include "stage/stage.h"

struct pruneTerm;

/* SQLite's default limit on attached schemas: a statement may name tables
 * of at most this many namespaces. */
#define QUERY_MAX_NAMESPACES 10

typedef struct queryContext {
    catalogCache *cache;
    stage *stage;
    segcache *segs;
    const char *tmp_dir; /* for segments being written; NULL: $TMPDIR */
    lakeError err;       /* the lake failure behind the last SQL error */
    struct queryTable *tables; /* declared so far (list) */
    int no_pushdown;     /* LAKE_QUERY_NO_PUSHDOWN: read everything (set by queryRegister) */
    sqlite3_str *explain; /* non-NULL: scans read nothing and describe their segments here */
    int threads;         /* segments a split aggregate reads at once (set by queryRegister) */
    sqlite3 *db;         /* the connection queryRegister was given */
    int partials;        /* the temporary table of a split aggregate exists (query/aggregate.h) */
    struct queryTable *collect; /* non-NULL: its scans read nothing and mark the segments they keep */
    /* When cache is NULL: called once, before the first NS.T pair a
     * statement names is looked up, to open cache, stage and segs (so
     * that SQL naming no lake table needs no catalog); a failure fails
     * queryDeclare.  NULL: cache must be set. */
    int (*open)(struct queryContext *ctx, lakeError *err);
    void *open_arg;
    /* Called when a DELETE or UPDATE committed: operation "delete" or
     * "update", and the rows it changed.  NULL: nothing is told. */
    void (*changed)(void *arg, const char *ns, const char *name, const char *operation, int64_t rows);
    void *changed_arg;
    int replan; /* set when a DELETE or UPDATE lost a race (conflict): run the statement again */
    /* Non-NULL: the statement also stops once *stop is set (liblake's
     * lake_interrupt; the stop signals stop it always).  NULL: signals only. */
    const volatile sig_atomic_t *stop;
} queryContext;

/* In a plan's text (SQLite's EXPLAIN QUERY PLAN shows it), before
 * "NS.T looked up by COLUMN": the table is looked up by that column of a
 * join. */
#define QUERY_LOOKUP_MARK "lake lookup: "

/* The temporary table holding the partial rows of a split aggregate
 * (query/aggregate.h), dropped by queryUnpin. */
#define QUERY_PARTIALS "lake_aggregate_partials"

/* The most threads a split aggregate uses (query/aggregate.h). */
#define QUERY_THREADS_MAX 64

/* Has the statement been asked to stop: a stop signal (core/interrupt.h),
 * or ctx->stop set?  From any thread. */
int queryStopped(const queryContext *ctx);

/* Register the module on db (once).  Reads LAKE_QUERY_NO_PUSHDOWN, and
 * LAKE_QUERY_THREADS (1..QUERY_THREADS_MAX; default the CPUs online, at
 * most 16): 78 when it is malformed. */
int queryRegister(sqlite3 *db, queryContext *ctx, lakeError *err);

/* Declare every lake table sql names (namespace.table, outside string
 * literals and comments) that the cached directory knows.  SQL with no
 * such pair asks nothing of the catalog. */
int queryDeclare(sqlite3 *db, queryContext *ctx, const char *sql, lakeError *err);

/* Undeclare every lake table (detach every namespace: all but main and
 * temp), so the next statement declares them from the catalog again, with
 * the columns and ids they have then; temp's own tables stay. */
void queryForget(sqlite3 *db);

/* If the statement at sql is exactly "SELECT count(*) FROM NS.T" (a
 * declared lake table, optionally ended by ';'), its answer comes from
 * the registration's row counts: *rewritten (sqlite3_free) is then
 * "SELECT N AS \"count(*)\"" (the column named as sql wrote it), to run
 * instead, and *end is the text after the statement; the table stays
 * pinned until queryUnpin.  Otherwise *rewritten is NULL.  Never with
 * pushdown off. */
int queryCountOnly(queryContext *ctx, const char *sql, char **rewritten, const char **end, lakeError *err);

/* The columns of NS.T when the statement declared it, else NULL. */
const segmentSchema *queryTableColumns(queryContext *ctx, const char *ns, const char *name);

/* The segments a scan of NS.T keeps for probe, a statement that reads
 * only NS.T: probe is run with scans that read nothing (the table is
 * pinned, and stays pinned until queryUnpin); *kept (free) is an array
 * of the *nkept kept segment records, in order, which belong to the pinned
 * registration (valid until queryUnpin), *schema the table's schema JSON
 * (valid while it is declared), *version the pinned version.  *kept is
 * NULL, and nothing failed, when probe does not compile; a failure to
 * resolve is the lake error.  *terms and *nterms are the terms of probe's
 * scan (query/prune.h), for pruning the kept segments' row ranges
 * (pruneRanges), valid until the next call or queryUnpin; none when
 * probe has no term to prune by, or SQLite scanned the table more than
 * once (an OR, term by term). */
int queryKeptSegments(queryContext *ctx, const char *ns, const char *name, const char *probe,
                      const struct cJSON ***kept, int *nkept, const char **schema, int64_t *version,
                      const struct pruneTerm **terms, int *nterms, lakeError *err);

/* End of a statement: drop every pin so the next statement resolves
 * afresh, and the partials of a split aggregate. */
void queryUnpin(queryContext *ctx);

#endif
