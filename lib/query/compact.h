/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * compact.h - table compaction (issue 18, DESIGN §6): a table's small
 * segments rewritten into few large ones and committed as one new version
 * with the `compact` action; and the same after an append, once a table
 * holds more small segments than the configured threshold.
 *
 * Promises:
 *  - The rows of the segments compacted are written in registration order
 *    and, within each, in their stored order; FILE values and every other
 *    value come back as they were (they pass the segment writer's checks
 *    again, which they passed when first written).  The new segments hold
 *    exactly the rows of the replaced ones (the registry checks the
 *    count), and FILE references are recorded for the new version.
 *  - Segments of target_size / 2 bytes or more are left alone; fewer than
 *    two small segments is nothing to do.
 *  - Optimistic concurrency: appends made meanwhile do not conflict (they
 *    commute); a compaction that lost the replaced segments to another one
 *    resolves the table again and starts over, at most COMPACT_ATTEMPTS
 *    times, then fails 75.  The segments a lost attempt uploaded are
 *    unreferenced (gc's to remove).
 *  - A stop signal, or the options' stop flag (liblake's lake_interrupt),
 *    abandons the run between two segments or before the commit:
 *    temporary files are removed (the segment writer's promise), nothing
 *    is committed; segments already uploaded are unreferenced (gc's to
 *    remove), as a lost attempt's.
 *  - Readers pinned to older versions keep reading the old segments, which
 *    stay in the stage until gc removes them after its grace.
 */
#ifndef LAKE_QUERY_COMPACT_H
#define LAKE_QUERY_COMPACT_H

#include <signal.h>
#include <stdint.h>

#include "catalog/cache.h"
#include "core/config.h"
#include "core/error.h"
#include "query/segcache.h"
#include "query/segment.h"
#include "stage/stage.h"

#define COMPACT_TARGET_DEFAULT (64LL * 1024 * 1024)
#define COMPACT_ATTEMPTS 5

typedef struct compactOptions {
    int64_t target_size; /* bytes of a new segment at most; 0: COMPACT_TARGET_DEFAULT */
    const char *tmp_dir; /* for the segments being written; NULL: $TMPDIR */
    /* set: give up, as on a stop signal (liblake's lake_interrupt); NULL:
     * the stop signals alone (core/interrupt.h) */
    const volatile sig_atomic_t *stop;
} compactOptions;

typedef struct compactResult {
    int64_t before, after;      /* segments of the table read, and after the commit */
    int64_t replaced, written;  /* segments compacted, and written in their place */
    int64_t version;            /* the committed version; when nothing was done, the one read */
} compactResult;

/* The number of segments of a registration (a resolve answer) smaller
 * than half of target bytes. */
int64_t compactSmallSegments(const struct cJSON *reg, int64_t target);

/* Compact ns.name through the cache c, reading segments through segs from
 * st and writing new ones to st.  *res says what was done (replaced 0:
 * nothing to do).  A principal that may not run compact gets 77 before
 * any segment is written.  Errors: the cache's and the stage's, 65 for a segment
 * that is not one of the table's schema, 75 after COMPACT_ATTEMPTS lost
 * races, 1 "NS.T: interrupted; nothing committed" after a stop signal or
 * once opt->stop is set.  LAKE_TEST_COMPACT_HOLD (interrupt.h's testHold)
 * holds once the new segments are uploaded, before the commit. */
int compactTable(catalogCache *c, stage *st, segcache *segs, const char *ns, const char *name,
                 const compactOptions *opt, compactResult *res, lakeError *err);

/* compactTable as lake-catalog compact and liblake's lake_catalog_compact
 * run it: the stage (catalogStageOpen, vended for a remote lake) and the
 * segment cache (cfg->cache_dir, LAKE_SEGMENT_CACHE_MAX) opened for it,
 * target_size 0 the default, stop compactOptions' stop (may be NULL);
 * when there was nothing to do, a warning saying so ("NS.T: nothing to
 * compact: ...") and 0. */
int compactRun(const lakeConfig *cfg, catalogCache *c, const char *ns, const char *name, int64_t target_size,
               const volatile sig_atomic_t *stop, compactResult *res, lakeError *err);

/* Every row of registration segment g (fetched through segs from st,
 * checked against schema), in stored order, into w, but those whose
 * rowid drop (when not NULL) says 1 of.  1 "interrupted" after a stop
 * signal or once stop (may be NULL) is set; 65 for a segment that cannot
 * be read. */
int compactCopySegment(segcache *segs, stage *st, const char *schema, const struct cJSON *g,
                       int (*drop)(void *arg, int64_t rowid), void *arg, segmentWriter *w,
                       const volatile sig_atomic_t *stop, lakeError *err);

/* After a command's appends (lake-put --table, lake-query INSERT and
 * --import): every table it appended to through c (cacheAppended) that
 * now holds more than cfg->compact_threshold small segments (of
 * COMPACT_TARGET_DEFAULT) is compacted; 0 turns this off.  segs may be
 * NULL (one is opened under cfg->cache_dir when needed).  A failure is a
 * one-line warning on stderr, never an error: the appends succeeded.  A
 * principal that may not compact the table (a user without modify) is
 * no failure: the table is left as it is, said only in a trace line.
 * LAKE_TRACE shows each table checked and compacted ("trace: compact").
 * A stop signal, or stop (may be NULL; liblake's lake_interrupt) once
 * set, ends it with nothing more committed and no warning (a trace line
 * "NS.T: interrupted; nothing committed"). */
void compactAfterAppends(const lakeConfig *cfg, catalogCache *c, stage *st, segcache *segs,
                         const volatile sig_atomic_t *stop);

#endif
