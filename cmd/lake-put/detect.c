/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * detect.c - content types on a helper thread (see detect.h).
 */
#include "detect.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "stage/stage.h"

struct detectJob {
    void *buf;
    size_t len;
    char *type;
    detectJob *next; /* in the queue */
};

struct detector {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job queued, one done, or stop */
    detectJob *head, *tail;
    size_t pending; /* queued or running */
    int stop;
};

static void *detectMain(void *arg) {
    detector *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->head && !d->stop) pthread_cond_wait(&d->cv, &d->mu);
        detectJob *j = d->head;
        if (!j) break; /* stopped, nothing queued */
        d->head = j->next;
        if (!d->head) d->tail = NULL;
        pthread_mutex_unlock(&d->mu);
        j->type = stageDetectContentType(j->buf, j->len);
        free(j->buf);
        j->buf = NULL;
        pthread_mutex_lock(&d->mu);
        d->pending--;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int detectorStart(detector **out, lakeError *err) {
    *out = NULL;
    /* libmagic bound before anything is stored: a detection that failed
     * for want of it would leave the batch's objects unreferenced */
    if (stageContentTypeLoad(err)) return LAKE_EFAIL;
    detector *d = calloc(1, sizeof *d);
    if (!d) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "detector");
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    int e = pthread_create(&d->thread, NULL, detectMain, d);
    if (e) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return errSetErrno(err, LAKE_EFAIL, e, "detector thread");
    }
    *out = d;
    return 0;
}

detectJob *detectorSubmit(detector *d, void *buf, size_t len) {
    detectJob *j = calloc(1, sizeof *j);
    if (!j) {
        free(buf);
        return NULL;
    }
    j->buf = buf;
    j->len = len;
    pthread_mutex_lock(&d->mu);
    if (d->tail) d->tail->next = j;
    else d->head = j;
    d->tail = j;
    d->pending++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return j;
}

void detectorWait(detector *d) {
    pthread_mutex_lock(&d->mu);
    while (d->pending) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

char *detectJobTake(detectJob *j) {
    char *t = j->type;
    j->type = NULL;
    return t;
}

void detectJobFree(detectJob *j) {
    if (!j) return;
    free(j->buf);
    free(j->type);
    free(j);
}

void detectorStop(detector *d) {
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
