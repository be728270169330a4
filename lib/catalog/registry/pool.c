/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pool.c - a bounded pool of registry connections (pool.h): a stack of
 * idle connections, the list of those in use and a count of open ones
 * under one mutex.
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
    char *url;
    unsigned size;
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

int registryPoolNew(const char *url, unsigned size, registryPool **out, lakeError *err) {
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
    pthread_mutex_init(&p->mu, NULL);
    *out = p;
    return 0;
}

/* A connection: an idle one, else a new one if fewer than size are open.
 * NULL with err set on failure. */
registry *registryPoolAcquire(registryPool *p, lakeError *err) {
    pthread_mutex_lock(&p->mu);
    if (p->nidle == 0 && p->open >= p->size) {
        pthread_mutex_unlock(&p->mu);
        errSetStatus(err, "unavailable", "every registry connection is busy; retry later");
        return NULL;
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
    pthread_mutex_unlock(&p->mu);
}

void registryPoolFree(registryPool *p) {
    if (!p) return;
    for (unsigned i = 0; i < p->nidle; i++) registryClose(p->idle[i]);
    pthread_mutex_destroy(&p->mu);
    free(p->idle);
    free(p->busy);
    free(p->url);
    free(p);
}
