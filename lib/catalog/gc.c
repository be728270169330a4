/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gc.c - garbage collection of the managed stage: see gc.h for what it
 * promises and why the order (list, then read references, then delete)
 * keeps concurrent writers safe.
 */
#include "catalog/gc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Locations asked for per references call (the server may cap it). */
#define GC_PAGE 10000

typedef struct gcRun {
    sqlite3 *db;
    sqlite3_stmt *put_obj, *put_ref;
    stage *st;
} gcRun;

static int dbErr(gcRun *g, lakeError *err, const char *what) {
    int rc = errSet(err, LAKE_EFAIL, "gc: temporary database: %s failed", what);
    snprintf(err->cause, sizeof err->cause, "sqlite %d: %s", sqlite3_extended_errcode(g->db),
             sqlite3_errmsg(g->db));
    return rc;
}

/* stageList callback: keep the object in the temporary database. */
static int keepObject(void *ctx, const stageObject *o, lakeError *err) {
    gcRun *g = ctx;
    sqlite3_stmt *s = g->put_obj;
    sqlite3_bind_text(s, 1, o->key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, o->location, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, o->size);
    sqlite3_bind_int64(s, 4, o->mtime);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : dbErr(g, err, "recording the listing");
    sqlite3_reset(s);
    return rc;
}

/* The source is down (gc then says 69); a busy one keeps its 75. */
static int refsFailed(catalogSource *src, lakeError *err) {
    if (!sourceOutage(err) || err->code == LAKE_ETEMP) return err->code;
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return errSet(err, LAKE_EUNAVAIL,
                  "%.300s: the metadata source is unavailable (%.300s); gc needs the live catalog and removed nothing",
                  sourceName(src), msg);
}

/* Read every page of references into the refs table, as keys. */
static int readReferences(gcRun *g, catalogSource *src, lakeError *err) {
    char *after = NULL;
    int rc = 0, more = 1;
    while (!rc && more) {
        cJSON *ans = NULL, *loc;
        if ((rc = sourceReferences(src, after, GC_PAGE, &ans, err))) {
            rc = refsFailed(src, err);
            break;
        }
        const cJSON *locs = cJSON_GetObjectItemCaseSensitive(ans, "locations");
        more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "more"));
        const char *last = NULL;
        cJSON_ArrayForEach(loc, locs) {
            if (!cJSON_IsString(loc)) continue;
            last = loc->valuestring;
            char *key = stageRelativePath(g->st, last);
            if (!key) continue; /* outside this stage: not ours to keep or remove */
            sqlite3_bind_text(g->put_ref, 1, key, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(g->put_ref) != SQLITE_DONE) rc = dbErr(g, err, "recording the references");
            sqlite3_reset(g->put_ref);
            free(key);
            if (rc) break;
        }
        if (!rc && more) {
            /* a page that says "more" but moves nothing on would loop */
            if (!last || (after && strcmp(last, after) <= 0))
                rc = errSetStatus(err, "internal", "references: the source's pages do not advance");
            else if (!(last = strdup(last)))
                rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
            free(after);
            after = (char *)last;
        }
        cJSON_Delete(ans);
    }
    free(after);
    return rc;
}

typedef struct upCounter {
    stageUploadFn fn;
    void *ctx;
    int64_t n;
} upCounter;

static void countUpload(void *ctx, const char *location, long long initiated) {
    upCounter *u = ctx;
    u->n++;
    if (u->fn) u->fn(u->ctx, location, initiated);
}

/* What the deleter's callback needs: the counts, the caller's callbacks,
 * and the first refusal. */
typedef struct gcRemoval {
    gcStats *stats;
    gcObjectFn object;
    gcRefusedFn refused;
    void *ctx;
    int64_t nrefused;
    lakeCode first;
} gcRemoval;

/* stageDeletedFn: count and report an object gone, or note a refusal. */
static int gcRemoved(void *ctx, const char *location, int64_t size, const lakeError *why,
                   lakeError *err) {
    gcRemoval *r = ctx;
    if (why) {
        if (!r->nrefused++) r->first = why->code;
        if (r->refused) r->refused(r->ctx, why);
        return 0;
    }
    r->stats->removed++;
    r->stats->removed_bytes += size;
    return r->object ? r->object(r->ctx, location, size, err) : 0;
}

/* After a batch: the error of the objects refused in it, or 0. */
static int refusedErr(const gcRemoval *r, lakeError *err) {
    if (!r->nrefused) return 0;
    return errSet(err, r->first, "gc: %lld object%s not removed, refused by the object store; stopped",
                  (long long)r->nrefused, r->nrefused == 1 ? "" : "s");
}

int catalogGc(catalogSource *src, stage *st, const gcOptions *opt, gcObjectFn object,
              gcRefusedFn refused, stageUploadFn upload, void *ctx, gcStats *stats,
              lakeError *err) {
    memset(stats, 0, sizeof *stats);
    long long now = opt->now ? opt->now : (long long)time(NULL);
    long long cutoff = now - opt->grace;
    gcRun g = {.st = st};
    gcRemoval rm = {stats, object, refused, ctx, 0, LAKE_OK};
    stageDeleter *del = NULL;
    sqlite3_stmt *sel = NULL;
    cJSON *probe = NULL;
    int rc = 0;

    /* Ask once before the (possibly long) listing: a caller without the
     * role, or a source that is down, fails before any stage request. */
    if ((rc = sourceReferences(src, NULL, 1, &probe, err))) return refsFailed(src, err);
    cJSON_Delete(probe);
    /* the versions past the source's retention expire first, so what
     * only they held is unreferenced below (a dry run changes nothing) */
    if (!opt->dry_run && (rc = sourceExpire(src, NULL, NULL, -1, &stats->expired, err))) {
        if (!err->status || strcmp(err->status, "not_found") != 0) return refsFailed(src, err);
        stats->expired = -1; /* a metadata server older than expiry: none expire */
        errClear(err);
    }

    /* "": a private temporary database in a file, removed on close */
    if (sqlite3_open_v2("", &g.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        rc = g.db ? dbErr(&g, err, "opening") : errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
        goto out;
    }
    if (sqlite3_exec(g.db,
                     "PRAGMA cache_size=-4096; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                     "CREATE TABLE objs(key TEXT PRIMARY KEY, location TEXT NOT NULL,"
                     " size INTEGER NOT NULL, mtime INTEGER NOT NULL) WITHOUT ROWID;"
                     "CREATE TABLE refs(key TEXT PRIMARY KEY) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(g.db, "INSERT OR REPLACE INTO objs VALUES (?, ?, ?, ?)", -1, &g.put_obj,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(g.db, "INSERT OR IGNORE INTO refs VALUES (?)", -1, &g.put_ref, NULL) !=
            SQLITE_OK) {
        rc = dbErr(&g, err, "setting up");
        goto out;
    }

    /* 1. the listing, first */
    sqlite3_exec(g.db, "BEGIN", NULL, NULL, NULL);
    if ((rc = stageList(st, "files/", keepObject, &g, err)) ||
        (rc = stageList(st, "tables/", keepObject, &g, err)))
        goto out;
    sqlite3_exec(g.db, "COMMIT", NULL, NULL, NULL);

    /* 2. then the live references */
    sqlite3_exec(g.db, "BEGIN", NULL, NULL, NULL);
    if ((rc = readReferences(&g, src, err))) goto out;
    sqlite3_exec(g.db, "COMMIT", NULL, NULL, NULL);

    /* 3. remove what is unreferenced and older than the grace */
    if (sqlite3_prepare_v2(g.db,
                           "SELECT location, size, mtime, key IN (SELECT key FROM refs) FROM objs"
                           " ORDER BY key",
                           -1, &sel, NULL) != SQLITE_OK) {
        rc = dbErr(&g, err, "reading back");
        goto out;
    }
    if (!opt->dry_run && !(del = stageDeleterNew(st, gcRemoved, &rm))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
        goto out;
    }
    int s;
    while ((s = sqlite3_step(sel)) == SQLITE_ROW) {
        const char *loc = (const char *)sqlite3_column_text(sel, 0);
        int64_t size = sqlite3_column_int64(sel, 1);
        long long mtime = sqlite3_column_int64(sel, 2);
        if (sqlite3_column_int(sel, 3)) {
            stats->kept_referenced++;
            continue;
        }
        if (mtime > cutoff) {
            stats->kept_young++;
            continue;
        }
        if (del) {
            if ((rc = stageDeleterAdd(del, loc, size, err)) || (rc = refusedErr(&rm, err))) goto out;
            continue;
        }
        stats->removed++;
        stats->removed_bytes += size;
        if (object && (rc = object(ctx, loc, size, err))) goto out;
    }
    if (s != SQLITE_DONE) {
        rc = dbErr(&g, err, "reading back");
        goto out;
    }
    if (del && ((rc = stageDeleterFlush(del, err)) || (rc = refusedErr(&rm, err)))) goto out;

    /* 4. unfinished multipart uploads older than the grace */
    upCounter uc = {upload, ctx, 0};
    rc = stageAbortUploads(st, cutoff, opt->dry_run, countUpload, &uc, &stats->uploads_supported, err);
    stats->uploads = uc.n;
out:
    stageDeleterFree(del);
    sqlite3_finalize(sel);
    sqlite3_finalize(g.put_obj);
    sqlite3_finalize(g.put_ref);
    sqlite3_close(g.db);
    return rc;
}
