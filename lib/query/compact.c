/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * compact.c - rewriting a table's small segments into few large ones (see
 * compact.h).
 *
 * One run: resolve the current version, pick the segments under half the
 * target size, stream their rows (registration order, then stored order)
 * through one segment writer whose segments close at the target size, and
 * commit the written segments in place of the picked ones with `compact`.
 */
#include "query/compact.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog/names.h"
#include "catalog/vend.h"
#include "core/interrupt.h"
#include "core/jsonstrict.h"
#include "core/log.h"
#include "core/sha256.h"
#include "query/segment.h"

/* Is the run to give up: a stop signal, or stop (may be NULL) set? */
static int stopped(const volatile sig_atomic_t *stop) { return interruptPending() || (stop && *stop); }

/* 1 when registration segment g is one to compact. */
static int isSmall(const cJSON *g, int64_t target) {
    int64_t size;
    return jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "size"), 0, &size) && size < target / 2;
}

int64_t compactSmallSegments(const cJSON *reg, int64_t target) {
    int64_t n = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(reg, "segments")) n += isSmall(g, target);
    return n;
}

int compactCopySegment(segcache *segs, stage *st, const char *schema, const cJSON *g,
                       int (*drop)(void *arg, int64_t rowid), void *arg, segmentWriter *w,
                       const volatile sig_atomic_t *stop, lakeError *err) {
    fileValue fv;
    if (!segmentRecordFile(g, &fv)) return errSet(err, LAKE_EDATA, "a malformed segment in the registration");
    char *path = NULL;
    segmentReader *rd = NULL;
    sqlite3_stmt *q = NULL;
    sqlite3_value **vals = NULL;
    int rc = segcacheGet(segs, st, &fv, &path, err);
    if (!rc) rc = segmentReaderOpen(path, schema, g, &rd, err);
    if (!rc && sqlite3_prepare_v2(segmentReaderDb(rd), "SELECT rowid, * FROM rows ORDER BY rowid", -1, &q, NULL) !=
                   SQLITE_OK)
        rc = errSet(err, LAKE_EDATA, "%s: a segment cannot be read", fv.location);
    int n = q ? segmentReaderColumns(rd) : 0, s = SQLITE_DONE; /* (a mapped one ends with its rowid) */
    if (!rc && !(vals = calloc((size_t)n + 1, sizeof *vals))) rc = errSet(err, LAKE_EFAIL, "out of memory");
    while (!rc && (s = sqlite3_step(q)) == SQLITE_ROW) {
        if (stopped(stop)) {
            rc = errSet(err, LAKE_EFAIL, "interrupted");
            break;
        }
        if (drop && drop(arg, sqlite3_column_int64(q, 0))) continue;
        for (int i = 0; i < n; i++) vals[i] = sqlite3_column_value(q, i + 1);
        rc = segmentWriterAddSqlRow(w, vals, n, err);
    }
    if (!rc && s != SQLITE_DONE) rc = errSet(err, LAKE_EDATA, "%s: a segment cannot be read", fv.location);
    free(vals);
    sqlite3_finalize(q);
    segmentReaderClose(rd);
    if (path) segcacheRelease(segs, fv.sha256);
    free(path);
    return rc;
}

/* One attempt: read, rewrite, commit.  *lost is set when another
 * compaction removed a picked segment first (a conflict worth a retry). */
static int compactOnce(catalogCache *c, stage *st, segcache *segs, const char *ns, const char *name,
                       const compactOptions *opt, int64_t target, compactResult *res, int *lost,
                       lakeError *err) {
    cJSON *reg = NULL, *replace = NULL, *written = NULL, *files = NULL;
    segmentWriter *w = NULL;
    char *schema = NULL;
    const cJSON *g;
    *lost = 0;
    int rc = cacheResolve(c, ns, name, -1, &reg, err);
    if (rc) return rc;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(reg, "id");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(reg, "segments");
    int64_t version;
    schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reg, "schema"));
    if (!cJSON_IsString(id) || !cJSON_IsArray(all) || !schema ||
        !jsonWhole(cJSON_GetObjectItemCaseSensitive(reg, "version"), 0, &version)) {
        rc = errSet(err, LAKE_EFAIL, "%s.%s: malformed registration", ns, name);
        goto out;
    }
    res->before = res->after = cJSON_GetArraySize(all);
    res->version = version;
    if (compactSmallSegments(reg, target) < 2) goto out; /* nothing to do */
    /* refused before any segment is stored */
    if ((rc = cacheMayRun(c, "compact", ns, name, err))) goto out;

    const volatile sig_atomic_t *stop = opt ? opt->stop : NULL;
    segmentWriterOptions wo = {.tmp_dir = opt ? opt->tmp_dir : NULL, .max_bytes = target, .stop = stop};
    if ((rc = segmentWriterOpen(st, id->valuestring, schema, &wo, &w, err))) goto out;
    if (!(replace = cJSON_CreateArray())) {
        rc = errSet(err, LAKE_EFAIL, "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(g, all) {
        if (!isSmall(g, target)) continue;
        cJSON *loc = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(g, "location"), 0);
        if (!loc || !cJSON_AddItemToArray(replace, loc)) {
            cJSON_Delete(loc);
            rc = errSet(err, LAKE_EFAIL, "out of memory");
        }
        if (!rc && stopped(stop)) rc = errSet(err, LAKE_EFAIL, "%s.%s: interrupted; nothing committed", ns, name);
        if (rc || (rc = compactCopySegment(segs, st, schema, g, NULL, NULL, w, stop, err))) goto out;
    }
    if ((rc = segmentWriterFinish(w, &written, &files, err))) goto out;
    testHold("LAKE_TEST_COMPACT_HOLD"); /* the interrupt suites: segments uploaded, not committed */
    if (stopped(stop)) {
        rc = errSet(err, LAKE_EFAIL, "%s.%s: interrupted; nothing committed", ns, name);
        goto out;
    }
    if (cJSON_GetArraySize(written) == 0) goto out; /* only empty segments: nothing to write */
    if ((rc = cacheCompact(c, ns, name, version, replace, written, files, &res->version, err))) {
        *lost = err->status && strcmp(err->status, "conflict") == 0;
        goto out;
    }
    res->replaced = cJSON_GetArraySize(replace);
    res->written = cJSON_GetArraySize(written);
    res->after = res->before - res->replaced + res->written;
out:
    segmentWriterFree(w); /* removes its temporary files */
    cJSON_Delete(reg);
    cJSON_Delete(replace);
    cJSON_Delete(written);
    cJSON_Delete(files);
    cJSON_free(schema);
    return rc;
}

int compactTable(catalogCache *c, stage *st, segcache *segs, const char *ns, const char *name,
                 const compactOptions *opt, compactResult *res, lakeError *err) {
    int64_t target = opt && opt->target_size > 0 ? opt->target_size : COMPACT_TARGET_DEFAULT;
    for (int attempt = 1;; attempt++) {
        int lost;
        memset(res, 0, sizeof *res);
        int rc = compactOnce(c, st, segs, ns, name, opt, target, res, &lost, err);
        if (!lost) return rc;
        if (attempt == COMPACT_ATTEMPTS)
            return errSet(err, LAKE_ETEMP, "%s.%s: another compaction won %d times; retry later", ns, name,
                          COMPACT_ATTEMPTS);
        traceLine("compact", "%s.%s: another compaction won (attempt %d); resolving again", ns, name, attempt);
        errClear(err);
        struct timespec pause = {0, (long)(1 + rand() % 20) * attempt * 1000000L};
        nanosleep(&pause, NULL);
    }
}

void compactAfterAppends(const lakeConfig *cfg, catalogCache *c, stage *st, segcache *segs,
                         const volatile sig_atomic_t *stop) {
    if (!c || cfg->compact_threshold <= 0) return;
    segcache *own = NULL;
    const char *t;
    compactOptions opt = {.stop = stop};
    for (int i = 0; (t = cacheAppended(c, i)) && !stopped(stop); i++) {
        lakeError err = {0};
        char *ns = NULL, *name = NULL;
        cJSON *reg = NULL;
        int rc = nameSplitTable(t, &ns, &name, &err);
        if (!rc) rc = cacheResolve(c, ns, name, -1, &reg, &err);
        int64_t small = rc ? 0 : compactSmallSegments(reg, COMPACT_TARGET_DEFAULT);
        cJSON_Delete(reg);
        if (!rc)
            traceLine("compact", "%s: %lld small segment%s, threshold %ld%s", t, (long long)small,
                      small == 1 ? "" : "s", cfg->compact_threshold,
                      small > cfg->compact_threshold ? ": compacting" : "");
        /* a writer without modify leaves compaction to one who holds it
         * (the maintenance job): its appends stand, nothing to warn of */
        if (!rc && small > cfg->compact_threshold && cacheMayRun(c, "compact", ns, name, &err)) {
            if (err.code == LAKE_EPERM) traceLine("compact", "%s: not compacted: %s", t, err.msg);
            else logWarn("%s: auto-compaction failed: %s", t, err.msg);
        } else if (!rc && small > cfg->compact_threshold) {
            int64_t max;
            compactResult res;
            if (!segs && !own && !(rc = segcacheMaxFromEnv(&max, &err)))
                rc = segcacheOpen(cfg->cache_dir, max, &own, &err);
            if (!rc) rc = compactTable(c, st, segs ? segs : own, ns, name, &opt, &res, &err);
            if (!rc)
                traceLine("compact", "%s: %lld segments -> %lld, version %lld", t, (long long)res.before,
                          (long long)res.after, (long long)res.version);
        }
        if (rc && stopped(stop)) traceLine("compact", "%s: interrupted; nothing committed", t);
        else if (rc) logWarn("%s: auto-compaction failed: %s", t, err.msg);
        free(ns);
        free(name);
    }
    segcacheClose(own);
}

int compactRun(const lakeConfig *cfg, catalogCache *c, const char *ns, const char *name, int64_t target_size,
               const volatile sig_atomic_t *stop, compactResult *res, lakeError *err) {
    stage *st = NULL;
    segcache *segs = NULL;
    int64_t segMax;
    compactOptions opt = {.target_size = target_size, .stop = stop};
    int rc = catalogStageOpen(cfg, c, NULL, &st, err);
    if (!rc) rc = segcacheMaxFromEnv(&segMax, err);
    if (!rc) rc = segcacheOpen(cfg->cache_dir, segMax, &segs, err);
    if (!rc) rc = compactTable(c, st, segs, ns, name, &opt, res, err);
    if (!rc && !res->replaced)
        logWarn("%s.%s: nothing to compact: %lld segment%s, fewer than 2 of them small; version %lld", ns, name,
                (long long)res->before, res->before == 1 ? "" : "s", (long long)res->version);
    segcacheClose(segs);
    stageClose(st);
    return rc;
}
