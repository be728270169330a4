/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3get.c - reading one object as parallel ranged GETs.
 *
 * An object of known size larger than one part is read as ranged GETs
 * (Range: bytes=A-B) of part_size bytes, up to `jobs` at once, each by a
 * thread of its own on a connection (an easy handle) of its own.  Part p
 * lands in buffer p mod (jobs + 1); the caller's thread takes the parts in
 * order, hashes and writes each, and frees its buffer for the part
 * jobs + 1 further on.  So memory is bounded by (jobs + 1) x part size
 * whatever the object's size, no worker runs more than jobs parts ahead
 * of the writer, and the writer sees every byte once, in order.
 *
 * Every answer must be a 206 whose Content-Range gives the size the caller
 * stated (the FILE value's): an object of another size is not the one
 * recorded, 65.  A 200 is the whole object (HTTP lets a server ignore
 * Range): the parts stop at once, the transfers in flight are cancelled,
 * and the caller is told how many bytes the writer has, to read the rest
 * as one stream (s3Get) rather than the whole object once per part.  A
 * part that breaks off is asked again from where it stopped, up to
 * S3_ATTEMPTS times while its failure may pass.  Vended
 * access: one presigned GET URL serves every part (query-string signing
 * leaves the Range header out); one refused with 403 (expired on the way)
 * is asked for again, once for the whole get, under the engine's mutex (a
 * vendor is not used by two threads at once).
 *
 * The first failure for good stops the rest: the workers' transfers are
 * cancelled, the caller joins them and returns that failure.  The workers
 * block the stop signals, which the caller's thread handles.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/retry.h"
#include "core/thread.h"
#include "stage/backend.h"
#include "stage/s3.h"

typedef struct slot {
    char *buf;    /* part_size bytes, allocated by the first worker to use it */
    int64_t part; /* the part it holds, complete; -1: none */
} slot;

typedef struct getEngine {
    s3Stage *ss;
    const char *key, *location;
    int64_t size, nparts;
    size_t part_size;
    int nslots;
    slot *slots;
    pthread_mutex_t mu;
    pthread_cond_t moved; /* a part is done, one was written, or a failure */
    int64_t next;         /* the next part to take */
    int64_t written;      /* parts given to the writer */
    char *url;            /* vended: the URL every part is read through */
    int url_gen;          /* bumped when the URL is replaced */
    int reasked;
    int whole;            /* stopped by a 200: the store ignores Range */
    char meta_sha256[SHA256_HEX_LEN + 1];
    int failed;
    lakeError err;        /* the first failure */
    atomic_int cancel;
} getEngine;

/* Where one part's answer goes. */
typedef struct partSink {
    getEngine *g;
    s3Xfer *x;
    char *buf;
    size_t want, got;
    int whole;            /* answered 200: the whole object */
    lakeError *err;
} partSink;

static int partWrite(void *ctx, const char *buf, size_t len) {
    partSink *p = ctx;
    int whole = p->x->status == 200;
    int64_t size = whole ? p->x->length : p->x->range_total;
    if (size != p->g->size && (size >= 0 || !whole)) {
        if (size < 0)
            errSet(p->err, LAKE_EFAIL, "%s: the object store answered a ranged read without its size",
                   p->g->location);
        else
            errSet(p->err, LAKE_EDATA, "%s: %lld bytes in the stage, not %lld", p->g->location,
                   (long long)size, (long long)p->g->size);
        return -1;
    }
    if (whole) { /* the rest is read as one stream: stop this one */
        p->whole = 1;
        errSet(p->err, LAKE_EFAIL, "%s: the object store ignored a ranged read", p->g->location);
        return -1;
    }
    if (len > p->want - p->got) {
        errSet(p->err, LAKE_EFAIL, "%s: the object store answered more than the range asked",
               p->g->location);
        return -1;
    }
    memcpy(p->buf + p->got, buf, len);
    p->got += len;
    return 0;
}

/* Stop every part: the first failure for good is e; whole says it is a
 * 200 to a ranged read, which the caller reads past (s3GetParts). */
static void fail(getEngine *g, const lakeError *e, int whole) {
    pthread_mutex_lock(&g->mu);
    if (!g->failed) {
        g->failed = 1;
        g->whole = whole;
        g->err = *e;
    }
    atomic_store(&g->cancel, 1);
    pthread_cond_broadcast(&g->moved);
    pthread_mutex_unlock(&g->mu);
}

/* GET part p into buf on handle h: 0, or the code with err set and
 * *whole set when the answer was a 200 (the whole object). */
static int fetchPart(getEngine *g, CURL *h, int64_t p, char *buf, int *whole, lakeError *err) {
    s3Stage *ss = g->ss;
    int64_t off = p * (int64_t)g->part_size;
    size_t want = (size_t)(g->size - off < (int64_t)g->part_size ? g->size - off : (int64_t)g->part_size);
    s3Xfer x = {0};
    partSink ps = {g, &x, buf, want, 0, 0, err};
    int rc = 0, gen = 0;
    for (int attempt = 1;; attempt++) {
        if (ss->vendor.get) {
            pthread_mutex_lock(&g->mu);
            gen = g->url_gen;
            rc = s3XferInitUrl(&x, &ss->client, h, "GET", g->url, g->location, err);
            pthread_mutex_unlock(&g->mu);
        } else {
            rc = s3XferInit(&x, &ss->client, h, "GET", g->key, NULL, err);
        }
        if (rc) break;
        rc = s3XferHeader(&x, err, "Range: bytes=%lld-%lld", (long long)(off + (int64_t)ps.got),
                          (long long)(off + (int64_t)want - 1));
        x.sink = partWrite;
        x.sink_ctx = &ps;
        x.cancel = &g->cancel;
        if (!rc) rc = s3XferArm(&x, err);
        if (!rc) {
            s3XferRestart(&x);
            rc = s3XferOutcome(&x, curl_easy_perform(h), err);
        }
        if (!rc && (x.status != 206 || ps.got != want))
            rc = errSet(err, LAKE_EFAIL, "%s: the object store answered %lld bytes of a %zu-byte range",
                        g->location, (long long)ps.got, want);
        int retry = rc && !ps.whole && x.retryable && attempt < S3_ATTEMPTS && !atomic_load(&g->cancel);
        pthread_mutex_lock(&g->mu);
        if (rc && ss->vendor.get && x.status == 403 && attempt < S3_ATTEMPTS) {
            /* expired on the way: a new URL, asked for once per get */
            if (gen == g->url_gen && !g->reasked) {
                char *url = NULL;
                lakeError e = {0};
                g->reasked = 1;
                if (!ss->vendor.get(ss->vendor.ctx, g->location, 0, &url, &e)) {
                    free(g->url);
                    g->url = url;
                    g->url_gen++;
                }
            }
            retry = gen != g->url_gen;
        }
        if (!rc && !g->meta_sha256[0] && x.meta_sha256[0])
            memcpy(g->meta_sha256, x.meta_sha256, sizeof g->meta_sha256);
        pthread_mutex_unlock(&g->mu);
        s3XferFree(&x);
        if (!retry) {
            if (rc && x.retryable && !ps.whole) s3NoteAttempts(err, attempt);
            break;
        }
        if (retrySleep(s3BackoffMs(attempt), NULL) || atomic_load(&g->cancel)) break;
        errClear(err);
        rc = 0;
    }
    *whole = ps.whole;
    return rc;
}

static void *worker(void *arg) {
    getEngine *g = arg;
    lakeError e = {0};
    CURL *h = curl_easy_init();
    if (!h) {
        errSetErrno(&e, LAKE_EFAIL, ENOMEM, "%s", g->location);
        fail(g, &e, 0);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&g->mu);
        while (!g->failed && g->next < g->nparts && g->next >= g->written + g->nslots)
            pthread_cond_wait(&g->moved, &g->mu);
        if (g->failed || g->next >= g->nparts) {
            pthread_mutex_unlock(&g->mu);
            break;
        }
        int64_t p = g->next++;
        slot *s = &g->slots[p % g->nslots]; /* this worker's until written */
        pthread_mutex_unlock(&g->mu);
        if (!s->buf && !(s->buf = malloc(g->part_size))) {
            errSetErrno(&e, LAKE_EFAIL, ENOMEM, "%s", g->location);
            fail(g, &e, 0);
            break;
        }
        int whole = 0;
        if (fetchPart(g, h, p, s->buf, &whole, &e)) {
            fail(g, &e, whole);
            break;
        }
        pthread_mutex_lock(&g->mu);
        s->part = p;
        pthread_cond_broadcast(&g->moved);
        pthread_mutex_unlock(&g->mu);
    }
    curl_easy_cleanup(h);
    return NULL;
}

int s3GetParts(s3Stage *ss, const char *key, const char *location, int64_t size, size_t part_size,
               int jobs, lakeWriter *w, sha256Ctx *sha, progress *prog,
               char meta_sha256[SHA256_HEX_LEN + 1], int64_t *written, lakeError *err) {
    getEngine g = {.ss = ss, .key = key, .location = location, .size = size, .part_size = part_size};
    g.nparts = (size + (int64_t)part_size - 1) / (int64_t)part_size;
    if (jobs > g.nparts) jobs = (int)g.nparts;
    g.nslots = jobs + 1;
    pthread_t threads[STAGE_JOBS_MAX];
    int nthreads = 0, rc = 0, whole = 0;
    meta_sha256[0] = '\0';
    *written = 0;
    if (!(g.slots = calloc((size_t)g.nslots, sizeof *g.slots)))
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", location);
    for (int i = 0; i < g.nslots; i++) g.slots[i].part = -1;
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.moved, NULL);
    atomic_init(&g.cancel, 0);
    if (ss->vendor.get && (rc = ss->vendor.get(ss->vendor.ctx, location, 0, &g.url, err))) goto out;

    for (int i = 0; i < jobs; i++) {
        int e = threadStart(&threads[nthreads], worker, &g);
        if (e && !nthreads) rc = errSetErrno(err, LAKE_EFAIL, e, "%s: a thread", location);
        if (e) break; /* fewer connections than asked: still a get */
        nthreads++;
    }

    for (int64_t p = 0; !rc && p < g.nparts; p++) {
        slot *s = &g.slots[p % g.nslots];
        pthread_mutex_lock(&g.mu);
        while (!g.failed && s->part != p) pthread_cond_wait(&g.moved, &g.mu);
        if (s->part != p && g.whole) { /* Range ignored: the caller reads the rest */
            whole = 1;
        } else if (s->part != p) { /* failed, this part not done */
            *err = g.err;
            rc = err->code;
        }
        pthread_mutex_unlock(&g.mu);
        if (rc || whole) break;
        size_t len = (size_t)(size - p * (int64_t)part_size < (int64_t)part_size
                                  ? size - p * (int64_t)part_size : (int64_t)part_size);
        if (sha) sha256Update(sha, s->buf, len);
        if (w->write(w->ctx, s->buf, len) < 0) {
            rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", w->what);
            fail(&g, err, 0);
            break;
        }
        *written += (int64_t)len;
        if (prog) progressAdd(prog, (int64_t)len);
        pthread_mutex_lock(&g.mu);
        s->part = -1;
        g.written++;
        pthread_cond_broadcast(&g.moved);
        pthread_mutex_unlock(&g.mu);
    }
    if (rc) {
        lakeError e = *err;
        fail(&g, &e, 0);
    }
    for (int i = 0; i < nthreads; i++) pthread_join(threads[i], NULL);
    if (!rc) memcpy(meta_sha256, g.meta_sha256, SHA256_HEX_LEN + 1);
out:
    for (int i = 0; i < g.nslots; i++) free(g.slots[i].buf);
    free(g.slots);
    free(g.url);
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.moved);
    return rc;
}
