/*
 * pool.c - a bounded pool of registry connections (pool.h): a stack of
 * idle connections and a count of open ones under one mutex; waiters
 * sleep on a condition variable with a deadline.
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
    int health;         /* registryPoolHealth's last answer */
};

int registryPoolNew(const char *url, unsigned size, unsigned wait_ms, registryPool **out, lakeError *err) {
    *out = NULL;
    registryPool *p = calloc(1, sizeof *p);
    if (!p || !(p->url = strdup(url)) || !(p->idle = calloc(size ? size : 1, sizeof *p->idle))) {
        if (p) free(p->url);
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
 * else wait for one until wait_ms have passed (wait 0: not at all, and
 * *busy is set).  NULL with err set on failure. */
static registry *acquire(registryPool *p, int wait, int *busy, lakeError *err) {
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
        if (!wait || (pthread_cond_timedwait(&p->freed, &p->mu, &deadline) == ETIMEDOUT && p->nidle == 0 &&
                      p->open >= p->size)) {
            pthread_mutex_unlock(&p->mu);
            if (busy) *busy = 1;
            errSetStatus(err, "unavailable", "every registry connection is busy; retry later");
            return NULL;
        }
    }
    if (p->nidle > 0) {
        registry *r = p->idle[--p->nidle];
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
    return r;
}

registry *registryPoolAcquire(registryPool *p, lakeError *err) { return acquire(p, 1, NULL, err); }

int registryPoolHealth(registryPool *p) {
    lakeError err = {0};
    int busy = 0, state;
    registry *r = acquire(p, 0, &busy, &err);
    if (r) {
        state = registryWritable(r, &err);
        registryPoolRelease(p, r);
    } else if (busy) {
        pthread_mutex_lock(&p->mu);
        state = p->health;
        pthread_mutex_unlock(&p->mu);
        return state;
    } else {
        state = REGISTRY_UNAVAILABLE;
    }
    /* no primary: is a standby there, at least? */
    if (state == REGISTRY_UNAVAILABLE) state = registryProbeUrl(p->url);
    pthread_mutex_lock(&p->mu);
    p->health = state;
    pthread_mutex_unlock(&p->mu);
    return state;
}

void registryPoolRelease(registryPool *p, registry *r) {
    if (!r) return;
    pthread_mutex_lock(&p->mu);
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
    free(p->url);
    free(p);
}
