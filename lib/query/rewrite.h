/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rewrite.h - DELETE and UPDATE of a lake table (issue 28): copy-on-write
 * of the segments that hold a row the statement changed.
 *
 * A statement's DELETE or UPDATE marks the rows it changes, by segment of
 * the pinned version and rowid, in a bitmap per segment: one bit per row
 * of a segment it touched (a table of 10M rows costs at most 1.25 MiB).
 * An UPDATE's new row is checked and written at once through a segment
 * writer (streamed to a temporary file, as an INSERT's).  At commit each
 * touched segment is copied without its marked rows through the same
 * writer (a segment whose rows are all marked is not read again), and the
 * written segments replace the touched ones as one version, with the
 * `rewrite` action: untouched segments are neither read again nor
 * rewritten.  The new segments come after the untouched ones, an
 * UPDATE's changed rows first: a DELETE or UPDATE may change the order
 * rows come out in, as a compaction may.
 *
 * Concurrency is the registry's (registryRewrite): appends made since the
 * pinned version commute; a touched segment another compaction or
 * rewrite removed meanwhile fails the commit with status "conflict", and
 * the caller runs the statement again on the new version.
 */
#ifndef LAKE_QUERY_REWRITE_H
#define LAKE_QUERY_REWRITE_H

#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>

#include "catalog/cache.h"
#include "core/error.h"
#include "query/segcache.h"
#include "stage/stage.h"

/* How many times a statement is run after its rewrite lost a race
 * (lake-query), before it fails 75. */
#define REWRITE_ATTEMPTS 5

struct cJSON;
typedef struct queryRewrite queryRewrite;

/* A rewrite of the table table_id (schema its canonical schema text)
 * whose pinned version has nseg segments; operation is "delete" or
 * "update" (kept, not copied).  New segments go to st through a
 * temporary directory under tmp_dir (NULL: $TMPDIR).  stop (may be NULL)
 * stops the rewrite as a stop signal does (liblake's lake_interrupt). */
int rewriteOpen(stage *st, const char *table_id, const char *schema, const char *operation, int nseg,
                const char *tmp_dir, const volatile sig_atomic_t *stop, queryRewrite **out, lakeError *err);

const char *rewriteOperation(const queryRewrite *w);

/* Mark row rowid of segment seg (0-based in the pinned version): 1 when
 * newly marked, 0 when it was already, -1 out of memory or a bad seg. */
int rewriteMark(queryRewrite *w, int seg, int64_t rowid);

/* Rows marked so far. */
int64_t rewriteMarked(const queryRewrite *w);

/* An UPDATE's new row: n values, the table's columns in order, checked
 * and written as an INSERT's are (65 for a value the column refuses). */
int rewriteAddRow(queryRewrite *w, sqlite3_value **vals, int n, lakeError *err);

/* Copy the touched segments of segv (the pinned version's segment
 * records) without their marked rows, upload, and commit ns.name's new
 * version through c (cacheRewrite; expected_version the pinned one),
 * reading segments through segs from st.  Nothing marked: nothing done,
 * *version = expected_version.  Errors: the cache's (status "conflict"
 * when another writer replaced a touched segment first), the stage's,
 * 65 for an unreadable segment, 1 "interrupted" after a stop signal or
 * once stop is set;
 * nothing is committed then (uploaded segments are gc's). */
int rewriteCommit(queryRewrite *w, catalogCache *c, segcache *segs, stage *st, const char *ns, const char *name,
                  const struct cJSON *const *segv, int64_t expected_version, int64_t *version, lakeError *err);

/* Release w and remove its temporary files.  NULL is fine. */
void rewriteFree(queryRewrite *w);

#endif
