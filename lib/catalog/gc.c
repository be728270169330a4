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

#include "catalog/actions.h"
#include "catalog/source_impl.h"
#include "core/jsonstrict.h"
#include "core/log.h"

/* Locations asked for per references call (the server may cap it). */
#define GC_PAGE 10000

typedef struct gcRun {
    sqlite3 *db;
    sqlite3_stmt *put_obj, *put_ref;
    stage *st;
    int64_t listed, limit; /* paged: stop listing past limit (in-order stages) */
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
    /* one more than the page holds says whether there is a next page */
    if (!rc && ++g->listed > g->limit && g->limit && stageListsInOrder(g->st)) rc = STAGE_LIST_STOP;
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
    const char *after = opt->after && *opt->after ? opt->after : NULL;
    gcRun g = {.st = st, .limit = opt->limit > 0 ? opt->limit : 0};
    gcRemoval rm = {stats, object, refused, ctx, 0, LAKE_OK};
    stageDeleter *del = NULL;
    sqlite3_stmt *sel = NULL;
    cJSON *probe = NULL;
    char *last = NULL; /* paged: the key of the last object seen */
    int rc = 0;

    /* Ask once before the (possibly long) listing: a caller without the
     * role, or a source that is down, fails before any stage request. */
    if ((rc = sourceReferences(src, NULL, 1, &probe, err))) return refsFailed(src, err);
    cJSON_Delete(probe);
    /* the versions past the source's retention expire first, so what
     * only they held is unreferenced below (a dry run changes nothing) */
    if (!opt->dry_run && !after && (rc = sourceExpire(src, NULL, NULL, -1, &stats->expired, err))) {
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
    /* every object under the stage, not only files/ and tables/ (where
     * lake puts them): one put elsewhere (an upload of a release that
     * took any dir) is garbage too */
    if ((rc = stageListAfter(st, "", after, keepObject, &g, err))) goto out;
    sqlite3_exec(g.db, "COMMIT", NULL, NULL, NULL);

    /* 2. then the live references */
    sqlite3_exec(g.db, "BEGIN", NULL, NULL, NULL);
    if ((rc = readReferences(&g, src, err))) goto out;
    sqlite3_exec(g.db, "COMMIT", NULL, NULL, NULL);

    /* 3. remove what is unreferenced and older than the grace */
    if (sqlite3_prepare_v2(g.db,
                           "SELECT location, size, mtime, key IN (SELECT key FROM refs), key FROM objs"
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
    int64_t seen = 0;
    while ((s = sqlite3_step(sel)) == SQLITE_ROW) {
        if (g.limit && seen++ == g.limit) { /* a next page: it starts after the last key seen */
            stats->next = last;
            last = NULL;
            break;
        }
        free(last);
        if (g.limit && !(last = strdup((const char *)sqlite3_column_text(sel, 4)))) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
            goto out;
        }
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
    if (s != SQLITE_DONE && !stats->next) {
        rc = dbErr(&g, err, "reading back");
        goto out;
    }
    if (del && ((rc = stageDeleterFlush(del, err)) || (rc = refusedErr(&rm, err)))) goto out;

    /* 4. unfinished multipart uploads older than the grace, in the last page */
    upCounter uc = {upload, ctx, 0};
    if (stats->next) stats->uploads_supported = -1;
    else rc = stageAbortUploads(st, cutoff, opt->dry_run, countUpload, &uc, &stats->uploads_supported, err);
    stats->uploads = uc.n;
out:
    free(last);
    if (rc) {
        free(stats->next);
        stats->next = NULL;
    }
    stageDeleterFree(del);
    sqlite3_finalize(sel);
    sqlite3_finalize(g.put_obj);
    sqlite3_finalize(g.put_ref);
    sqlite3_close(g.db);
    return rc;
}

/* --- the gc action: the server's side --------------------------------------- */

/* A source over the server's own action context: gc's references and
 * expire, in-process, as the caller (an admin). */
typedef struct ctxSource {
    catalogSource base;
    const actionContext *ctx;
} ctxSource;

static int ctxCall(catalogSource *s, const char *action, const cJSON *req, cJSON **answer, lakeError *err) {
    return actionsDispatch(((ctxSource *)s)->ctx, action, req, answer, err);
}

static void ctxClose(catalogSource *s) { (void)s; }

static const sourceOps ctxOps = {ctxCall, ctxClose, NULL, NULL, NULL};

/* What a page collects for its answer. */
typedef struct gcPage {
    cJSON *objects, *uploads;
    int64_t nuploads;
} gcPage;

static int pageObject(void *ctx, const char *location, int64_t size, lakeError *err) {
    gcPage *p = ctx;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(p->objects, o) || !cJSON_AddStringToObject(o, "location", location) ||
        !cJSON_AddNumberToObject(o, "size", (double)size))
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
    return 0;
}

/* The server's log has every refused object; the client the count. */
static void pageRefused(void *ctx, const lakeError *why) {
    (void)ctx;
    logErrorf("gc: %s / %s", why->msg, why->cause);
}

static void pageUpload(void *ctx, const char *location, long long initiated) {
    gcPage *p = ctx;
    if (p->nuploads++ >= GC_UPLOADS_LISTED) return;
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddItemToArray(p->uploads, o)) {
        cJSON_AddStringToObject(o, "location", location);
        cJSON_AddNumberToObject(o, "initiated", (double)initiated);
    } else {
        cJSON_Delete(o);
    }
}

/* The request's fields: dry_run a boolean, grace and limit whole numbers,
 * after a key (a string of at most 1,024 bytes, no control character). */
static int gcRequest(const cJSON *req, gcOptions *opt, lakeError *err) {
    const cJSON *dry = cJSON_GetObjectItemCaseSensitive(req, "dry_run");
    const cJSON *grace = cJSON_GetObjectItemCaseSensitive(req, "grace");
    const cJSON *limit = cJSON_GetObjectItemCaseSensitive(req, "limit");
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(req, "after");
    int64_t n;
    memset(opt, 0, sizeof *opt);
    if (dry && !cJSON_IsNull(dry) && !cJSON_IsBool(dry))
        return errSetStatus(err, "invalid_argument", "dry_run: expected true or false");
    opt->dry_run = cJSON_IsTrue(dry);
    opt->grace = GC_GRACE_DEFAULT;
    if (grace && !cJSON_IsNull(grace)) {
        if (!jsonWhole(grace, 0, &n)) return errSetStatus(err, "invalid_argument", "grace: expected seconds, 0 or more");
        opt->grace = n;
    }
    opt->limit = GC_PAGE_MAX;
    if (limit && !cJSON_IsNull(limit)) {
        if (!jsonWhole(limit, 1, &n)) return errSetStatus(err, "invalid_argument", "limit: expected a whole number from 1");
        if (n < opt->limit) opt->limit = n; /* the server's limit caps the client's */
    }
    if (after && !cJSON_IsNull(after)) {
        if (!cJSON_IsString(after) || strlen(after->valuestring) > 1024)
            return errSetStatus(err, "invalid_argument", "after: expected the next of a previous answer");
        for (const unsigned char *c = (const unsigned char *)after->valuestring; *c; c++)
            if (*c < 0x20 || *c == 0x7f)
                return errSetStatus(err, "invalid_argument", "after: expected the next of a previous answer");
        opt->after = after->valuestring;
    }
    return 0;
}

static int addCount(cJSON *a, const char *key, int64_t v) {
    return cJSON_AddNumberToObject(a, key, (double)v) != NULL;
}

int catalogGcAction(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    gcOptions opt;
    gcStats stats = {0};
    gcPage page = {cJSON_CreateArray(), cJSON_CreateArray(), 0};
    ctxSource src = {{&ctxOps, "lake-metasrv", "lake-metasrv", 0}, ctx};
    stage *st = NULL;
    *answer = NULL;
    int rc = gcRequest(req, &opt, err);
    if (!rc && !ctx->stage) rc = errSetStatus(err, "failed_precondition", "the registry has no stage; gc has none to clean");
    if (!rc && (!page.objects || !page.uploads)) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
    /* a stage handle of its own: the advertised one serves every worker */
    if (!rc) rc = stageDup(ctx->stage, &st, err);
    if (!rc) rc = catalogGc(&src.base, st, &opt, pageObject, pageRefused, pageUpload, &page, &stats, err);
    if (rc) goto out;
    cJSON *a = cJSON_CreateObject();
    if (!a || !addCount(a, "removed", stats.removed) || !addCount(a, "removed_bytes", stats.removed_bytes) ||
        !addCount(a, "kept_referenced", stats.kept_referenced) || !addCount(a, "kept_young", stats.kept_young) ||
        !addCount(a, "expired", stats.expired) || !addCount(a, "uploads", stats.uploads) ||
        !addCount(a, "uploads_supported", stats.uploads_supported) ||
        !cJSON_AddItemToObject(a, "objects", page.objects) ||
        (page.objects = NULL, !cJSON_AddItemToObject(a, "aborted_uploads", page.uploads)) ||
        (page.uploads = NULL, stats.next && !cJSON_AddStringToObject(a, "next", stats.next))) {
        cJSON_Delete(a);
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
        goto out;
    }
    *answer = a;
out:
    cJSON_Delete(page.objects);
    cJSON_Delete(page.uploads);
    free(stats.next);
    stageClose(st);
    return rc;
}

/* --- the gc action: the client's side --------------------------------------- */

/* An answer's count: a whole number >= min, else the answer is malformed. */
static int answerCount(const cJSON *ans, const char *key, int64_t min, int64_t *out, lakeError *err) {
    if (!jsonWhole(cJSON_GetObjectItemCaseSensitive(ans, key), min, out))
        return errSetStatus(err, "internal", "gc: the answer has no %s", key);
    return 0;
}

/* One page's answer: its counts added to stats, its objects and uploads
 * handed to the callbacks; *next its next (a copy), or NULL. */
static int gcAnswer(const cJSON *ans, gcObjectFn object, stageUploadFn upload, void *ctx, gcStats *stats,
                    int first, char **next, lakeError *err) {
    int64_t v[7];
    static const char *const keys[] = {"removed", "removed_bytes", "kept_referenced", "kept_young",
                                       "uploads", "expired", "uploads_supported"};
    const cJSON *o, *nx = cJSON_GetObjectItemCaseSensitive(ans, "next");
    *next = NULL;
    for (int i = 0; i < 7; i++)
        if (answerCount(ans, keys[i], i < 5 ? 0 : -1, &v[i], err)) return err->code;
    stats->removed += v[0];
    stats->removed_bytes += v[1];
    stats->kept_referenced += v[2];
    stats->kept_young += v[3];
    stats->uploads += v[4];
    if (first) stats->expired = v[5];
    stats->uploads_supported = (int)v[6];
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(ans, "objects")) {
        const cJSON *loc = cJSON_GetObjectItemCaseSensitive(o, "location");
        int64_t size;
        if (!cJSON_IsString(loc) || !jsonWhole(cJSON_GetObjectItemCaseSensitive(o, "size"), 0, &size))
            return errSetStatus(err, "internal", "gc: a malformed object in the answer");
        if (object && object(ctx, loc->valuestring, size, err)) return err->code;
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(ans, "aborted_uploads")) {
        const cJSON *loc = cJSON_GetObjectItemCaseSensitive(o, "location");
        int64_t at;
        if (cJSON_IsString(loc) && jsonWhole(cJSON_GetObjectItemCaseSensitive(o, "initiated"), 0, &at) && upload)
            upload(ctx, loc->valuestring, at);
    }
    if (nx && !cJSON_IsNull(nx) && (!cJSON_IsString(nx) || !(*next = strdup(nx->valuestring))))
        return cJSON_IsString(nx) ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc")
                                  : errSetStatus(err, "internal", "gc: the answer's next is not a key");
    return 0;
}

int catalogGcRemote(catalogSource *src, const gcOptions *opt, gcObjectFn object, stageUploadFn upload,
                    void *ctx, gcStats *stats, lakeError *err) {
    char *after = NULL;
    int rc = 0, first = 1;
    memset(stats, 0, sizeof *stats);
    do {
        cJSON *req = cJSON_CreateObject(), *ans = NULL;
        if (!req || !cJSON_AddBoolToObject(req, "dry_run", opt->dry_run) ||
            !cJSON_AddNumberToObject(req, "grace", (double)opt->grace) ||
            !cJSON_AddNumberToObject(req, "limit", (double)(opt->limit > 0 ? opt->limit : GC_PAGE_MAX)) ||
            (after && !cJSON_AddStringToObject(req, "after", after)))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "gc");
        /* an outage before the first page removed nothing; after, it says what it is */
        if (!rc && (rc = sourceCall(src, "gc", req, &ans, err))) rc = first ? refsFailed(src, err) : (int)err->code;
        cJSON_Delete(req);
        char *next = NULL;
        if (!rc) rc = gcAnswer(ans, object, upload, ctx, stats, first, &next, err);
        cJSON_Delete(ans);
        /* a next that does not move on would loop */
        if (!rc && next && after && strcmp(next, after) <= 0)
            rc = errSetStatus(err, "internal", "gc: the server's pages do not advance");
        free(after);
        after = rc ? (free(next), NULL) : next;
        first = 0;
    } while (!rc && after);
    free(after);
    return rc;
}
