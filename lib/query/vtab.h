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
 * against the new version (appends commute).  UPDATE and DELETE are
 * refused: lake tables are append-only.
 *
 * Pushdown: none.  Every read scans the pinned version's segments in full
 * and SQLite applies WHERE and LIMIT; the segment cache makes repeated
 * scans local reads.  (Equality and range pushdown would need per-segment
 * statistics that segments do not record yet.)
 */
#ifndef LAKE_QUERY_VTAB_H
#define LAKE_QUERY_VTAB_H

#include <sqlite3.h>

#include "catalog/cache.h"
#include "core/error.h"
#include "query/segcache.h"
#include "stage/stage.h"

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
} queryContext;

/* Register the module on db (once). */
int queryRegister(sqlite3 *db, queryContext *ctx, lakeError *err);

/* Declare every lake table sql names (namespace.table, outside string
 * literals and comments) that the cached directory knows. */
int queryDeclare(sqlite3 *db, queryContext *ctx, const char *sql, lakeError *err);

/* End of a statement: drop every pin so the next statement resolves
 * afresh. */
void queryUnpin(queryContext *ctx);

#endif
