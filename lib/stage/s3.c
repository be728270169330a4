/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3.c - the s3:// stage backend.
 *
 * Objects live at PREFIX/files/YYYY/MM/<id> in the stage's bucket, like the
 * local backend's files.  A put reads the input into part buffers while
 * hashing it: an input that fits in one part goes up in one PUT; a larger
 * one as a multipart upload (s3put.c) whose parts are sent while the next
 * are read.  Nothing is visible under the key until the single PUT or the
 * CompleteMultipartUpload succeeds; every failure before that aborts the
 * upload and returns the error that caused it.
 *
 * The object's SHA-256 is recorded as x-amz-meta-sha256 when it is known
 * before the object is created: always for a single PUT, and for a
 * multipart upload when the put was told the digest (--sha256).  A get of
 * a bare location verifies against it when it is there.
 *
 * Containment is decided on the location string alone (s3url.c), before
 * any request, and needs no credentials: a stage whose AWS environment is
 * unusable still opens, and its puts and gets fail with that configuration
 * error (78) before they send anything.
 *
 * For gc: a listing pages through ListObjectsV2 (continuation tokens),
 * a delete is DeleteObject, many deletes are DeleteObjects of up to 1,000
 * keys a request (stageDeleter), and unfinished multipart uploads are found
 * with ListMultipartUploads and ended with AbortMultipartUpload; a store
 * that answers those two with 405 or 501 does not support them, and one
 * that answers DeleteObjects so is served one DeleteObject per object.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/crypto.h"
#include "core/id.h"
#include "core/log.h"
#include "core/retry.h"
#include "core/rfc3339.h"
#include "stage/backend.h"
#include "stage/s3.h"

int s3Usable(const s3Stage *ss, lakeError *err) {
    if (!ss->unusable.code) return 0;
    *err = ss->unusable;
    return err->code;
}

static char *s3StageRelative(const stage *s, const char *location) {
    const s3Stage *ss = (const s3Stage *)s;
    return s3Relative(ss->bucket, ss->prefix, location);
}

/* --- put ------------------------------------------------------------------ */

int s3NewKey(const s3Stage *ss, const char *key_dir, char **key, lakeError *err) {
    char id[ID_LEN + 1], keydir[STAGE_KEY_DIR_BUF];
    *key = NULL;
    if (idNew(id, err)) return err->code;
    stagePutKeyDir(key_dir, (long long)time(NULL), keydir);
    if (asprintf(key, "%s/%s%s", ss->prefix, keydir, id) < 0) {
        *key = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
    }
    return 0;
}

typedef struct putState {
    lakeReader *r;
    const stagePutOptions *opt;
    sha256Ctx *sha;
    int64_t total;
    char *ctype;       /* detected from the first bytes, when not stated */
    s3Upload *u;       /* the upload once begun: its failure stops reading */
} putState;

/* Fill buf with up to cap bytes of input, hashing them.  Returns the
 * number of bytes (less than cap only at the end of the input), or -1
 * with err set. */
static int64_t fillPart(putState *ps, char *buf, size_t cap, lakeError *err) {
    size_t got = 0;
    while (got < cap) {
        size_t want = cap - got < STAGE_BUF_SIZE ? cap - got : STAGE_BUF_SIZE;
        ssize_t n = ps->r->read(ps->r->ctx, buf + got, want);
        if (stageStopped(ps->opt)) return stageInterrupted(ps->r, err), -1;
        /* a part that failed gives up the read (interruptWake): its error */
        if (n < 0 && ps->u && s3UploadError(ps->u, err)) return -1;
        if (n < 0) return errSetErrno(err, LAKE_EFAIL, errno, "%s", ps->r->what), -1;
        if (n == 0) break;
        if (ps->total == 0 && !ps->opt->content_type) {
            /* the magic database is not kept while the part buffers fill */
            int rc = contentTypeDetect(buf + got, (size_t)n, &ps->ctype, err);
            contentTypeRelease();
            if (rc) return -1;
        }
        sha256Update(ps->sha, buf + got, (size_t)n);
        got += (size_t)n;
        ps->total += n;
        if (stageOverStated(ps->r, ps->opt, ps->total, err)) return -1;
        if (ps->opt->progress) progressAdd(ps->opt->progress, n);
        if (ps->u && s3UploadError(ps->u, err)) return -1;
    }
    return (int64_t)got;
}

/* One PUT of the whole object: its digest is known, so it goes along as
 * x-amz-content-sha256 and as x-amz-meta-sha256. */
static int putObject(s3Stage *ss, const char *key, const char *buf, size_t len,
                     const char *ctype, const char *sha, const stagePutOptions *opt,
                     lakeError *err) {
    s3Xfer x;
    int rc = s3XferInit(&x, &ss->client, ss->client.easy, "PUT", key, NULL, err);
    if (!rc) rc = s3XferHeader(&x, err, "Content-Type: %s", ctype);
    if (!rc) rc = s3XferHeader(&x, err, "x-amz-meta-sha256: %s", sha);
    if (!rc) {
        s3XferBody(&x, buf, len, sha);
        x.stop = opt->stop;
        rc = s3XferRun(&x, err);
    }
    s3XferFree(&x);
    return rc;
}

/* One PUT of the whole object through a URL the holder signed (vended
 * access): it binds the length, Content-MD5, Content-Type and
 * x-amz-meta-sha256, and names the key (*location).  A URL refused with
 * 403 (expired on the way) is asked for once more. */
static int putVended(s3Stage *ss, const char *key_dir, const char *buf, size_t len, const char *ctype,
                     const char *sha, const stagePutOptions *opt, char **location, lakeError *err) {
    char md5[STAGE_MD5_B64_LEN + 1];
    *location = NULL;
    if (s3Md5Base64(buf, len, md5)) return errSet(err, LAKE_EFAIL, "put: MD5 is not available");
    stagePutReq req = {key_dir, ctype, sha, (int64_t)len, md5};
    int rc = 0;
    for (int ask = 1; ask <= 2; ask++) {
        char *url = NULL;
        free(*location);
        if ((rc = ss->vendor.put(ss->vendor.ctx, &req, location, &url, err))) break;
        s3Xfer x;
        rc = s3XferInitUrl(&x, &ss->client, ss->client.easy, "PUT", url, *location, err);
        free(url);
        if (rc) break;
        if (!(rc = s3XferHeader(&x, err, "Content-Type: %s", ctype)) &&
            !(rc = s3XferHeader(&x, err, "Content-MD5: %s", md5)) &&
            !(rc = s3XferHeader(&x, err, "x-amz-meta-sha256: %s", sha))) {
            s3XferBody(&x, buf, len, sha);
            x.stop = opt->stop;
            rc = s3XferRun(&x, err);
        }
        int again = rc && x.status == 403 && ask == 1;
        s3XferFree(&x);
        if (!again) break;
    }
    if (rc) {
        free(*location);
        *location = NULL;
    }
    return rc;
}

/* The rest of a multipart upload: the first part (slot a, na bytes) is
 * read, and the first byte of the second (slot b, at buf_b).  Begin the
 * upload, send every part as it fills, check what was stated, complete. */
static int putMultipart(putState *ps, size_t part_size, int a, int64_t na, int b, char *buf_b,
                        char *sha_out, lakeError *err) {
    s3Upload *u = ps->u;
    const stagePutOptions *opt = ps->opt;
    char stated[SHA256_HEX_LEN + 1] = "";
    for (int i = 0; opt->expect_sha256 && i < SHA256_HEX_LEN; i++)
        stated[i] = (char)(opt->expect_sha256[i] | 0x20); /* hex digits: lower case */
    int rc = s3UploadBegin(u, opt->content_type ? opt->content_type : ps->ctype,
                           stated[0] ? stated : NULL, err);
    if (!rc) rc = s3UploadSubmit(u, a, (size_t)na, err);
    int cur = b;
    int64_t n = rc ? -1 : fillPart(ps, buf_b + 1, part_size - 1, err);
    if (n < 0 && !rc) rc = err->code;
    n += 1;
    while (!rc) {
        if ((rc = s3UploadSubmit(u, cur, (size_t)n, err)) || n < (int64_t)part_size) break;
        char *buf = s3UploadBuffer(u, &cur, err);
        if (!buf) { rc = err->code; break; }
        if ((n = fillPart(ps, buf, part_size, err)) <= 0) {
            s3UploadRelease(u, cur);
            rc = n < 0 ? err->code : 0;
            break;
        }
    }
    if (!rc) {
        sha256FinalHex(ps->sha, sha_out);
        rc = stageCheckStated(ps->r, opt, ps->total, sha_out, err);
    }
    if (!rc) rc = s3UploadFinish(u, ps->total, err);
    return rc;
}

static int s3Put(stage *s, const char *key_dir, lakeReader *r, const stagePutOptions *opt, fileValue *out,
                 lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    memset(out, 0, sizeof *out);
    out->size = -1;
    int vended = ss->vendor.get != NULL;
    if (!vended && s3Usable(ss, err)) return err->code;
    if (opt->content_type && strpbrk(opt->content_type, "\r\n"))
        return errSet(err, LAKE_EUSAGE, "--content-type: a content type is one line");
    if (opt->expect_size > S3_OBJECT_MAX)
        return errSet(err, LAKE_EFAIL, "%s: %lld bytes is more than S3's largest object (5 TiB)",
                      r->what, (long long)opt->expect_size);
    size_t part_size = (size_t)s3PartSize(opt->part_size, opt->expect_size);
    int jobs = opt->jobs > 0 ? opt->jobs : 1;

    char *key = NULL, *location = NULL;
    putState ps = {r, opt, sha256New(), 0, NULL, NULL};
    s3Upload *u = NULL;
    int rc = 0, a = -1, b = -1;
    if (!ps.sha) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put"); goto out; }
    if (!vended && (rc = s3NewKey(ss, key_dir, &key, err))) goto out;
    if (!(u = s3UploadNew(&ss->client, key, part_size, jobs, opt->stop))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
        goto out;
    }
    if (vended && (rc = s3UploadVend(u, &ss->vendor, key_dir, err))) goto out;

    /* Read the first part and, if it is full, one byte more: only then is
     * the input known to need more than one part. */
    char *bufA = s3UploadBuffer(u, &a, err), *bufB = NULL;
    int64_t na = bufA ? fillPart(&ps, bufA, part_size, err) : -1, nb = 0;
    if (na < 0) { rc = err->code; goto out; }
    if (na == (int64_t)part_size) {
        if (!(bufB = s3UploadBuffer(u, &b, err)) || (nb = fillPart(&ps, bufB, 1, err)) < 0) {
            rc = err->code;
            goto out;
        }
    }
    if (!ps.ctype && !opt->content_type && !(ps.ctype = strdup("application/octet-stream"))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
        goto out;
    }
    const char *ctype = opt->content_type ? opt->content_type : ps.ctype;
    if (nb == 0) {
        sha256FinalHex(ps.sha, out->sha256);
        if (!(rc = stageCheckStated(r, opt, ps.total, out->sha256, err)))
            rc = vended ? putVended(ss, key_dir, bufA, (size_t)na, ctype, out->sha256, opt, &location, err)
                        : putObject(ss, key, bufA, (size_t)na, ctype, out->sha256, opt, err);
    } else {
        ps.u = u;
        rc = putMultipart(&ps, part_size, a, na, b, bufB, out->sha256, err);
        if (!rc && vended && !(location = strdup(s3UploadLocation(u))))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
    }
    if (rc && stageStopped(opt)) rc = stageInterrupted(r, err);
    if (rc && ps.u) { /* the multipart upload was begun, or tried */
        s3UploadAbort(u, err);
        u = NULL;
    }
    if (rc) goto out;

    char ts[32];
    rfc3339Now(ts);
    out->location = vended ? location : s3Location(ss->bucket, key);
    location = NULL;
    out->size = ps.total;
    out->content_type = strdup(ctype);
    out->name = opt->name ? strdup(opt->name) : NULL;
    out->last_modified = strdup(ts);
    if (!out->location || !out->content_type || !out->last_modified || (opt->name && !out->name))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
out:
    if (rc) fileValueFree(out);
    s3UploadFree(u);
    sha256Free(ps.sha);
    free(ps.ctype);
    free(key);
    free(location);
    return rc;
}

/* --- get ------------------------------------------------------------------ */

typedef struct getState {
    s3Xfer *x;
    lakeWriter *w;
    sha256Ctx *sha;       /* NULL: not verifying */
    int64_t expect;       /* the FILE value's size, -1 when not checked */
    int64_t delivered;    /* bytes written to w so far, over all attempts */
    int checked;          /* this answer's first bytes were seen */
    int64_t skip;         /* of this answer, bytes w already has */
    progress *prog;
    const char *location;
    lakeError *err;
} getState;

static int getSink(void *ctx, const char *buf, size_t len) {
    getState *g = ctx;
    if (!g->checked) {
        /* a 200 is the whole object, also to a resumed (ranged) read: HTTP
         * lets a server ignore Range, so what w has is skipped */
        int whole = g->x->status == 200;
        int64_t size = whole ? g->x->length : g->x->range_total;
        g->checked = 1;
        g->skip = whole ? g->delivered : 0;
        if (g->expect >= 0 && size >= 0 && size != g->expect) {
            errSet(g->err, LAKE_EDATA, "%s: %lld bytes in the stage, not %lld", g->location,
                   (long long)size, (long long)g->expect);
            return -1;
        }
    }
    if (g->skip > 0) {
        size_t n = g->skip < (int64_t)len ? (size_t)g->skip : len;
        g->skip -= (int64_t)n;
        buf += n;
        len -= n;
        if (!len) return 0;
    }
    if (g->sha) sha256Update(g->sha, buf, len);
    if (g->w->write(g->w->ctx, buf, len) < 0) {
        errSetErrno(g->err, LAKE_EFAIL, errno, "%s", g->w->what);
        return -1;
    }
    g->delivered += (int64_t)len;
    if (g->prog) progressAdd(g->prog, (int64_t)len);
    return 0;
}

/* GetObject to w.  A transfer that breaks off after some bytes is resumed
 * from where it stopped (Range), so nothing is written twice; objects never
 * change under their key, so the rest is the rest of the same bytes (of a
 * 200, a store that ignores Range, those after the ones written).  An
 * object of known size larger than a part is read in parallel ranged GETs
 * instead (s3get.c), when the stage's get jobs are more than one; from the
 * first 200 to one of those on, the rest is read here, as one stream. */
static int s3Get(stage *s, const fileValue *fv, lakeWriter *w, int verify, progress *prog,
                 lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    char *rel = s3StageRelative(s, fv->location), *key = NULL, *url = NULL;
    int vended = ss->vendor.get != NULL, reasked = 0;
    if (!rel) return errSet(err, LAKE_EDATA, "%s: outside the managed stage", fv->location);
    if (!vended && s3Usable(ss, err)) {
        free(rel);
        return err->code;
    }
    int rc = 0;
    if (asprintf(&key, "%s/%s", ss->prefix, rel) < 0) {
        key = NULL;
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "get");
    }
    free(rel);
    s3Xfer x = {0};
    getState g = {.x = &x, .w = w, .expect = verify ? fv->size : -1, .prog = prog,
                  .location = fv->location, .err = err};
    char want[SHA256_HEX_LEN + 1] = "";
    snprintf(want, sizeof want, "%s", fv->sha256);
    if (!rc && verify && !(g.sha = sha256New())) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "get");
    /* an object of known size over one part: ranged GETs in parallel */
    size_t part_size = (size_t)s->get_part_size;
    int stream = s->get_jobs <= 1 || fv->size <= (int64_t)part_size;
    if (!rc && !stream) {
        char meta[SHA256_HEX_LEN + 1];
        rc = s3GetParts(ss, key, fv->location, fv->size, part_size, s->get_jobs, w, g.sha, prog,
                        meta, &g.delivered, err);
        if (!want[0] && meta[0]) memcpy(want, meta, sizeof want);
        stream = !rc && g.delivered < fv->size; /* Range ignored: the rest as one stream */
    }
    for (int attempt = 1; !rc && stream; attempt++) {
        if (vended && !url && (rc = ss->vendor.get(ss->vendor.ctx, fv->location, 0, &url, err))) break;
        if ((rc = vended ? s3XferInitUrl(&x, &ss->client, ss->client.easy, "GET", url, fv->location, err)
                         : s3XferInit(&x, &ss->client, ss->client.easy, "GET", key, NULL, err)))
            break;
        if (g.delivered > 0) rc = s3XferHeader(&x, err, "Range: bytes=%lld-", (long long)g.delivered);
        x.sink = getSink;
        x.sink_ctx = &g;
        g.checked = 0;
        if (!rc) rc = s3XferArm(&x, err);
        if (!rc) {
            s3XferRestart(&x);
            rc = s3XferOutcome(&x, curl_easy_perform(x.h), err);
        }
        if (!want[0] && x.meta_sha256[0]) memcpy(want, x.meta_sha256, sizeof want);
        int retry = rc && x.retryable && attempt < S3_ATTEMPTS;
        if (rc && vended && x.status == 403 && !reasked) { /* expired on the way: ask again, once */
            reasked = retry = 1;
            free(url);
            url = NULL;
        }
        s3XferFree(&x);
        if (!retry) {
            if (rc && x.retryable) s3NoteAttempts(err, attempt);
            break;
        }
        if (retrySleep(s3BackoffMs(attempt), NULL)) break;
        rc = 0;
    }
    if (!rc && verify) {
        char got[SHA256_HEX_LEN + 1];
        sha256FinalHex(g.sha, got);
        if (fv->size >= 0 && g.delivered != fv->size)
            rc = errSet(err, LAKE_EDATA, "%s: %lld bytes in the stage, not %lld", fv->location,
                        (long long)g.delivered, (long long)fv->size);
        else if (!want[0])
            logWarn("%s: no recorded SHA-256; not verified", fv->location);
        else if (strcmp(got, want) != 0)
            rc = errSet(err, LAKE_EDATA, "%s: SHA-256 mismatch (expected %s, got %s)",
                        fv->location, want, got);
    }
    sha256Free(g.sha);
    free(key);
    free(url);
    return rc;
}

/* --- gc: listing, deleting, aborting uploads ------------------------------ */

/* The most of one listing answer kept in memory: a page of 1000 keys is
 * a few hundred KiB. */
#define LIST_BODY_MAX (8 * 1024 * 1024)

typedef struct bodyBuf {
    char *buf;
    size_t len, cap;
    lakeError *err;
    const char *what;
} bodyBuf;

static int bodySink(void *ctx, const char *buf, size_t len) {
    bodyBuf *b = ctx;
    if (b->len + len > LIST_BODY_MAX) {
        errSet(b->err, LAKE_EFAIL, "%s: the listing answer is larger than %d bytes", b->what,
               LIST_BODY_MAX);
        return -1;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64 * 1024;
        while (cap < b->len + len + 1) cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            errSetErrno(b->err, LAKE_EFAIL, ENOMEM, "%s", b->what);
            return -1;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, buf, len);
    b->len += len;
    b->buf[b->len] = '\0';
    return 0;
}

/* A request on the bucket with query: a GET, or (send not NULL) a POST of
 * the XML document send with its Content-MD5 (base64, as S3 asks of
 * DeleteObjects).  The answer's body into *b.  Retried like s3XferRun,
 * but the body starts afresh at each attempt (a sink would otherwise keep
 * the bytes of a broken one).  *status gets the HTTP status, also of a
 * refusal. */
static int bucketRequest(s3Stage *ss, const char *query, const char *send, size_t send_len,
                         const char *md5, bodyBuf *b, long *status, lakeError *err) {
    b->err = err;
    b->what = ss->base.url;
    int rc = 0;
    *status = 0;
    for (int attempt = 1;; attempt++) {
        s3Xfer x;
        b->len = 0;
        if (b->buf) b->buf[0] = '\0';
        if ((rc = s3XferInit(&x, &ss->client, ss->client.easy, send ? "POST" : "GET", "", query,
                             err)))
            return rc;
        x.sink = bodySink;
        x.sink_ctx = b;
        if (send) {
            rc = s3XferHeader(&x, err, "Content-Type: application/xml");
            if (!rc) rc = s3XferHeader(&x, err, "Content-MD5: %s", md5);
            s3XferBody(&x, send, send_len, NULL);
        }
        if (!rc && !(rc = s3XferArm(&x, err))) {
            s3XferRestart(&x);
            rc = s3XferOutcome(&x, curl_easy_perform(x.h), err);
        }
        *status = x.status;
        int retry = rc && x.retryable && attempt < S3_ATTEMPTS;
        s3XferFree(&x);
        if (!retry) break;
        if (retrySleep(s3BackoffMs(attempt), NULL)) break;
    }
    if (rc) b->len = 0;
    return rc;
}

static int bucketGet(s3Stage *ss, const char *query, bodyBuf *b, long *status, lakeError *err) {
    return bucketRequest(ss, query, NULL, 0, NULL, b, status, err);
}

/* An S3 time ("2026-12-02T13:08:02.000Z") as seconds since the epoch; -1
 * if malformed or missing. */
static long long isoTime(const char *t) {
    long long secs;
    return t && rfc3339Parse(t, &secs, NULL, NULL) == 0 ? secs : -1;
}

/* The next <name>…</name> block of xml at or after *pos: its start and
 * length, *pos moved past it.  0 when there is none. */
static int nextBlock(const char *xml, size_t len, size_t *pos, const char *name, const char **blk,
                     size_t *blen) {
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", name);
    snprintf(close, sizeof close, "</%s>", name);
    const char *p = memmem(xml + *pos, len - *pos, open, strlen(open));
    if (!p) return 0;
    const char *e = memmem(p, (size_t)(xml + len - p), close, strlen(close));
    if (!e) return 0;
    *blk = p;
    *blen = (size_t)(e - p) + strlen(close);
    *pos = (size_t)(e - xml) + strlen(close);
    return 1;
}

/* A listing page says there is more (<IsTruncated>true</IsTruncated>). */
static int listTruncated(const char *xml, size_t len) {
    char *t = s3XmlText(xml, len, "IsTruncated");
    int more = t && strcmp(t, "true") == 0;
    free(t);
    return more;
}

/* ListObjectsV2 pages (in key order) of the keys under prefix, after the
 * stage key `after` when not NULL: start-after on the first request, the
 * continuation tokens carry it on. */
static int s3ListFrom(stage *s, const char *prefix, const char *after, stageListFn fn, void *ctx,
                      lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    if (s3Usable(ss, err)) return err->code;
    bodyBuf b = {0};
    char *full = NULL, *pfx = NULL, *token = NULL, *query = NULL, *start = NULL, *fullAfter = NULL;
    int rc = 0;
    if (asprintf(&full, "%s/%s", ss->prefix, prefix) < 0) full = NULL;
    if (after && asprintf(&fullAfter, "%s/%s", ss->prefix, after) < 0) fullAfter = NULL;
    if (!full || !(pfx = stageQueryEncode(full)) || (after && (!fullAfter || !(start = stageQueryEncode(fullAfter))))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "list");
        goto out;
    }
    size_t plen = strlen(ss->prefix) + 1;
    for (;;) {
        char *tok = token ? stageQueryEncode(token) : NULL;
        free(query);
        query = NULL;
        /* the parameters in the sorted order SigV4's canonical query wants */
        if ((token && !tok) ||
            asprintf(&query, "%s%s%slist-type=2&prefix=%s%s%s", tok ? "continuation-token=" : "",
                     tok ? tok : "", tok ? "&" : "", pfx, start && !tok ? "&start-after=" : "",
                     start && !tok ? start : "") < 0) {
            query = NULL;
            free(tok);
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "list");
            goto out;
        }
        free(tok);
        long status;
        if ((rc = bucketGet(ss, query, &b, &status, err))) goto out;
        if (!s3XmlRootIs(b.buf, b.len, "ListBucketResult")) {
            rc = errSet(err, LAKE_EFAIL, "%s: the object store's listing is not a ListBucketResult",
                        s->url);
            goto out;
        }
        size_t pos = 0, blen;
        const char *blk;
        while (!rc && nextBlock(b.buf, b.len, &pos, "Contents", &blk, &blen)) {
            char *key = s3XmlText(blk, blen, "Key"), *size = s3XmlText(blk, blen, "Size");
            char *mod = s3XmlText(blk, blen, "LastModified"), *loc = NULL;
            long long mtime = isoTime(mod);
            if (!key || !size || mtime < 0 || strncmp(key, full, strlen(full)) != 0) {
                rc = errSet(err, LAKE_EFAIL, "%s: malformed entry in the object store's listing", s->url);
            } else if (!(loc = s3Location(ss->bucket, key))) {
                rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "list");
            } else {
                stageObject o = {key + plen, loc, strtoll(size, NULL, 10), mtime, 0};
                rc = fn(ctx, &o, err);
            }
            free(key);
            free(size);
            free(mod);
            free(loc);
        }
        if (rc) goto out;
        int more = listTruncated(b.buf, b.len);
        free(token);
        token = more ? s3XmlText(b.buf, b.len, "NextContinuationToken") : NULL;
        if (!more) break;
        if (!token) {
            rc = errSet(err, LAKE_EFAIL, "%s: a truncated listing without a continuation token", s->url);
            goto out;
        }
    }
out:
    free(b.buf);
    free(full);
    free(pfx);
    free(token);
    free(query);
    free(start);
    free(fullAfter);
    return rc;
}

static int s3List(stage *s, const char *prefix, stageListFn fn, void *ctx, lakeError *err) {
    return s3ListFrom(s, prefix, NULL, fn, ctx, err);
}

static int s3ListAfter(stage *s, const char *prefix, const char *after, stageListFn fn, void *ctx,
                       lakeError *err) {
    return s3ListFrom(s, prefix, after, fn, ctx, err);
}

static int s3Delete(stage *s, const char *location, lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    char *rel = s3StageRelative(s, location), *key = NULL;
    if (!rel) return errSet(err, LAKE_EDATA, "%s: outside the managed stage", location);
    if (s3Usable(ss, err)) {
        free(rel);
        return err->code;
    }
    int rc = asprintf(&key, "%s/%s", ss->prefix, rel) < 0 ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "delete") : 0;
    free(rel);
    if (rc) return rc;
    s3Xfer x;
    if (!(rc = s3XferInit(&x, &ss->client, ss->client.easy, "DELETE", key, NULL, err))) {
        rc = s3XferRun(&x, err);
        if (rc == LAKE_ENOINPUT && x.status == 404) { /* already gone */
            errClear(err);
            rc = 0;
        }
        s3XferFree(&x);
    }
    free(key);
    return rc;
}

/* DeleteObjects (POST /?delete): at most STAGE_DELETE_BATCH keys a
 * request, in Quiet mode (the answer lists only the keys it failed to
 * remove), with Content-MD5 as S3 requires.  The body is kept within
 * DELETE_BODY_MAX: the default cap of radosgw's (rgw_max_put_param_size,
 * 1 MiB); AWS states none but the key count.  A key's XML is at most six
 * times its bytes ("&quot;" for '"') plus its tags, and a key is never
 * longer than its location, so DELETE_BATCH_BYTES of locations always
 * fit: lake's own keys (about 60 bytes) make batches of 1,000, keys longer
 * than about 170 bytes smaller ones. */
#define DELETE_BODY_MAX (1024 * 1024)
#define DELETE_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>" \
                    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
#define DELETE_TAIL "</Delete>"
#define DELETE_OBJECT_TAGS 32 /* "<Object><Key></Key></Object>" and room */
#define DELETE_BATCH_BYTES \
    ((DELETE_BODY_MAX - 256 - STAGE_DELETE_BATCH * DELETE_OBJECT_TAGS) / 6)

/* s escaped as XML character data at o (at most 6 bytes for each of s);
 * returns the bytes written.  Keys with control characters never get here
 * (they are outside the stage), but would be written as references. */
static size_t xmlEscape(char *o, const char *s) {
    char *start = o;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *ent = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;"
                        : *p == '"' ? "&quot;" : *p == '\'' ? "&apos;" : NULL;
        if (ent) o += sprintf(o, "%s", ent);
        else if (*p < 0x20) o += sprintf(o, "&#%d;", *p);
        else *o++ = (char)*p;
    }
    return (size_t)(o - start);
}

/* The body of a DeleteObjects request for keys[pend[0..np)] into doc (of
 * DELETE_BODY_MAX + 1 bytes); its length. */
static size_t deleteDoc(char *doc, char *const *keys, const size_t *pend, size_t np) {
    size_t len = (size_t)sprintf(doc, "%s", DELETE_HEAD);
    for (size_t j = 0; j < np; j++) {
        len += (size_t)sprintf(doc + len, "<Object><Key>");
        len += xmlEscape(doc + len, keys[pend[j]]);
        len += (size_t)sprintf(doc + len, "</Key></Object>");
    }
    len += (size_t)sprintf(doc + len, "%s", DELETE_TAIL);
    return len;
}

/* The HTTP status a single request would have had for an S3 error code of
 * one key in a DeleteObjects answer (which is 200 as a whole); which codes
 * are transient is s3ErrorCode's to say, from the code. */
static long keyErrorStatus(const char *code) {
    if (!code) return 500;
    if (strcmp(code, "AccessDenied") == 0) return 403;
    if (strcmp(code, "NoSuchKey") == 0) return 404;
    return 400;
}

/* True when an answer's status says the store does not implement it. */
static int notImplemented(long status) { return status == 405 || status == 501; }

/* Remove the n objects at locs with DeleteObjects.  A request that fails
 * as a whole with a transient error (a 5xx, or a 200 whose body is an
 * S3 error document) is sent again, and so is a key the answer lists with
 * a transient error (InternalError, SlowDown...), up to S3_ATTEMPTS
 * requests in all; one that is already gone (NoSuchKey)
 * is removed; any other is reported through failed, with the exit code a
 * single DeleteObject refused so would have (AccessDenied: 77). */
static int s3DeleteBatch(stage *s, char *const *locs, size_t n,
                         void (*failed)(void *ctx, size_t i, const lakeError *why), void *ctx,
                         int *unsupported, lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    if (s3Usable(ss, err)) return err->code;
    char **keys = calloc(n, sizeof *keys), *doc = malloc(DELETE_BODY_MAX + 1);
    size_t *pend = calloc(n, sizeof *pend), np = n;
    unsigned char *again = calloc(n, 1);
    bodyBuf b = {0};
    size_t need = sizeof DELETE_HEAD + sizeof DELETE_TAIL;
    int rc = 0;
    if (!keys || !doc || !pend || !again) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "delete"); goto out; }
    for (size_t i = 0; i < n; i++) {
        char *rel = s3StageRelative(s, locs[i]);
        if (!rel) { rc = errSet(err, LAKE_EDATA, "%s: outside the managed stage", locs[i]); goto out; }
        if (asprintf(&keys[i], "%s/%s", ss->prefix, rel) < 0) keys[i] = NULL;
        free(rel);
        if (!keys[i]) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "delete"); goto out; }
        pend[i] = i;
        need += DELETE_OBJECT_TAGS + 6 * strlen(keys[i]);
    }
    if (need > DELETE_BODY_MAX) { /* the deleter's bound keeps within it */
        rc = errSet(err, LAKE_EFAIL, "%s/?delete: %zu keys too long for one request", s->url, n);
        goto out;
    }
    for (int attempt = 1; np; attempt++) {
        size_t len = deleteDoc(doc, keys, pend, np);
        char md5[STAGE_MD5_B64_LEN + 1];
        if (s3Md5Base64(doc, len, md5)) {
            rc = errSet(err, LAKE_EFAIL, "delete: MD5 is not available");
            goto out;
        }
        long status;
        if ((rc = bucketRequest(ss, "delete=", doc, len, md5, &b, &status, err))) {
            if (notImplemented(status)) { /* a store without DeleteObjects */
                *unsupported = 1;
                errClear(err);
                rc = 0;
            }
            goto out;
        }
        if (s3XmlRootIs(b.buf, b.len, "Error")) { /* S3 may answer 200 with an error */
            char *code = s3XmlText(b.buf, b.len, "Code");
            int retry;
            rc = errSet(err, s3ErrorCode(500, code, &retry),
                        "%s/?delete: the object store failed to remove objects (%s)", s->url,
                        code ? code : "error");
            free(code);
            if (!retry || attempt >= S3_ATTEMPTS) goto out;
            errClear(err); /* as a 5xx: the same keys again */
            rc = 0;
            if (retrySleep(s3BackoffMs(attempt), NULL)) break;
            continue;
        }
        if (!s3XmlRootIs(b.buf, b.len, "DeleteResult")) {
            rc = errSet(err, LAKE_EFAIL, "%s/?delete: the object store's answer is not a DeleteResult",
                        s->url);
            goto out;
        }
        size_t pos = 0, blen;
        const char *blk;
        while (nextBlock(b.buf, b.len, &pos, "Error", &blk, &blen)) {
            char *key = s3XmlText(blk, blen, "Key"), *code = s3XmlText(blk, blen, "Code");
            char *msg = s3XmlText(blk, blen, "Message");
            size_t j = 0;
            while (key && j < np && strcmp(keys[pend[j]], key) != 0) j++;
            int retry = 0;
            lakeCode c = s3ErrorCode(keyErrorStatus(code), code, &retry);
            if (key && j < np && c != LAKE_ENOINPUT && !again[pend[j]]) {
                size_t i = pend[j];
                if (retry && attempt < S3_ATTEMPTS) {
                    again[i] = 1;
                } else {
                    again[i] = 2; /* told once, not sent again */
                    lakeError why = {0};
                    /* radosgw's message is the code again */
                    int has_msg = msg && msg[0] && !(code && strcmp(msg, code) == 0);
                    errSet(&why, c, "%s: not removed: %s (%s%s%.160s)", locs[i],
                           c == LAKE_EPERM ? "access denied"
                           : retry         ? "the object store is failing or busy"
                                           : "refused by the object store",
                           code ? code : "error", has_msg ? ": " : "", has_msg ? msg : "");
                    snprintf(why.cause, sizeof why.cause, "S3 %s", code ? code : "error");
                    failed(ctx, i, &why);
                }
            }
            free(key);
            free(code);
            free(msg);
        }
        size_t left = 0;
        for (size_t j = 0; j < np; j++)
            if (again[pend[j]] == 1) {
                again[pend[j]] = 0;
                pend[left++] = pend[j];
            }
        np = left;
        if (np && retrySleep(s3BackoffMs(attempt), NULL)) break;
    }
out:
    for (size_t i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
    free(doc);
    free(pend);
    free(again);
    free(b.buf);
    return rc;
}

/* AbortMultipartUpload of key's upload id.  *refused is set (and 0
 * returned) when the store does not implement it; an upload already gone
 * is not an error. */
static int abortUpload(s3Stage *ss, const char *key, const char *id, int *refused, lakeError *err) {
    char *qid = stageQueryEncode(id), *q = NULL;
    if (!qid || asprintf(&q, "uploadId=%s", qid) < 0) {
        free(qid);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "uploads");
    }
    free(qid);
    s3Xfer x;
    int rc = s3XferInit(&x, &ss->client, ss->client.easy, "DELETE", key, q, err);
    if (!rc) {
        rc = s3XferRun(&x, err);
        if (rc && (notImplemented(x.status) || s3XferUploadGone(&x))) {
            *refused = notImplemented(x.status);
            errClear(err);
            rc = 0;
        }
        s3XferFree(&x);
    }
    free(q);
    return rc;
}

static int s3AbortUploads(stage *s, long long before, int dry_run, stageUploadFn fn, void *ctx,
                          int *supported, lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    *supported = 0;
    if (s3Usable(ss, err)) return err->code;
    bodyBuf b = {0};
    char *full = NULL, *pfx = NULL, *query = NULL, *kmark = NULL, *umark = NULL;
    int rc = 0;
    if (asprintf(&full, "%s/", ss->prefix) < 0) full = NULL;
    if (!full || !(pfx = stageQueryEncode(full))) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "uploads"); goto out; }
    for (;;) {
        char *k = kmark ? stageQueryEncode(kmark) : NULL, *u = umark ? stageQueryEncode(umark) : NULL;
        free(query);
        query = NULL;
        int bad = (kmark && !k) || (umark && !u);
        if (bad || asprintf(&query, "%s%s%sprefix=%s%s%s%suploads=", k ? "key-marker=" : "", k ? k : "",
                            k ? "&" : "", pfx, u ? "&upload-id-marker=" : "", u ? u : "",
                            "&") < 0) {
            query = NULL;
            free(k);
            free(u);
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "uploads");
            goto out;
        }
        free(k);
        free(u);
        long status = 0;
        rc = bucketGet(ss, query, &b, &status, err);
        if ((rc && notImplemented(status)) ||
            (!rc && !s3XmlRootIs(b.buf, b.len, "ListMultipartUploadsResult"))) {
            errClear(err);
            rc = 0; /* not supported: a store that ignores ?uploads lists objects */
            goto out;
        }
        if (rc) goto out;
        *supported = 1;
        int refused = 0;
        size_t pos = 0, blen;
        const char *blk;
        while (!rc && !refused && nextBlock(b.buf, b.len, &pos, "Upload", &blk, &blen)) {
            char *key = s3XmlText(blk, blen, "Key"), *id = s3XmlText(blk, blen, "UploadId");
            char *init = s3XmlText(blk, blen, "Initiated"), *loc = NULL;
            long long t = isoTime(init);
            if (!key || !id || t < 0) {
                rc = errSet(err, LAKE_EFAIL, "%s: malformed entry in the object store's upload listing", s->url);
            } else if (t <= before && strncmp(key, full, strlen(full)) == 0) {
                if (!(loc = s3Location(ss->bucket, key))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "uploads");
                else if (!dry_run) rc = abortUpload(ss, key, id, &refused, err);
                if (!rc && !refused && fn) fn(ctx, loc, t);
            }
            free(key);
            free(id);
            free(init);
            free(loc);
        }
        if (refused) *supported = 0;
        if (rc || refused) goto out;
        int more = listTruncated(b.buf, b.len);
        free(kmark);
        free(umark);
        kmark = more ? s3XmlText(b.buf, b.len, "NextKeyMarker") : NULL;
        umark = more ? s3XmlText(b.buf, b.len, "NextUploadIdMarker") : NULL;
        if (!more || !kmark) break;
    }
out:
    free(b.buf);
    free(full);
    free(pfx);
    free(query);
    free(kmark);
    free(umark);
    return rc;
}

/* --- the stage ------------------------------------------------------------ */

static void s3StageClose(stage *s) {
    s3Stage *ss = (s3Stage *)s;
    if (ss->vendor.free) ss->vendor.free(ss->vendor.ctx);
    s3ClientFree(&ss->client);
    free(ss->bucket);
    free(ss->prefix);
    free(ss->base.url);
    free(ss);
    curl_global_cleanup();
}

static const stageOps s3Ops = {.put = s3Put,
                               .get = s3Get,
                               .relative = s3StageRelative,
                               .close = s3StageClose,
                               .list = s3List,
                               .list_after = s3ListAfter,
                               .del = s3Delete,
                               .del_batch = s3DeleteBatch,
                               .delete_batch_bytes = DELETE_BATCH_BYTES,
                               .abort_uploads = s3AbortUploads,
                               .vend = &s3VendOps};

int s3StageOpen(const char *url, stage **out, lakeError *err) {
    char *bucket, *prefix;
    int rc = s3ParseStage(url, &bucket, &prefix, err);
    if (rc) return rc;
    s3Stage *ss = calloc(1, sizeof *ss);
    char *enc = stagePercentEncode(prefix);
    if (!ss || !enc || asprintf(&ss->base.url, "s3://%s/%s", bucket, enc) < 0) {
        if (ss) ss->base.url = NULL;
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    free(enc);
    const char *why = rc ? NULL : lakeCurlReady(); /* an error, not curl.h's exit */
    if (why)
        rc = errSet(err, LAKE_EFAIL, "%s", why);
    else if (!rc && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        rc = errSet(err, LAKE_EFAIL, "%s: libcurl failed to initialise", url);
    else if (!rc && s3ClientInit(&ss->client, bucket, ss->base.url, &ss->unusable) &&
             ss->unusable.code != LAKE_ECONFIG) {
        *err = ss->unusable; /* out of memory */
        rc = err->code;
        curl_global_cleanup();
    }
    if (rc) {
        if (ss) free(ss->base.url);
        free(ss);
        free(bucket);
        free(prefix);
        return rc;
    }
    ss->base.ops = &s3Ops;
    ss->bucket = bucket;
    ss->prefix = prefix;
    *out = &ss->base;
    return 0;
}
