/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stage.c - choosing a backend by URL, and what all backends share.
 */
#include "stage/backend.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/bytesize.h"
#include "core/fsutil.h"

int stageOpen(const char *url, stage **out, lakeError *err) {
    int rc;
    *out = NULL;
    if (strncmp(url, "file://", 7) == 0) rc = localStageOpen(url, out, err);
    else if (strncmp(url, "s3://", 5) == 0) rc = s3StageOpen(url, out, err);
    else return errSet(err, LAKE_ECONFIG,
                       "%s: stage must be file:///abs/dir or s3://bucket/prefix", url);
    if (!rc) stageSetGetJobs(*out, STAGE_GET_JOBS_DEFAULT, 0);
    return rc;
}

void stageSetGetJobs(stage *s, int jobs, int64_t part_size) {
    s->get_jobs = jobs < 1 ? 1 : jobs > STAGE_JOBS_MAX ? STAGE_JOBS_MAX : jobs;
    s->get_part_size = part_size < STAGE_PART_MIN || part_size > STAGE_PART_MAX ? STAGE_PART_DEFAULT
                                                                               : part_size;
}

int stageParseJobs(const char *text, int *jobs, lakeError *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 1 || v > STAGE_JOBS_MAX)
        return errSet(err, LAKE_EUSAGE, "--jobs: '%s' is not a number from 1 to %d", text,
                      STAGE_JOBS_MAX);
    *jobs = (int)v;
    return 0;
}

int stageParsePartSize(const char *text, int64_t *bytes, lakeError *err) {
    if (bytesParse(text, bytes))
        return errSet(err, LAKE_EUSAGE, "--part-size: '%s' is not a number of bytes", text);
    if (*bytes < STAGE_PART_MIN || *bytes > STAGE_PART_MAX)
        return errSet(err, LAKE_EUSAGE, "--part-size: '%s' is outside 5MiB..5GiB", text);
    return 0;
}

int stageParseSize(const char *text, int64_t *bytes, lakeError *err) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < 0 || v > FILE_SIZE_MAX)
        return errSet(err, LAKE_EUSAGE, "--size: '%s' is not a number of bytes", text);
    *bytes = v;
    return 0;
}

int stageDup(const stage *s, stage **out, lakeError *err) {
    int rc = stageOpen(s->url, out, err);
    if (!rc) stageSetGetJobs(*out, s->get_jobs, s->get_part_size);
    if (rc || !stageVended(s)) return rc;
    stageVendor v = *s->ops->vend->vendor(s);
    v.free = NULL; /* s owns the vendor's context */
    if ((rc = stageSetVendor(*out, &v, err))) {
        stageClose(*out);
        *out = NULL;
    }
    return rc;
}

void stageClose(stage *s) {
    if (s) s->ops->close(s);
}

const char *stageUrl(const stage *s) { return s->url; }

int stagePut(stage *s, lakeReader *r, const stagePutOptions *opt, fileValue *out,
             lakeError *err) {
    return stagePutInto(s, NULL, r, opt, out, err);
}

int stagePutInto(stage *s, const char *key_dir, lakeReader *r, const stagePutOptions *opt,
                 fileValue *out, lakeError *err) {
    memset(out, 0, sizeof *out);
    out->size = -1;
    if (key_dir && (strlen(key_dir) > STAGE_KEY_DIR_MAX || !stageCleanRelative(key_dir)))
        return errSet(err, LAKE_EUSAGE, "%s: not a clean key directory below the stage",
                      key_dir);
    return s->ops->put(s, key_dir, r, opt, out, err);
}

int stageGet(stage *s, const fileValue *fv, lakeWriter *w, int verify,
             progress *prog, lakeError *err) {
    if (stageContains(s, fv->location, err)) return err->code;
    return s->ops->get(s, fv, w, verify, prog, err);
}

int stageOpenRead(stage *s, const fileValue *fv, int verify, stageReader **out, lakeError *err) {
    *out = NULL;
    if (stageContains(s, fv->location, err)) return err->code;
    return s->ops->open_read ? s->ops->open_read(s, fv, verify, out, err) : 0;
}

ssize_t stageReaderRead(stageReader *rd, void *buf, size_t len, lakeError *err) {
    return rd->read(rd, buf, len, err);
}

void stageReaderClose(stageReader *rd) {
    if (rd) rd->close(rd);
}

int stageContains(const stage *s, const char *location, lakeError *err) {
    char *rel = s->ops->relative(s, location);
    if (!rel) return errSet(err, LAKE_EDATA, "%s: outside the managed stage", location);
    free(rel);
    return 0;
}

char *stageRelativePath(const stage *s, const char *location) {
    return s->ops->relative(s, location);
}

/* 0 when prefix is a clean relative key prefix ending in '/' or "" (the
 * whole stage), else 64. */
static int checkPrefix(const char *prefix, lakeError *err) {
    size_t n = strlen(prefix);
    if (n == 0) return 0;
    if (n < 2 || prefix[n - 1] != '/' || n > STAGE_KEY_DIR_MAX + 1)
        return errSet(err, LAKE_EUSAGE, "%s: not a clean key prefix below the stage", prefix);
    char *dir = strndup(prefix, n - 1);
    if (!dir) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "list");
    int clean = stageCleanRelative(dir);
    free(dir);
    if (!clean) return errSet(err, LAKE_EUSAGE, "%s: not a clean key prefix below the stage", prefix);
    return 0;
}

int stageList(stage *s, const char *prefix, stageListFn fn, void *ctx, lakeError *err) {
    if (checkPrefix(prefix, err)) return err->code;
    return s->ops->list(s, prefix, fn, ctx, err);
}

/* stageListAfter on a backend that lists in no order: every object,
 * those at or before `after` skipped. */
typedef struct listFilter {
    const char *after;
    stageListFn fn;
    void *ctx;
} listFilter;

static int listFiltered(void *ctx, const stageObject *o, lakeError *err) {
    listFilter *f = ctx;
    return strcmp(o->key, f->after) > 0 ? f->fn(f->ctx, o, err) : 0;
}

int stageListAfter(stage *s, const char *prefix, const char *after, stageListFn fn, void *ctx,
                   lakeError *err) {
    int rc;
    if (!after || !*after) {
        rc = stageList(s, prefix, fn, ctx, err);
    } else if (s->ops->list_after) {
        if (checkPrefix(prefix, err)) return err->code;
        rc = s->ops->list_after(s, prefix, after, fn, ctx, err);
    } else {
        listFilter f = {after, fn, ctx};
        rc = stageList(s, prefix, listFiltered, &f, err);
    }
    return rc == STAGE_LIST_STOP ? 0 : rc;
}

int stageListsInOrder(const stage *s) { return s->ops->list_after != NULL; }

int stageTypeInValue(const stage *s) { return s->ops->type_in_value; }

int stageSync(stage *s, lakeError *err) {
    return s->ops->sync ? s->ops->sync(s, err) : 0;
}

int stageDelete(stage *s, const char *location, lakeError *err) {
    if (stageContains(s, location, err)) return err->code;
    return s->ops->del(s, location, err);
}

struct stageDeleter {
    stage *s;
    stageDeletedFn fn;
    void *ctx;
    char **locs;         /* the batch queued: STAGE_DELETE_BATCH slots */
    int64_t *sizes;
    unsigned char *bad;  /* refused by the store, already told to fn */
    size_t n, bytes;
    int fn_rc;           /* fn's refusal during a batch, with fn_err */
    lakeError fn_err;
    int unbatched;       /* del per object: no del_batch, or the store has none */
};

/* Remove one object with del, then tell fn. */
static int deleteOne(stageDeleter *d, const char *location, int64_t size, lakeError *err) {
    int rc = d->s->ops->del(d->s, location, err);
    return rc ? rc : d->fn(d->ctx, location, size, NULL, err);
}

stageDeleter *stageDeleterNew(stage *s, stageDeletedFn fn, void *ctx) {
    stageDeleter *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->s = s;
    d->fn = fn;
    d->ctx = ctx;
    d->unbatched = !s->ops->del_batch;
    if (!d->unbatched &&
        (!(d->locs = calloc(STAGE_DELETE_BATCH, sizeof *d->locs)) ||
         !(d->sizes = calloc(STAGE_DELETE_BATCH, sizeof *d->sizes)) ||
         !(d->bad = calloc(STAGE_DELETE_BATCH, 1)))) {
        stageDeleterFree(d);
        return NULL;
    }
    return d;
}

/* del_batch's report of one object the store refused. */
static void deleterFailed(void *ctx, size_t i, const lakeError *why) {
    stageDeleter *d = ctx;
    d->bad[i] = 1;
    if (!d->fn_rc) d->fn_rc = d->fn(d->ctx, d->locs[i], d->sizes[i], why, &d->fn_err);
}

/* Forget the batch queued. */
static void deleterClear(stageDeleter *d) {
    for (size_t i = 0; i < d->n; i++) {
        free(d->locs[i]);
        d->locs[i] = NULL;
    }
    d->n = d->bytes = 0;
}

int stageDeleterFlush(stageDeleter *d, lakeError *err) {
    if (!d->n) return 0;
    memset(d->bad, 0, d->n);
    d->fn_rc = 0;
    int rc = d->s->ops->del_batch(d->s, d->locs, d->n, deleterFailed, d, &d->unbatched, err);
    if (!rc && d->unbatched) { /* the store has no batches: this one object by object */
        for (size_t i = 0; !rc && i < d->n; i++) rc = deleteOne(d, d->locs[i], d->sizes[i], err);
        deleterClear(d);
        return rc;
    }
    if (!rc && d->fn_rc) {
        *err = d->fn_err;
        rc = d->fn_rc;
    }
    for (size_t i = 0; !rc && i < d->n; i++)
        if (!d->bad[i]) rc = d->fn(d->ctx, d->locs[i], d->sizes[i], NULL, err);
    deleterClear(d);
    return rc;
}

int stageDeleterAdd(stageDeleter *d, const char *location, int64_t size, lakeError *err) {
    if (stageContains(d->s, location, err)) return err->code;
    if (d->unbatched) return deleteOne(d, location, size, err);
    size_t len = strlen(location);
    if (d->n == STAGE_DELETE_BATCH || (d->n && d->bytes + len > d->s->ops->delete_batch_bytes)) {
        int rc = stageDeleterFlush(d, err);
        if (rc) return rc;
    }
    if (!(d->locs[d->n] = strdup(location))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "delete");
    d->sizes[d->n++] = size;
    d->bytes += len;
    return 0;
}

void stageDeleterFree(stageDeleter *d) {
    if (!d) return;
    if (d->locs) deleterClear(d);
    free(d->locs);
    free(d->sizes);
    free(d->bad);
    free(d);
}

int stageAbortUploads(stage *s, long long before, int dry_run, stageUploadFn fn, void *ctx,
                      int *supported, lakeError *err) {
    *supported = -1;
    if (!s->ops->abort_uploads) return 0;
    return s->ops->abort_uploads(s, before, dry_run, fn, ctx, supported, err);
}

int stageStopped(const stagePutOptions *opt) {
    return opt->stop && *opt->stop;
}

int stageInterrupted(const lakeReader *r, lakeError *err) {
    return errSet(err, LAKE_EFAIL, "%s: interrupted", r->what);
}

int stageOverStated(const lakeReader *r, const stagePutOptions *opt, int64_t total,
                    lakeError *err) {
    if (opt->expect_size < 0 || total <= opt->expect_size) return 0;
    return errSet(err, LAKE_EDATA, "%s: more than the stated %lld bytes", r->what,
                  (long long)opt->expect_size);
}

int stageCheckStated(const lakeReader *r, const stagePutOptions *opt, int64_t total,
                     const char *sha256, lakeError *err) {
    if (opt->expect_size >= 0 && total != opt->expect_size)
        return errSet(err, LAKE_EDATA, "%s: %lld bytes, not the stated %lld", r->what,
                      (long long)total, (long long)opt->expect_size);
    if (opt->expect_sha256 && strcasecmp(opt->expect_sha256, sha256) != 0)
        return errSet(err, LAKE_EDATA, "%s: SHA-256 is %s, not the stated %s", r->what, sha256,
                      opt->expect_sha256);
    return 0;
}

ssize_t fdRead(void *ctx, void *buf, size_t len) {
    return readFull(*(int *)ctx, buf, len);
}

int fdWrite(void *ctx, const void *buf, size_t len) {
    return writeAll(*(int *)ctx, buf, len);
}

void stageKeyDir(char out[32], long long t) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "files/%Y/%m/", &tm);
}

void stagePutKeyDir(const char *key_dir, long long t, char out[STAGE_KEY_DIR_BUF]) {
    if (key_dir) snprintf(out, STAGE_KEY_DIR_BUF, "%s/", key_dir);
    else stageKeyDir(out, t);
}

char *stagePercentDecode(const char *s) {
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out) return NULL;
    for (; *s; s++) {
        if (*s != '%') { *o++ = *s; continue; }
        if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2])) {
            free(out);
            return NULL;
        }
        char hex[3] = {s[1], s[2], '\0'};
        int c = (int)strtol(hex, NULL, 16);
        if (c == 0 || c == '/') {
            free(out);
            return NULL;
        }
        *o++ = (char)c;
        s += 2;
    }
    *o = '\0';
    return out;
}

/* Percent-encode all but the unreserved bytes and those in keep. */
static char *percentEncode(const char *s, const char *keep) {
    static const char hex[] = "0123456789ABCDEF";
    char *out = malloc(3 * strlen(s) + 1), *o = out;
    if (!out) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || strchr("-._~", *p) || (*keep && strchr(keep, *p))) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

char *stagePercentEncode(const char *s) { return percentEncode(s, "/"); }

char *stageQueryEncode(const char *s) { return percentEncode(s, ""); }

int stageCleanRelative(const char *p) {
    for (const char *c = p;;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (!c[n]) return 1;
        c += n + 1;
    }
}

/* --- vended access ---------------------------------------------------------- */

void stageUploadClear(stageUpload *u) {
    free(u->location);
    free(u->upload_id);
    memset(u, 0, sizeof *u);
}

/* The backend's vended operations, or 78 for a stage that has none. */
static const stageVendOps *vendOps(const stage *s, lakeError *err) {
    if (s->ops->vend) return s->ops->vend;
    errSet(err, LAKE_ECONFIG, "%s: presigned URLs need an S3 stage", s->url);
    return NULL;
}

static int expiresInRange(int64_t expires, lakeError *err) {
    if (expires < 1 || expires > STAGE_PRESIGN_MAX)
        return errSet(err, LAKE_EUSAGE, "an expiry must be 1 s to 7 days, not %lld s", (long long)expires);
    return 0;
}

/* 0 asks for the default. */
static int checkExpires(int64_t *expires, lakeError *err) {
    if (*expires == 0) *expires = STAGE_PRESIGN_DEFAULT;
    return expiresInRange(*expires, err);
}

int stageCanPresign(const stage *s) { return s->ops->vend != NULL; }

int stageVendGet(const stage *s, const char *location, int64_t expires, char **url, lakeError *err) {
    *url = NULL;
    const stageVendOps *v = vendOps(s, err);
    if (!v || checkExpires(&expires, err) || stageContains(s, location, err)) return err->code;
    return v->get(s, location, expires, 1, url, err);
}

int stageVendPut(const stage *s, const stagePutReq *req, int64_t expires, char **location, char **url,
                 lakeError *err) {
    *location = *url = NULL;
    const stageVendOps *v = vendOps(s, err);
    if (!v || checkExpires(&expires, err)) return err->code;
    return v->put(s, req, expires, location, url, err);
}

int stageVendBegin(const stage *s, const stagePutReq *req, stageUpload *out, lakeError *err) {
    memset(out, 0, sizeof *out);
    const stageVendOps *v = vendOps(s, err);
    return v ? v->begin(s, req, out, err) : (int)err->code;
}

int stageVendParts(const stage *s, const stageUpload *u, const stagePartReq *parts, size_t n,
                   int64_t expires, char **urls, lakeError *err) {
    const stageVendOps *v = vendOps(s, err);
    if (!v || checkExpires(&expires, err)) return err->code;
    if (n < 1 || n > STAGE_PRESIGN_PARTS_MAX)
        return errSet(err, LAKE_EUSAGE, "1 to %d part URLs at a time, not %zu", STAGE_PRESIGN_PARTS_MAX, n);
    return v->parts(s, u, parts, n, expires, urls, err);
}

int stageVendComplete(const stage *s, const stageUpload *u, int64_t size, int nparts, char *const *etags,
                      lakeError *err) {
    const stageVendOps *v = vendOps(s, err);
    return v ? v->complete(s, u, size, nparts, etags, err) : (int)err->code;
}

int stageVendAbort(const stage *s, const stageUpload *u, lakeError *err) {
    const stageVendOps *v = vendOps(s, err);
    return v ? v->abort(s, u, err) : (int)err->code;
}

int stageSetVendor(stage *s, const stageVendor *vendor, lakeError *err) {
    const stageVendOps *v = vendOps(s, err);
    return v ? v->set_vendor(s, vendor, err) : (int)err->code;
}

int stageVended(const stage *s) {
    return s->ops->vend && s->ops->vend->vendor(s) != NULL;
}

int stagePresignGet(stage *s, const char *location, int64_t expires, char **url, lakeError *err) {
    *url = NULL;
    const stageVendOps *v = vendOps(s, err);
    if (!v || expiresInRange(expires, err)) return err->code;
    if (stageContains(s, location, err)) return err->code;
    const stageVendor *vendor = v->vendor(s);
    if (vendor) return vendor->get(vendor->ctx, location, expires, url, err);
    return v->get(s, location, expires, 0, url, err);
}
