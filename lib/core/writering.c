/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * writering.c - a bounded ring written to a descriptor by a second thread
 * (see writering.h).
 *
 * The stream's bytes are counted from its start: head bytes were queued,
 * tail bytes written, so [tail, head) is queued (the writer's) and
 * [head, tail + cap) free (the caller's), each at its offset modulo cap.
 */
#include "core/writering.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/thread.h"

struct writeRing {
    int fd;
    char *buf;
    size_t cap, chunk;
    /* whoever writes (the thread while it runs, else the caller) */
    int64_t sync_every, base, written, synced;
    int nothread;      /* the thread could not start: the caller writes */
    int running;       /* the caller's: the thread was started, not joined */
    pthread_t thread;
    pthread_mutex_t mu; /* with cv, guards what follows */
    pthread_cond_t cv;
    uint64_t head, tail;
    int done;          /* the caller queues no more: write the rest, end */
    int quit;          /* end now */
    int err;           /* the errno of a failed write, 0 */
};

static size_t minSize(size_t a, size_t b) { return a < b ? a : b; }

/* Write n bytes at ring offset off (the oldest queued) and start the
 * writeback every sync_every bytes: 0 or an errno. */
static int writeChunk(writeRing *w, size_t off, size_t n) {
    if (writeAll(w->fd, w->buf + off, n) < 0) return errno ? errno : EIO;
    w->written += (int64_t)n;
    if (w->sync_every > 0 && w->written - w->synced >= w->sync_every) {
        sync_file_range(w->fd, w->base + w->synced, w->written - w->synced, SYNC_FILE_RANGE_WRITE);
        w->synced = w->written;
    }
    return 0;
}

/* The caller, with no thread running: write all that is queued. */
static void drain(writeRing *w) {
    while (!w->err && w->tail < w->head) {
        size_t off = (size_t)(w->tail % w->cap), n = minSize((size_t)(w->head - w->tail), w->cap - off);
        int e = writeChunk(w, off, n);
        if (e) w->err = e;
        else w->tail += n;
    }
}

static void *writerMain(void *arg) {
    writeRing *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && w->head == w->tail && !w->done) pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit || w->head == w->tail) break;
        size_t off = (size_t)(w->tail % w->cap);
        size_t n = minSize(minSize((size_t)(w->head - w->tail), w->chunk), w->cap - off);
        pthread_mutex_unlock(&w->mu);
        int e = writeChunk(w, off, n);
        pthread_mutex_lock(&w->mu);
        if (e) w->err = e;
        else w->tail += n;
        pthread_cond_broadcast(&w->cv);
        if (e) break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The caller, the ring full and no thread running: start the writer with
 * every signal blocked, or write what is queued when it cannot start. */
static void startWriter(writeRing *w) {
    if (!w->nothread) {
        int e = threadStart(&w->thread, writerMain, w);
        if (e == 0) {
            w->running = 1;
            return;
        }
        w->nothread = 1;
    }
    drain(w);
}

writeRing *writeRingNew(int fd, size_t cap, size_t chunk, int64_t sync_every) {
    writeRing *w = calloc(1, sizeof *w);
    if (!w || !(w->buf = malloc(cap))) {
        free(w);
        return NULL;
    }
    w->fd = fd;
    w->cap = cap;
    w->chunk = chunk;
    w->sync_every = sync_every;
    off_t at = lseek(fd, 0, SEEK_CUR);
    w->base = at > 0 ? (int64_t)at : 0;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

char *writeRingSpace(writeRing *w, size_t want, size_t *len) {
    size_t off, room;
    if (want == 0) want = 1;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        off = (size_t)(w->head % w->cap);
        room = w->cap - (size_t)(w->head - w->tail);
        if (w->err || room >= minSize(minSize(want, w->chunk), w->cap - off)) break;
        if (w->running) {
            pthread_cond_wait(&w->cv, &w->mu);
        } else {
            pthread_mutex_unlock(&w->mu); /* no thread to share with until it starts */
            startWriter(w);
            pthread_mutex_lock(&w->mu);
        }
    }
    int e = w->err;
    pthread_mutex_unlock(&w->mu);
    if (e) {
        errno = e;
        return NULL;
    }
    *len = minSize(minSize(want, room), w->cap - off);
    return w->buf + off;
}

void writeRingQueue(writeRing *w, size_t n) {
    if (n == 0) return;
    pthread_mutex_lock(&w->mu);
    w->head += n;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* End the thread, if it runs: done (write the rest) or quit. */
static void stopWriter(writeRing *w, int quit) {
    if (!w->running) return;
    pthread_mutex_lock(&w->mu);
    if (quit) w->quit = 1;
    else w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    w->running = 0;
}

int writeRingFinish(writeRing *w) {
    stopWriter(w, 0);
    drain(w); /* no thread ran, or it ended on an error (then this writes nothing) */
    if (w->err) {
        errno = w->err;
        return -1;
    }
    return 0;
}

void writeRingFree(writeRing *w) {
    if (!w) return;
    stopWriter(w, 1);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->buf);
    free(w);
}
