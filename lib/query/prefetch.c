/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prefetch.c - segments fetched ahead of a scan (see prefetch.h).
 */
#include "query/prefetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"

struct prefetch {
    segcache *cache;
    stage *stage;
    fileValue *segs; /* [n], locations owned */
    int n;
    pthread_mutex_t mu;
    pthread_cond_t moved; /* the scan moved on, or stop */
    int next;             /* the next segment to fetch */
    int at;               /* the segment the scan reads */
    int stop;
    pthread_t threads[PREFETCH_JOBS];
    int nthreads;
};

/* The next segment this worker may fetch, or -1 when it is done. */
static int take(prefetch *p) {
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->next < p->n && p->next > p->at + PREFETCH_AHEAD) pthread_cond_wait(&p->moved, &p->mu);
    int i = p->stop || p->next >= p->n ? -1 : p->next++;
    pthread_mutex_unlock(&p->mu);
    return i;
}

static void *worker(void *arg) {
    prefetch *p = arg;
    lakeError err = {0};
    segcache *c = NULL;
    stage *st = NULL;
    if (segcacheDup(p->cache, &c, &err) || stageDup(p->stage, &st, &err)) goto out;
    /* the fetches ahead are parallel already: one GET each, streamed */
    stageSetGetJobs(st, 1, 0);
    for (int i; (i = take(p)) >= 0;) {
        char *path = NULL;
        errClear(&err);
        if (segcacheGet(c, st, &p->segs[i], &path, &err) == 0) segcacheRelease(c, p->segs[i].sha256);
        free(path); /* a failure is the scan's to meet and report */
    }
out:
    stageClose(st);
    segcacheClose(c);
    return NULL;
}

int prefetchStart(segcache *c, stage *st, const fileValue *segs, int n, prefetch **out, lakeError *err) {
    *out = NULL;
    prefetch *p = calloc(1, sizeof *p);
    if (!p || !(p->segs = calloc((size_t)n, sizeof *p->segs))) {
        free(p);
        return errSet(err, LAKE_EFAIL, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->moved, NULL);
    p->cache = c;
    p->stage = st;
    p->next = 1;
    for (; p->n < n; p->n++) {
        fileValue *f = &p->segs[p->n];
        f->size = segs[p->n].size;
        memcpy(f->sha256, segs[p->n].sha256, sizeof f->sha256);
        if (!(f->location = strdup(segs[p->n].location))) {
            prefetchStop(p);
            return errSet(err, LAKE_EFAIL, "out of memory");
        }
    }
    int want = n - 1 < PREFETCH_JOBS ? n - 1 : PREFETCH_JOBS;
    while (p->nthreads < want && threadStart(&p->threads[p->nthreads], worker, p) == 0) p->nthreads++;
    *out = p;
    return 0;
}

void prefetchAt(prefetch *p, int i) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->at = i;
    pthread_cond_broadcast(&p->moved);
    pthread_mutex_unlock(&p->mu);
}

void prefetchStop(prefetch *p) {
    if (!p) return;
    if (p->nthreads) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->moved);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->moved);
    for (int i = 0; i < p->n; i++) free(p->segs[i].location);
    free(p->segs);
    free(p);
}
