/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3vend.c - vended access to an S3 stage (stage.h, DESIGN §4).
 *
 * The holder's side: URLs signed with the stage's own keys for a client
 * that has none, under keys the holder generates; the bodiless or small
 * requests of a multipart upload (create, complete, abort) sent by the
 * holder itself.  No object byte passes through here.  Each call that
 * sends a request uses a curl handle of its own, so that the threads of a
 * server may call at once.
 *
 * The holder's keys are checked before it signs for someone else (a URL signed
 * with a wrong secret would only fail later, at S3, with a message about
 * the client's request): one cheap listing of the prefix, and its success
 * is remembered for KEYS_OK_MS.  A failure of the holder's own requests is
 * "unavailable" for the client; the detail (S3's code) goes to the cause,
 * which only the holder's log shows.
 *
 * The client's side: the stageVendor attached by stageSetVendor, which
 * s3.c and s3put.c use in place of the keys.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/crypto.h"
#include "core/utf8.h"
#include "stage/backend.h"
#include "stage/s3.h"

#define KEYS_OK_MS (60 * 1000)
#define CONTENT_TYPE_MAX 255

static long long nowMs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A failure of a request the holder sent: unavailable for the client, the
 * detail kept for the holder's log. */
static int holderFailed(const char *what, lakeError *err) {
    lakeError e = *err;
    errSetStatus(err, "unavailable", "%s: the object store did not take the server's request", what);
    snprintf(err->cause, sizeof err->cause, "%.180s%s%.70s", e.msg, e.cause[0] ? " / " : "", e.cause);
    return err->code;
}

/* 0 when the holder has keys the object store accepts: a listing of one
 * key below the prefix, remembered KEYS_OK_MS. */
static int keysAccepted(const stage *s, lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    if (s3Usable(ss, err)) return err->code;
    if (atomic_load(&ss->keys_ok_until) > nowMs()) return 0;
    char *pfx = NULL, *enc = NULL, *query = NULL;
    int rc = asprintf(&pfx, "%s/", ss->prefix) < 0 ? -1 : 0;
    if (!rc && !(enc = stageQueryEncode(pfx))) rc = -1;
    if (!rc && asprintf(&query, "list-type=2&max-keys=1&prefix=%s", enc) < 0) {
        query = NULL;
        rc = -1;
    }
    free(pfx);
    free(enc);
    if (rc) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    CURL *h = curl_easy_init();
    s3Xfer x;
    if (!h) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    else if (!(rc = s3XferInit(&x, &ss->client, h, "GET", "", query, err))) {
        rc = s3XferRun(&x, err);
        s3XferFree(&x);
    }
    if (h) curl_easy_cleanup(h);
    free(query);
    if (rc) return holderFailed(ss->base.url, err);
    atomic_store(&ss->keys_ok_until, nowMs() + KEYS_OK_MS);
    return 0;
}

/* The full key of a location in the stage (already contained). */
static char *keyOf(const s3Stage *ss, const char *location) {
    char *rel = s3Relative(ss->bucket, ss->prefix, location), *key = NULL;
    if (rel && asprintf(&key, "%s/%s", ss->prefix, rel) < 0) key = NULL;
    free(rel);
    return key;
}

static int validMd5(const char *m) {
    if (!m || strlen(m) != STAGE_MD5_B64_LEN || strcmp(m + 22, "==") != 0) return 0;
    for (int i = 0; i < 22; i++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", m[i])) return 0;
    return 1;
}

/* A content type that survives a signed header unchanged: printable
 * ASCII, no space at either end or twice in a row. */
static int validContentType(const char *t) {
    size_t n = t ? strlen(t) : 0;
    if (n == 0 || n > CONTENT_TYPE_MAX || t[0] == ' ' || t[n - 1] == ' ') return 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0x20 || t[i] > 0x7e || (t[i] == ' ' && t[i + 1] == ' ')) return 0;
    return 1;
}

static int checkPutReq(const stagePutReq *r, int single, lakeError *err) {
    if (r->key_dir && (strlen(r->key_dir) > STAGE_KEY_DIR_MAX || !stageCleanRelative(r->key_dir)))
        return errSet(err, LAKE_EUSAGE, "dir: not a clean key directory below the stage");
    if (!validContentType(r->content_type))
        return errSet(err, LAKE_EUSAGE, "content_type: 1 to %d printable ASCII characters", CONTENT_TYPE_MAX);
    if ((single || r->sha256) && (!r->sha256 || !sha256IsHex(r->sha256)))
        return errSet(err, LAKE_EUSAGE, "sha256: 64 hex digits%s", single ? " (required for one PUT)" : "");
    if (single && (r->size < 0 || r->size > STAGE_PART_MAX))
        return errSet(err, LAKE_EUSAGE, "size: one PUT takes 0 to %lld bytes", (long long)STAGE_PART_MAX);
    if (single && !validMd5(r->md5)) return errSet(err, LAKE_EUSAGE, "md5: the base64 of 16 bytes");
    return 0;
}

/* 0 when u names an upload this stage's keys began (its ticket matches),
 * with *key its object key; 77 otherwise. */
static int checkTicket(const s3Stage *ss, const stageUpload *u, char **key, lakeError *err) {
    *key = NULL;
    if (!u->location || !u->upload_id || !u->upload_id[0] || strlen(u->upload_id) > 1024 ||
        !utf8Valid((const unsigned char *)u->upload_id, strlen(u->upload_id)))
        return errSet(err, LAKE_EUSAGE, "an upload needs its location, upload_id and ticket");
    if (stageContains(&ss->base, u->location, err)) return err->code;
    char want[STAGE_TICKET_LEN + 1];
    s3UploadTicket(&ss->client, u->location, u->upload_id, want);
    if (!want[0]) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    if (strlen(u->ticket) != STAGE_TICKET_LEN || CRYPTO_memcmp(want, u->ticket, STAGE_TICKET_LEN) != 0)
        return errSetStatus(err, "permission_denied", "not an upload this server began");
    if (!(*key = keyOf(ss, u->location))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    return 0;
}

static int vendGet(const stage *s, const char *location, int64_t expires, int probe, char **url,
                   lakeError *err) {
    const s3Stage *ss = (const s3Stage *)s;
    if (probe ? keysAccepted(s, err) : s3Usable(ss, err)) return err->code;
    char *key = keyOf(ss, location);
    *url = key ? s3Presign(&ss->client, "GET", key, NULL, NULL, 0, expires, time(NULL)) : NULL;
    free(key);
    return *url ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "presign");
}

static int vendPut(const stage *s, const stagePutReq *req, int64_t expires, char **location, char **url,
                   lakeError *err) {
    const s3Stage *ss = (const s3Stage *)s;
    char *key = NULL, h[4][320];
    if (checkPutReq(req, 1, err) || keysAccepted(s, err) || s3NewKey(ss, req->key_dir, &key, err))
        return err->code;
    snprintf(h[0], sizeof h[0], "content-length:%lld", (long long)req->size);
    snprintf(h[1], sizeof h[1], "content-md5:%s", req->md5);
    snprintf(h[2], sizeof h[2], "content-type:%s", req->content_type);
    snprintf(h[3], sizeof h[3], "x-amz-meta-sha256:%s", req->sha256);
    const char *hdr[] = {h[0], h[1], h[2], h[3]};
    *url = s3Presign(&ss->client, "PUT", key, NULL, hdr, 4, expires, time(NULL));
    *location = s3Location(ss->bucket, key);
    free(key);
    if (*url && *location) return 0;
    free(*url);
    free(*location);
    *url = *location = NULL;
    return errSetErrno(err, LAKE_EFAIL, ENOMEM, "presign");
}

static int vendBegin(const stage *s, const stagePutReq *req, stageUpload *out, lakeError *err) {
    const s3Stage *ss = (const s3Stage *)s;
    char *key = NULL;
    if (checkPutReq(req, 0, err) || s3Usable(ss, err) || s3NewKey(ss, req->key_dir, &key, err))
        return err->code;
    CURL *h = curl_easy_init();
    int rc = h ? s3CreateUpload(&ss->client, h, key, req->content_type, req->sha256, NULL, &out->upload_id, err)
               : errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    if (h) curl_easy_cleanup(h);
    if (rc && err->code != LAKE_EFAIL) rc = holderFailed(ss->base.url, err);
    if (!rc && !(out->location = s3Location(ss->bucket, key))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    if (!rc) {
        s3UploadTicket(&ss->client, out->location, out->upload_id, out->ticket);
        if (!out->ticket[0]) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    }
    if (rc) stageUploadClear(out);
    free(key);
    return rc;
}

static int vendParts(const stage *s, const stageUpload *u, const stagePartReq *parts, size_t n,
                     int64_t expires, char **urls, lakeError *err) {
    const s3Stage *ss = (const s3Stage *)s;
    char *key = NULL, *id = NULL;
    for (size_t i = 0; i < n; i++) urls[i] = NULL;
    if (s3Usable(ss, err) || checkTicket(ss, u, &key, err)) return err->code;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const stagePartReq *p = &parts[i];
        if (p->number < 1 || p->number > S3_MAX_PARTS || p->size < 1 || p->size > STAGE_PART_MAX ||
            !validMd5(p->md5))
            rc = errSet(err, LAKE_EUSAGE, "parts: a part has a number 1 to %d, a size 1 to %lld and an md5",
                        S3_MAX_PARTS, (long long)STAGE_PART_MAX);
    }
    if (!rc && !(id = stageQueryEncode(u->upload_id))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "presign");
    time_t now = time(NULL);
    for (size_t i = 0; !rc && i < n; i++) {
        char h[2][64], *query = NULL;
        snprintf(h[0], sizeof h[0], "content-length:%lld", (long long)parts[i].size);
        snprintf(h[1], sizeof h[1], "content-md5:%s", parts[i].md5);
        const char *hdr[] = {h[0], h[1]};
        if (asprintf(&query, "partNumber=%d&uploadId=%s", parts[i].number, id) < 0) query = NULL;
        if (!query || !(urls[i] = s3Presign(&ss->client, "PUT", key, query, hdr, 2, expires, now)))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "presign");
        free(query);
    }
    if (rc)
        for (size_t i = 0; i < n; i++) {
            free(urls[i]);
            urls[i] = NULL;
        }
    free(id);
    free(key);
    return rc;
}

static int vendComplete(const stage *s, const stageUpload *u, int64_t size, int nparts, char *const *etags,
                        lakeError *err) {
    const s3Stage *ss = (const s3Stage *)s;
    char *key = NULL;
    if (s3Usable(ss, err) || checkTicket(ss, u, &key, err)) return err->code;
    int rc = 0;
    if (nparts < 1 || nparts > S3_MAX_PARTS)
        rc = errSet(err, LAKE_EUSAGE, "parts: 1 to %d of them", S3_MAX_PARTS);
    for (int i = 0; !rc && i < nparts; i++) {
        size_t len = etags[i] ? strlen(etags[i]) : 0;
        int bad = len == 0 || len >= S3_ETAG_MAX;
        for (size_t j = 0; !bad && j < len; j++) bad = (unsigned char)etags[i][j] < 0x20 || etags[i][j] == 0x7f;
        if (bad) rc = errSet(err, LAKE_EUSAGE, "parts: part %d has no usable etag", i + 1);
    }
    CURL *h = rc ? NULL : curl_easy_init();
    if (!rc && !h) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    if (!rc && (rc = s3CompleteUpload(&ss->client, h, key, u->upload_id, nparts, etags, size, NULL, err))) {
        /* S3's 4xx (a wrong ETag, a part too small, no such upload) is
         * the request's; the rest is the holder's */
        if (strstr(err->cause, "NoSuchUpload") || strstr(err->msg, "NoSuchUpload")) err->status = "not_found";
        else if (err->code == LAKE_EFAIL && strstr(err->msg, "HTTP 4")) err->status = "invalid_argument";
        else rc = holderFailed(ss->base.url, err);
    }
    if (h) curl_easy_cleanup(h);
    free(key);
    return rc;
}

static int vendAbort(const stage *s, const stageUpload *u, lakeError *err) {
    const s3Stage *ss = (const s3Stage *)s;
    char *key = NULL, note[256];
    if (s3Usable(ss, err) || checkTicket(ss, u, &key, err)) return err->code;
    CURL *h = curl_easy_init();
    int rc = 0;
    if (!h) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    else if (s3AbortUpload(&ss->client, h, key, u->upload_id, S3_ATTEMPTS, 0, note, sizeof note)) {
        errSet(err, LAKE_EUNAVAIL, "%s", note);
        rc = holderFailed(ss->base.url, err);
    }
    if (h) curl_easy_cleanup(h);
    free(key);
    return rc;
}

static int setVendor(stage *s, const stageVendor *v, lakeError *err) {
    s3Stage *ss = (s3Stage *)s;
    if (!v->get || !v->put || !v->begin || !v->parts || !v->complete || !v->abort)
        return errSet(err, LAKE_EFAIL, "stage: an incomplete vendor");
    if (ss->unusable.code && s3ClientInitVended(&ss->client, ss->bucket, err)) return err->code;
    if (ss->vendor.free) ss->vendor.free(ss->vendor.ctx);
    ss->vendor = *v;
    return 0;
}

static const stageVendor *vendorOf(const stage *s) {
    const s3Stage *ss = (const s3Stage *)s;
    return ss->vendor.get ? &ss->vendor : NULL;
}

const stageVendOps s3VendOps = {vendGet,  vendPut,   vendBegin, vendParts,
                                vendComplete, vendAbort, setVendor, vendorOf};
