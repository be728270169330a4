/*
 * pool.c - a bounded pool of registry connections (pool.h): a stack of
 * idle connections, the list of those in use and a count of open ones
 * under one mutex; waiters sleep on a condition variable with a deadline.
 */
#include "catalog/registry/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct registryPool {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    char *url;
    unsigned size, wait_ms;
    unsigned open;      /* connections open, idle or in use */
    unsigned nidle;
    registry **idle;    /* [size] */
    registry **busy;    /* [size]: in use, NULL where free */
};

/* Note r as in use (under mu). */
static void markBusy(registryPool *p, registry *r) {
    for (unsigned i = 0; i < p->size; i++)
        if (!p->busy[i]) {
            p->busy[i] = r;
            return;
        }
}

int registryPoolNew(const char *url, unsigned size, unsigned wait_ms, registryPool **out, lakeError *err) {
    *out = NULL;
    registryPool *p = calloc(1, sizeof *p);
    if (!p || !(p->url = strdup(url)) || !(p->idle = calloc(size ? size : 1, sizeof *p->idle)) ||
        !(p->busy = calloc(size ? size : 1, sizeof *p->busy))) {
        if (p) {
            free(p->url);
            free(p->idle);
        }
        free(p);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry pool");
    }
    p->size = size ? size : 1;
    p->wait_ms = wait_ms;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->freed, &ca);
    pthread_condattr_destroy(&ca);
    *out = p;
    return 0;
}

/* A connection: an idle one, else a new one if fewer than size are open,
 * else wait for one until wait_ms have passed.  NULL with err set on
 * failure. */
registry *registryPoolAcquire(registryPool *p, lakeError *err) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += p->wait_ms / 1000;
    deadline.tv_nsec += (long)(p->wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0 && p->open >= p->size) {
        if (pthread_cond_timedwait(&p->freed, &p->mu, &deadline) == ETIMEDOUT && p->nidle == 0 &&
            p->open >= p->size) {
            pthread_mutex_unlock(&p->mu);
            errSetStatus(err, "unavailable", "every registry connection is busy; retry later");
            return NULL;
        }
    }
    if (p->nidle > 0) {
        registry *r = p->idle[--p->nidle];
        markBusy(p, r);
        pthread_mutex_unlock(&p->mu);
        return r;
    }
    p->open++; /* a slot for a new connection, opened outside the lock */
    pthread_mutex_unlock(&p->mu);
    registry *r = NULL;
    if (registryOpenUrl(p->url, REGISTRY_EXISTING, NULL, &r, err)) {
        /* an unreachable database is the registry's outage, not a bug;
         * the message (which names the database) goes to the cause, for
         * the log only */
        if (err) {
            char detail[sizeof err->cause];
            snprintf(detail, sizeof detail, "%.*s", (int)sizeof detail - 1, err->msg);
            int outage = err->code == LAKE_EUNAVAIL || err->code == LAKE_ETEMP;
            errSetStatus(err, outage ? "unavailable" : "internal", "the registry is unavailable; retry later");
            snprintf(err->cause, sizeof err->cause, "%.*s", (int)sizeof err->cause - 1, detail);
        }
        pthread_mutex_lock(&p->mu);
        p->open--;
        pthread_cond_signal(&p->freed);
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    pthread_mutex_lock(&p->mu);
    markBusy(p, r);
    pthread_mutex_unlock(&p->mu);
    return r;
}

void registryPoolCut(registryPool *p) {
    pthread_mutex_lock(&p->mu);
    for (unsigned i = 0; i < p->size; i++) registryCut(p->busy[i]);
    pthread_mutex_unlock(&p->mu);
}

void registryPoolRelease(registryPool *p, registry *r) {
    if (!r) return;
    pthread_mutex_lock(&p->mu);
    for (unsigned i = 0; i < p->size; i++)
        if (p->busy[i] == r) p->busy[i] = NULL;
    p->idle[p->nidle++] = r;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
}

void registryPoolFree(registryPool *p) {
    if (!p) return;
    for (unsigned i = 0; i < p->nidle; i++) registryClose(p->idle[i]);
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->mu);
    free(p->idle);
    free(p->busy);
    free(p->url);
    free(p);
}
