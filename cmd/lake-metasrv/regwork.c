/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * regwork.c - lake-metasrv's registry lanes and probe (see regwork.h).
 *
 * Each lane is a FIFO queue under one mutex, its workers sleeping on a
 * condition variable, and a pool of registry connections as large as its
 * workers (so a worker never waits for a connection).  The probe thread
 * asks the registry whether it takes writes every REGWORK_PROBE_MS on a
 * connection of its own; the watch thread looks at the probe four times a
 * second and, when it has hung for REGWORK_READ_CUT_MS, cuts the reads in
 * progress, for REGWORK_DEAD_MS every call; it also refuses what has
 * waited in a queue for wait_ms.
 */
#include "regwork.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/registry/pool.h"
#include "core/clock.h"
#include "core/log.h"

typedef struct lane {
    pthread_mutex_t mu;
    pthread_cond_t work;
    regJob *head, *tail;
    unsigned waiting;           /* queued + running */
    regJob **running;           /* [workers]: what each runs, or NULL */
    unsigned workers;
    pthread_t *threads;
    registryPool *pool;
} lane;

typedef struct worker {
    int lane;
    unsigned slot;
} worker;

static regworkConfig conf;
static lane lanes[LANES];
static atomic_int stopping;

/* the probe's findings, under stateMu */
static pthread_mutex_t stateMu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stateWake;
static int health = REGISTRY_WRITABLE;
static int silent;
static int probing;
static int64_t probeStart;         /* clockMs() */
static registry *probeReg;
static uint64_t refusedFull, refusedStalled, refusedTimeout, cuts;
static pthread_t probeThread, watchThread;

static long long msSince(int64_t t0) { return (long long)(clockMs() - t0); }

static void count(uint64_t *counter) {
    pthread_mutex_lock(&stateMu);
    (*counter)++;
    pthread_mutex_unlock(&stateMu);
}

/* The refusal of a job that waited in its queue for wait_ms. */
static const lakeError *late(const regJob *job, lakeError *err) {
    count(&refusedTimeout);
    errSetStatus(err, "unavailable", "the registry is busy; retry later");
    snprintf(err->cause, sizeof err->cause, "queued %lld ms for a registry worker", msSince(job->queued));
    return err;
}

static void *work(void *arg) {
    worker *w = arg;
    lane *l = &lanes[w->lane];
    for (;;) {
        pthread_mutex_lock(&l->mu);
        while (!l->head && !stopping) pthread_cond_wait(&l->work, &l->mu);
        regJob *job = l->head;
        if (!job) { /* stopping, and nothing left */
            pthread_mutex_unlock(&l->mu);
            free(w);
            return NULL;
        }
        l->head = job->next;
        if (!l->head) l->tail = NULL;
        l->running[w->slot] = job;
        pthread_mutex_unlock(&l->mu);

        lakeError err = {0};
        if (stopping) {
            errSetStatus(&err, "unavailable", "the server is stopping; retry later");
            conf.run(job, NULL, &err);
        } else if (msSince(job->queued) > (long long)conf.wait_ms) {
            conf.run(job, NULL, late(job, &err));
        } else {
            registry *reg = registryPoolAcquire(l->pool, &err);
            conf.run(job, reg, reg ? NULL : &err);
            registryPoolRelease(l->pool, reg);
        }

        pthread_mutex_lock(&l->mu);
        l->running[w->slot] = NULL;
        l->waiting--;
        pthread_mutex_unlock(&l->mu);
        conf.finish(job); /* job may be gone after this */
    }
}

int regworkSubmit(regJob *job, lakeError *err) {
    lane *l = &lanes[job->lane];
    pthread_mutex_lock(&stateMu);
    int gone = silent, slow = probing && msSince(probeStart) > REGWORK_STALL_MS;
    pthread_mutex_unlock(&stateMu);
    if (gone) {
        count(&refusedStalled);
        return errSetStatus(err, "unavailable", "the registry does not answer; retry later");
    }
    pthread_mutex_lock(&l->mu);
    if (l->waiting >= conf.max_waiting) {
        pthread_mutex_unlock(&l->mu);
        count(&refusedFull);
        errSetStatus(err, "unavailable", "too many requests wait on the registry; retry later");
        snprintf(err->cause, sizeof err->cause, "%u requests wait in the %s lane (--max-waiting)",
                 conf.max_waiting, job->lane == LANE_READ ? "read" : "write");
        return err->code;
    }
    /* the probe's trivial question unanswered: so would a read be (a long
     * snapshot build alone is no stall) */
    if (job->lane == LANE_READ && slow) {
        pthread_mutex_unlock(&l->mu);
        count(&refusedStalled);
        errSetStatus(err, "unavailable", "the registry is not answering reads; retry later");
        snprintf(err->cause, sizeof err->cause, "the registry probe unanswered for over %d ms", REGWORK_STALL_MS);
        return err->code;
    }
    job->queued = clockMs();
    job->next = NULL;
    if (l->tail) l->tail->next = job;
    else l->head = job;
    l->tail = job;
    l->waiting++;
    pthread_cond_signal(&l->work);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

/* --- the probe and its watch ------------------------------------------------ */

/* One question to the registry, on the probe's own connection (opened
 * again after a failure).  A registry that cannot be opened is probed for
 * a read-only server (registryProbeUrl). */
static int probeOnce(void) {
    lakeError err = {0};
    registry *r = NULL;
    pthread_mutex_lock(&stateMu);
    r = probeReg;
    pthread_mutex_unlock(&stateMu);
    if (!r && registryOpenUrl(conf.db, REGISTRY_EXISTING, NULL, &r, &err)) r = NULL;
    if (r) {
        pthread_mutex_lock(&stateMu);
        probeReg = r;
        pthread_mutex_unlock(&stateMu);
    }
    int state = r ? registryWritable(r, &err) : REGISTRY_UNAVAILABLE;
    if (state == REGISTRY_UNAVAILABLE) {
        pthread_mutex_lock(&stateMu);
        probeReg = NULL;
        pthread_mutex_unlock(&stateMu);
        registryClose(r);
        state = registryProbeUrl(conf.db);
    }
    return state;
}

static void *probe(void *arg) {
    (void)arg;
    pthread_mutex_lock(&stateMu);
    while (!stopping) {
        probing = 1;
        probeStart = clockMs();
        pthread_mutex_unlock(&stateMu);
        int state = probeOnce();
        pthread_mutex_lock(&stateMu);
        probing = 0;
        health = state;
        if (state != REGISTRY_UNAVAILABLE && silent) {
            silent = 0;
            logWarn("the registry answers again");
        }
        struct timespec t;
        clockAfterMs(&t, CLOCK_MONOTONIC, REGWORK_PROBE_MS);
        while (!stopping && pthread_cond_timedwait(&stateWake, &stateMu, &t) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&stateMu);
    return NULL;
}

static void cutAll(void) {
    for (int i = 0; i < LANES; i++) registryPoolCut(lanes[i].pool);
}

/* Refuse what has waited in l's queue longer than wait_ms: the queue is
 * in order, so from its head.  Nothing of such a request ran. */
static void expire(lane *l) {
    regJob *gone = NULL, **tail = &gone;
    pthread_mutex_lock(&l->mu);
    while (l->head && msSince(l->head->queued) > (long long)conf.wait_ms) {
        regJob *job = l->head;
        l->head = job->next;
        job->next = NULL;
        *tail = job;
        tail = &job->next;
        l->waiting--;
    }
    if (!l->head) l->tail = NULL;
    pthread_mutex_unlock(&l->mu);
    while (gone) {
        regJob *job = gone;
        gone = job->next;
        lakeError err = {0};
        conf.run(job, NULL, late(job, &err));
        conf.finish(job);
    }
}

static void *watch(void *arg) {
    (void)arg;
    pthread_mutex_lock(&stateMu);
    while (!stopping) {
        if (probing && msSince(probeStart) > REGWORK_DEAD_MS) {
            if (!silent) {
                logErrorf("the registry has not answered for %d s: its calls in progress are cut",
                          REGWORK_DEAD_MS / 1000);
                cuts++;
            }
            silent = 1;
            health = REGISTRY_UNAVAILABLE;
            registryCut(probeReg);
            cutAll();
        } else if (probing && msSince(probeStart) > REGWORK_READ_CUT_MS) {
            registryPoolCut(lanes[LANE_READ].pool); /* a read cut changes nothing */
        }
        pthread_mutex_unlock(&stateMu);
        for (int i = 0; i < LANES; i++) expire(&lanes[i]);
        pthread_mutex_lock(&stateMu);
        struct timespec t;
        clockAfterMs(&t, CLOCK_MONOTONIC, 250);
        if (!stopping) pthread_cond_timedwait(&stateWake, &stateMu, &t);
    }
    pthread_mutex_unlock(&stateMu);
    return NULL;
}

void regworkRead(regworkState *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&stateMu);
    s->registry = health;
    s->silent = silent;
    s->refused_full = refusedFull;
    s->refused_stalled = refusedStalled;
    s->refused_timeout = refusedTimeout;
    s->cuts = cuts;
    pthread_mutex_unlock(&stateMu);
    for (int i = 0; i < LANES; i++) {
        lane *l = &lanes[i];
        pthread_mutex_lock(&l->mu);
        s->waiting[i] = l->waiting;
        long long oldest = l->head ? msSince(l->head->queued) : 0;
        for (unsigned k = 0; k < l->workers; k++)
            if (l->running[k] && msSince(l->running[k]->queued) > oldest) oldest = msSince(l->running[k]->queued);
        pthread_mutex_unlock(&l->mu);
        s->oldest_s[i] = (double)oldest / 1000;
    }
}

/* --- start and stop ------------------------------------------------------------ */

int regworkStart(const regworkConfig *cfg, lakeError *err) {
    conf = *cfg;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&stateWake, &ca);
    for (int i = 0; i < LANES; i++) {
        lane *l = &lanes[i];
        pthread_mutex_init(&l->mu, NULL);
        pthread_cond_init(&l->work, NULL);
        l->workers = cfg->workers[i] ? cfg->workers[i] : 1;
        if (!(l->running = calloc(l->workers, sizeof *l->running)) ||
            !(l->threads = calloc(l->workers, sizeof *l->threads)))
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry workers");
        /* a worker never waits for a connection: there is one for each */
        if (registryPoolNew(cfg->db, l->workers, &l->pool, err)) return err->code;
        for (unsigned k = 0; k < l->workers; k++) {
            worker *w = malloc(sizeof *w);
            if (!w) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry workers");
            *w = (worker){.lane = i, .slot = k};
            if ((errno = pthread_create(&l->threads[k], NULL, work, w)))
                return errSetErrno(err, LAKE_EFAIL, errno, "registry workers");
        }
    }
    pthread_condattr_destroy(&ca);
    if ((errno = pthread_create(&probeThread, NULL, probe, NULL)) ||
        (errno = pthread_create(&watchThread, NULL, watch, NULL)))
        return errSetErrno(err, LAKE_EFAIL, errno, "registry probe");
    return 0;
}

void regworkStop(void) {
    pthread_mutex_lock(&stateMu);
    stopping = 1;
    pthread_cond_broadcast(&stateWake);
    pthread_mutex_unlock(&stateMu);
    for (int i = 0; i < LANES; i++) {
        pthread_mutex_lock(&lanes[i].mu);
        pthread_cond_broadcast(&lanes[i].work);
        pthread_mutex_unlock(&lanes[i].mu);
    }
    /* what still runs waits on a server: PostgreSQL's calls are cut, a
     * SQLite lock is waited for at most its busy timeout */
    cutAll();
    pthread_mutex_lock(&stateMu);
    registryCut(probeReg);
    pthread_mutex_unlock(&stateMu);
    for (int i = 0; i < LANES; i++)
        for (unsigned k = 0; k < lanes[i].workers; k++) pthread_join(lanes[i].threads[k], NULL);
    pthread_join(watchThread, NULL);
    pthread_join(probeThread, NULL);
    registryClose(probeReg);
    probeReg = NULL;
    for (int i = 0; i < LANES; i++) {
        registryPoolFree(lanes[i].pool);
        free(lanes[i].running);
        free(lanes[i].threads);
    }
}
