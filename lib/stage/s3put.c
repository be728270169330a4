/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3put.c - the multipart upload engine.
 *
 * The caller (s3.c, in the main thread) reads the input into part buffers
 * and submits them in order; a thread of this module sends up to `jobs`
 * parts at once through a libcurl multi handle, retries a part whose
 * failure may pass, and keeps each part's ETag.  There are jobs + 1
 * buffers, one being filled while up to jobs are in flight, so memory is
 * bounded by (jobs + 1) x part size whatever the size of the input.
 *
 * The shared state is guarded by one mutex.  The caller waits on a
 * condition variable in slices of 100 ms, so that a stop signal is noticed
 * while it waits; the thread is woken by curl_multi_wakeup and told to give
 * up by the atomic cancel flag, which also aborts its transfers.  The
 * thread blocks the signals lake-put handles, so that they interrupt the
 * main thread's read of the input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/retry.h"
#include "core/thread.h"
#include "stage/backend.h"
#include "stage/s3.h"

#define WAIT_SLICE_MS 100

enum partState { PART_FREE, PART_FILLING, PART_QUEUED, PART_SENDING, PART_WAITING, PART_FAILED };

typedef struct part {
    enum partState state;
    char *buf;              /* part_size bytes, allocated when first used */
    size_t len;
    int number;             /* 1.. */
    double retry_at;        /* PART_WAITING: when to send again */
    CURL *h;                /* the slot's easy handle, reused */
    s3Xfer x;               /* the UploadPart request of this part */
    char sha[SHA256_HEX_LEN + 1];
    /* vended: the part's Content-MD5, its URL and until when it holds;
     * a URL refused (403: expired, say) is asked for again once */
    char md5[STAGE_MD5_B64_LEN + 1];
    char *url;
    double url_until;
    int reasked;
    lakeError err;
} part;

struct s3Upload {
    const s3Client *c;
    char *key;
    char *upload_id;        /* set by s3UploadBegin */
    size_t part_size;
    int jobs, nslots;
    part *slots;
    char **etags;           /* by part number - 1; written by the thread */
    int next_number;
    int completing;         /* a CompleteMultipartUpload was sent */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int closed;             /* no more parts will come */
    int failed;
    lakeError err;          /* why it failed */
    atomic_int cancel;
    const volatile sig_atomic_t *stop;
    CURLM *multi;
    pthread_t thread;
    int running;            /* the thread was started and not yet joined */
    /* vended access: the holder names the key and signs every request */
    const stageVendor *vendor;
    char *key_dir;
    stageUpload vu;
};

/* A URL is asked for again when less than this is left of it. */
#define URL_MARGIN_S 30.0

static double monoNow(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait on the condition variable for at most one slice; mu is held. */
static void waitSlice(s3Upload *u) {
    struct timespec ts;
    clockAfterMs(&ts, CLOCK_REALTIME, WAIT_SLICE_MS);
    pthread_cond_timedwait(&u->cv, &u->mu, &ts);
}

/* Record the first failure and tell everyone to give up. */
static void failWith(s3Upload *u, const lakeError *e) {
    pthread_mutex_lock(&u->mu);
    if (!u->failed) {
        u->failed = 1;
        u->err = *e;
    }
    atomic_store(&u->cancel, 1);
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    interruptWake(); /* the caller may be waiting for input that does not come */
}

s3Upload *s3UploadNew(const s3Client *c, const char *key, size_t part_size, int jobs,
                      const volatile sig_atomic_t *stop) {
    s3Upload *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->c = c;
    u->part_size = part_size;
    u->jobs = jobs;
    u->nslots = jobs + 1;
    u->stop = stop;
    atomic_init(&u->cancel, 0);
    u->key = strdup(key ? key : "(vended)");
    u->slots = calloc((size_t)u->nslots, sizeof *u->slots);
    u->etags = calloc(S3_MAX_PARTS, sizeof *u->etags);
    if (!u->key || !u->slots || !u->etags) {
        free(u->key);
        free(u->slots);
        free(u->etags);
        free(u);
        return NULL;
    }
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    return u;
}

static int interrupted(s3Upload *u, lakeError *err) {
    return errSet(err, LAKE_EFAIL, "%s: interrupted", u->key);
}

int s3UploadVend(s3Upload *u, const stageVendor *v, const char *key_dir, lakeError *err) {
    u->vendor = v;
    if (key_dir && !(u->key_dir = strdup(key_dir))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    return 0;
}

const char *s3UploadLocation(const s3Upload *u) { return u->vu.location; }

int s3UploadError(s3Upload *u, lakeError *err) {
    pthread_mutex_lock(&u->mu);
    int rc = 0;
    if (u->failed) {
        *err = u->err;
        rc = err->code;
    }
    pthread_mutex_unlock(&u->mu);
    return rc;
}

char *s3UploadBuffer(s3Upload *u, int *slot, lakeError *err) {
    char *buf = NULL;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        if (u->failed) {
            *err = u->err;
            break;
        }
        if (u->stop && *u->stop) {
            interrupted(u, err);
            break;
        }
        int i;
        for (i = 0; i < u->nslots && u->slots[i].state != PART_FREE; i++) {}
        if (i < u->nslots) {
            part *p = &u->slots[i];
            if (!p->buf && !(p->buf = malloc(u->part_size))) {
                errSetErrno(err, LAKE_EFAIL, ENOMEM, "part buffer");
                break;
            }
            p->state = PART_FILLING;
            *slot = i;
            buf = p->buf;
            break;
        }
        waitSlice(u);
    }
    pthread_mutex_unlock(&u->mu);
    return buf;
}

void s3UploadRelease(s3Upload *u, int slot) {
    pthread_mutex_lock(&u->mu);
    u->slots[slot].state = PART_FREE;
    pthread_mutex_unlock(&u->mu);
}

/* Set up (first attempt) and add the UploadPart request of p.  In the
 * thread; p is PART_SENDING, so nobody else touches it. */
static int startPart(s3Upload *u, part *p) {
    if (u->vendor && (p->x.attempts == 0 || !p->x.url)) {
        /* the URL was (re)issued by fetchUrls: a request of its own */
        int attempts = p->x.attempts;
        char what[1200];
        s3XferFree(&p->x);
        snprintf(what, sizeof what, "%s?partNumber=%d", u->vu.location, p->number);
        if (!p->h && !(p->h = curl_easy_init())) return errSetErrno(&p->err, LAKE_EFAIL, ENOMEM, "part");
        int rc = s3XferInitUrl(&p->x, u->c, p->h, "PUT", p->url, what, &p->err);
        if (!rc) rc = s3XferHeader(&p->x, &p->err, "Content-MD5: %s", p->md5);
        if (rc) return rc;
        s3XferBody(&p->x, p->buf, p->len, S3_EMPTY_SHA256); /* not sent: the URL signs no payload */
        p->x.cancel = &u->cancel;
        p->x.attempts = attempts;
        if ((rc = s3XferArm(&p->x, &p->err))) return rc;
        curl_easy_setopt(p->h, CURLOPT_PRIVATE, p);
    } else if (p->x.attempts == 0) {
        sha256Ctx *h = sha256New();
        if (!h || (!p->h && !(p->h = curl_easy_init()))) {
            sha256Free(h);
            return errSetErrno(&p->err, LAKE_EFAIL, ENOMEM, "part");
        }
        sha256Update(h, p->buf, p->len);
        sha256FinalHex(h, p->sha);
        sha256Free(h);
        char *id = stageQueryEncode(u->upload_id), *query = NULL;
        int rc = 0;
        if (!id || asprintf(&query, "partNumber=%d&uploadId=%s", p->number, id) < 0) {
            query = NULL;
            rc = errSetErrno(&p->err, LAKE_EFAIL, ENOMEM, "part");
        }
        free(id);
        if (!rc) rc = s3XferInit(&p->x, u->c, p->h, "PUT", u->key, query, &p->err);
        free(query);
        if (rc) return rc;
        s3XferBody(&p->x, p->buf, p->len, p->sha);
        p->x.cancel = &u->cancel;
        if ((rc = s3XferArm(&p->x, &p->err))) return rc;
        curl_easy_setopt(p->h, CURLOPT_PRIVATE, p);
    }
    s3XferRestart(&p->x);
    if (curl_multi_add_handle(u->multi, p->h) != CURLM_OK)
        return errSet(&p->err, LAKE_EFAIL, "%s: cannot start the transfer", p->x.what);
    return 0;
}

/* Judge a finished UploadPart: keep its ETag and free the buffer, or
 * schedule another attempt, or fail the upload. */
static void finishPart(s3Upload *u, CURLMsg *m) {
    char *priv = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
    part *p = (part *)priv;
    CURLcode cc = m->data.result;
    curl_multi_remove_handle(u->multi, m->easy_handle);
    int rc = s3XferOutcome(&p->x, cc, &p->err);
    if (!rc && !p->x.etag[0])
        rc = errSet(&p->err, LAKE_EFAIL, "%s: the object store sent no ETag", p->x.what);
    if (!rc && !(u->etags[p->number - 1] = strdup(p->x.etag)))
        rc = errSetErrno(&p->err, LAKE_EFAIL, ENOMEM, "part");
    if (!rc) {
        s3XferFree(&p->x);
        memset(&p->x, 0, sizeof p->x);
        pthread_mutex_lock(&u->mu);
        p->state = PART_FREE;
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
        return;
    }
    if (rc && u->vendor && p->x.status == 403 && !p->reasked && !p->x.stopped) {
        /* a URL that expired on the way: ask for another, once */
        p->reasked = 1;
        p->url_until = 0;
        pthread_mutex_lock(&u->mu);
        p->state = PART_WAITING;
        p->retry_at = monoNow();
        pthread_mutex_unlock(&u->mu);
        return;
    }
    if (p->x.retryable && p->x.attempts < S3_ATTEMPTS && !p->x.stopped) {
        pthread_mutex_lock(&u->mu);
        p->state = PART_WAITING;
        p->retry_at = monoNow() + (double)s3BackoffMs(p->x.attempts) / 1000.0;
        pthread_mutex_unlock(&u->mu);
        return;
    }
    if (p->x.retryable) s3NoteAttempts(&p->err, p->x.attempts);
    pthread_mutex_lock(&u->mu);
    p->state = PART_FAILED;
    pthread_mutex_unlock(&u->mu);
    failWith(u, &p->err);
}

/* Vended: the URLs of the parts about to start that have none, or one
 * about to expire, in one request to the holder; each new part's
 * Content-MD5 first.  Nonzero when the upload failed. */
static int fetchUrls(s3Upload *u, part **start, int n) {
    stagePartReq req[STAGE_JOBS_MAX + 1];
    part *who[STAGE_JOBS_MAX + 1];
    char *urls[STAGE_JOBS_MAX + 1];
    int k = 0;
    double now = monoNow();
    for (int i = 0; i < n; i++) {
        part *p = start[i];
        if (p->url && p->url_until - URL_MARGIN_S > now) continue;
        if (!p->md5[0] && s3Md5Base64(p->buf, p->len, p->md5)) {
            lakeError e = {0};
            errSet(&e, LAKE_EFAIL, "%s: MD5 is not available", u->key);
            failWith(u, &e);
            return 1;
        }
        req[k].number = p->number;
        req[k].size = (int64_t)p->len;
        memcpy(req[k].md5, p->md5, sizeof req[k].md5);
        who[k++] = p;
    }
    if (!k) return 0;
    lakeError e = {0};
    if (u->vendor->parts(u->vendor->ctx, &u->vu, req, (size_t)k, urls, &e)) {
        failWith(u, &e);
        return 1;
    }
    for (int i = 0; i < k; i++) {
        free(who[i]->url);
        who[i]->url = urls[i];
        /* the holder's default expiry at least; a shorter cap is met by
         * the 403 that asks again */
        who[i]->url_until = now + STAGE_PRESIGN_DEFAULT;
        free(who[i]->x.url); /* startPart makes the request anew */
        who[i]->x.url = NULL;
    }
    return 0;
}

/* The sending thread: start what may start, drive the transfers, judge
 * what finished; until every part is sent after the last was submitted,
 * or the upload failed or was cancelled. */
static void *sender(void *arg) {
    s3Upload *u = arg;
    part *start[STAGE_JOBS_MAX + 1];
    for (;;) {
        int nstart = 0, sending = 0, busy = 0;
        long wait = WAIT_SLICE_MS;
        double now = monoNow();
        pthread_mutex_lock(&u->mu);
        for (int i = 0; i < u->nslots; i++) sending += u->slots[i].state == PART_SENDING;
        while (sending + nstart < u->jobs) { /* lowest part number first */
            part *best = NULL;
            for (int i = 0; i < u->nslots; i++) {
                part *p = &u->slots[i];
                int ready = p->state == PART_QUEUED || (p->state == PART_WAITING && p->retry_at <= now);
                if (ready && (!best || p->number < best->number)) best = p;
            }
            if (!best) break;
            best->state = PART_SENDING;
            start[nstart++] = best;
        }
        for (int i = 0; i < u->nslots; i++) {
            part *p = &u->slots[i];
            if (p->state == PART_QUEUED || p->state == PART_SENDING || p->state == PART_WAITING)
                busy = 1;
            if (p->state == PART_WAITING && (long)((p->retry_at - now) * 1000) + 1 < wait)
                wait = (long)((p->retry_at - now) * 1000) + 1;
        }
        int done = (u->closed && !busy) || u->failed;
        pthread_mutex_unlock(&u->mu);
        if (done || atomic_load(&u->cancel)) break;

        int failed = u->vendor && nstart && fetchUrls(u, start, nstart);
        for (int i = 0; !failed && i < nstart; i++)
            if (startPart(u, start[i])) {
                failWith(u, &start[i]->err);
                break;
            }
        int still, queued, finished = 0;
        curl_multi_perform(u->multi, &still);
        CURLMsg *m;
        while ((m = curl_multi_info_read(u->multi, &queued)))
            if (m->msg == CURLMSG_DONE) {
                finishPart(u, m);
                finished++;
            }
        if (!finished) curl_multi_poll(u->multi, NULL, 0, (int)(wait > 0 ? wait : 1), NULL);
    }
    /* the parts still in flight were cancelled: their traces say so */
    for (int i = 0; i < u->nslots; i++) {
        part *p = &u->slots[i];
        if (p->state != PART_SENDING || !p->x.h) continue;
        curl_multi_remove_handle(u->multi, p->h);
        p->x.stopped = 1;
        s3XferOutcome(&p->x, CURLE_ABORTED_BY_CALLBACK, &p->err);
    }
    return NULL;
}

int s3CreateUpload(const s3Client *c, CURL *h, const char *key, const char *content_type,
                   const char *sha256_hex, const volatile sig_atomic_t *stop, char **upload_id,
                   lakeError *err) {
    s3Xfer x;
    *upload_id = NULL;
    int rc = s3XferInit(&x, c, h, "POST", key, "uploads=", err);
    if (!rc) rc = s3XferHeader(&x, err, "Content-Type: %s", content_type);
    if (!rc && sha256_hex) rc = s3XferHeader(&x, err, "x-amz-meta-sha256: %s", sha256_hex);
    if (!rc) {
        s3XferBody(&x, "", 0, S3_EMPTY_SHA256);
        x.stop = stop;
        rc = s3XferRun(&x, err);
    }
    if (!rc && !(*upload_id = s3XmlText(x.body, x.body_len, "UploadId")))
        rc = errSet(err, LAKE_EFAIL, "%s: no UploadId in the answer", x.what);
    s3XferFree(&x);
    return rc;
}

int s3UploadBegin(s3Upload *u, const char *content_type, const char *sha256_hex,
                  lakeError *err) {
    int rc;
    if (u->vendor) {
        stagePutReq req = {u->key_dir, content_type, sha256_hex, -1, NULL};
        rc = u->vendor->begin(u->vendor->ctx, &req, &u->vu, err);
        if (!rc) { /* the holder's names: the key for messages is its location */
            free(u->key);
            u->key = strdup(u->vu.location);
            u->upload_id = strdup(u->vu.upload_id);
            if (!u->key || !u->upload_id) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
        }
    } else {
        rc = s3CreateUpload(u->c, u->c->easy, u->key, content_type, sha256_hex, u->stop, &u->upload_id, err);
    }
    if (rc) return rc;

    if (!(u->multi = curl_multi_init())) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    int e = threadStart(&u->thread, sender, u);
    if (e) return errSetErrno(err, LAKE_EFAIL, e, "upload thread");
    u->running = 1;
    return 0;
}

int s3UploadSubmit(s3Upload *u, int slot, size_t len, lakeError *err) {
    if (u->next_number >= S3_MAX_PARTS) {
        s3UploadRelease(u, slot);
        return errSet(err, LAKE_EFAIL,
                      "%s: the input needs more than %d parts of %zu bytes; state its size "
                      "with --size, or give a larger --part-size", u->key, S3_MAX_PARTS,
                      u->part_size);
    }
    pthread_mutex_lock(&u->mu);
    part *p = &u->slots[slot];
    p->len = len;
    p->number = ++u->next_number;
    memset(&p->x, 0, sizeof p->x);
    p->md5[0] = '\0';
    free(p->url);
    p->url = NULL;
    p->url_until = 0;
    p->reasked = 0;
    p->state = PART_QUEUED;
    int failed = u->failed;
    if (failed) *err = u->err;
    pthread_mutex_unlock(&u->mu);
    curl_multi_wakeup(u->multi);
    return failed ? err->code : 0;
}

/* Stop the thread: tell it, then wait for it. */
static void stopSender(s3Upload *u) {
    if (!u->running) return;
    atomic_store(&u->cancel, 1);
    curl_multi_wakeup(u->multi);
    pthread_join(u->thread, NULL);
    u->running = 0;
}

/* Append text (XML-escaped) to f. */
static void xmlEscape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else fputc(*s, f);
    }
}

/* The CompleteMultipartUpload document: each part's number and ETag. */
static char *completeBody(int nparts, char *const *etags, size_t *len) {
    char *doc = NULL;
    FILE *f = open_memstream(&doc, len);
    if (!f) return NULL;
    fputs("<CompleteMultipartUpload>", f);
    for (int i = 0; i < nparts; i++) {
        fprintf(f, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1);
        xmlEscape(f, etags[i]);
        fputs("</ETag></Part>", f);
    }
    fputs("</CompleteMultipartUpload>", f);
    if (fclose(f) != 0) {
        free(doc);
        return NULL;
    }
    return doc;
}

/* True when key exists with total bytes: a completion whose answer was
 * lost did succeed. */
static int objectIsThere(const s3Client *c, CURL *h, const char *key, int64_t total) {
    s3Xfer x;
    lakeError e = {0};
    int there = total >= 0 && s3XferInit(&x, c, h, "HEAD", key, NULL, &e) == 0 &&
                s3XferRun(&x, &e) == 0 && x.length == total;
    if (total >= 0) s3XferFree(&x);
    return there;
}

int s3CompleteUpload(const s3Client *c, CURL *h, const char *key, const char *upload_id, int nparts,
                     char *const *etags, int64_t total, const volatile sig_atomic_t *stop,
                     lakeError *err) {
    size_t len = 0;
    int rc = 0;
    char *doc = completeBody(nparts, etags, &len), *id = stageQueryEncode(upload_id), *query = NULL;
    if (!doc || !id || asprintf(&query, "uploadId=%s", id) < 0) {
        query = NULL;
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload");
    }
    free(id);
    s3Xfer x;
    /* S3 may answer 200 with an error document: retried like a 5xx */
    for (int attempt = 1; !rc; attempt++) {
        if ((rc = s3XferInit(&x, c, h, "POST", key, query, err))) break;
        if (!(rc = s3XferHeader(&x, err, "Content-Type: application/xml"))) {
            s3XferBody(&x, doc, len, NULL);
            x.stop = stop;
            rc = s3XferRun(&x, err);
        }
        int retry = 0;
        if (!rc && s3XmlRootIs(x.body, x.body_len, "Error")) {
            char *code = s3XmlText(x.body, x.body_len, "Code");
            rc = errSet(err, s3ErrorCode(500, code, &retry),
                        "%s: the object store failed to complete the upload (%s)", x.what,
                        code ? code : "error");
            free(code);
        }
        /* a lost answer to a completion that went through */
        if (rc && strstr(err->cause, "NoSuchUpload") && (x.attempts > 1 || attempt > 1) &&
            objectIsThere(c, h, key, total))
            rc = 0;
        s3XferFree(&x);
        if (!rc || !retry || attempt >= S3_ATTEMPTS) break;
        if (retrySleep(s3BackoffMs(attempt), stop)) {
            rc = errSet(err, LAKE_EFAIL, "%s: interrupted", key);
            break;
        }
        rc = 0;
    }
    free(query);
    free(doc);
    return rc;
}

int s3UploadFinish(s3Upload *u, int64_t total, lakeError *err) {
    pthread_mutex_lock(&u->mu);
    u->closed = 1;
    pthread_mutex_unlock(&u->mu);
    curl_multi_wakeup(u->multi);
    /* wait for the thread to send the last part, noticing a stop signal */
    pthread_mutex_lock(&u->mu);
    for (;;) {
        int busy = 0;
        for (int i = 0; i < u->nslots; i++)
            busy |= u->slots[i].state == PART_QUEUED || u->slots[i].state == PART_SENDING ||
                    u->slots[i].state == PART_WAITING;
        if (!busy || u->failed || (u->stop && *u->stop)) break;
        waitSlice(u);
    }
    pthread_mutex_unlock(&u->mu);
    int stopped = u->stop && *u->stop;
    if (stopped) atomic_store(&u->cancel, 1);
    stopSender(u);
    int rc = s3UploadError(u, err);
    if (!rc && stopped) rc = interrupted(u, err);
    if (rc) return rc;
    u->completing = 1;
    if (u->vendor) rc = u->vendor->complete(u->vendor->ctx, &u->vu, total, u->next_number, u->etags, err);
    else rc = s3CompleteUpload(u->c, u->c->easy, u->key, u->upload_id, u->next_number, u->etags, total, u->stop,
                               err);
    if (rc && u->stop && *u->stop) rc = interrupted(u, err);
    return rc;
}

/* Send method on the key (with query) to clean up; 0 or the failure's
 * detail in note.  An abort (a query) of an upload already gone is done. */
static int cleanup(const s3Client *c, CURL *h, const char *key, const char *method, const char *query,
                   int attempts, char *note, size_t notelen) {
    s3Xfer x;
    lakeError e = {0};
    int rc = s3XferInit(&x, c, h, method, key, query, &e);
    if (!rc) {
        x.max_attempts = attempts;
        rc = s3XferRun(&x, &e);
    }
    /* an abort of an upload already gone (aborted by another client, or
     * by a try whose answer was lost) is done */
    if (rc && query && s3XferUploadGone(&x)) rc = 0;
    if (rc) snprintf(note, notelen, "%s", e.cause[0] ? e.cause : "failed");
    s3XferFree(&x);
    return rc;
}

int s3AbortUpload(const s3Client *c, CURL *h, const char *key, const char *upload_id, int attempts,
                  int completing, char *note, size_t notelen) {
    char *id = stageQueryEncode(upload_id), *query = NULL;
    int rc;
    note[0] = '\0';
    if (id && asprintf(&query, "uploadId=%s", id) >= 0) {
        rc = cleanup(c, h, key, "DELETE", query, attempts, note, notelen);
        /* a completion may have gone through although it failed here */
        if (completing) rc |= cleanup(c, h, key, "DELETE", NULL, attempts, note, notelen);
    } else {
        query = NULL;
        snprintf(note, notelen, "out of memory");
        rc = 1;
    }
    free(id);
    free(query);
    return rc;
}

void s3UploadAbort(s3Upload *u, lakeError *err) {
    if (!u) return;
    stopSender(u);
    if (u->upload_id) {
        /* after a failure to reach the store, one try is enough */
        int attempts = err->code == LAKE_EUNAVAIL ? 1 : S3_ATTEMPTS;
        char note[256];
        lakeError e = {0};
        if (u->vendor && u->vendor->abort(u->vendor->ctx, &u->vu, &e))
            snprintf(note, sizeof note, "%.250s", e.msg);
        if (u->vendor ? e.code != 0
                      : s3AbortUpload(u->c, u->c->easy, u->key, u->upload_id, attempts, u->completing, note,
                                      sizeof note)) {
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof err->msg - n,
                     " (and aborting the upload failed: %s; its parts may remain)", note);
        }
    }
    s3UploadFree(u);
}

void s3UploadFree(s3Upload *u) {
    if (!u) return;
    stopSender(u);
    interruptWakeClear(); /* failWith's, now told */
    for (int i = 0; i < u->nslots; i++) {
        s3XferFree(&u->slots[i].x);
        if (u->slots[i].h) curl_easy_cleanup(u->slots[i].h);
        free(u->slots[i].buf);
        free(u->slots[i].url);
    }
    stageUploadClear(&u->vu);
    free(u->key_dir);
    for (int i = 0; i < S3_MAX_PARTS; i++) free(u->etags[i]);
    if (u->multi) curl_multi_cleanup(u->multi);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u->etags);
    free(u->slots);
    free(u->key);
    free(u->upload_id);
    free(u);
}
