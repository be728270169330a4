/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * thread.c - threads that block every signal and inherit their starter's
 * log sink (see thread.h).
 */
#include "core/thread.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "core/log.h"

/* What the new thread needs before it runs fn. */
typedef struct {
    void *(*fn)(void *);
    void *arg;
    const logSink *sink;
} threadStartArg;

static void *threadMain(void *p) {
    threadStartArg a = *(threadStartArg *)p;
    free(p);
    logSinkSet(a.sink);
    return a.fn(a.arg);
}

int threadStart(pthread_t *t, void *(*fn)(void *), void *arg) {
    threadStartArg *a = malloc(sizeof *a);
    if (!a) return ENOMEM;
    a->fn = fn;
    a->arg = arg;
    a->sink = logSinkGet();
    /* the new thread inherits the mask: every signal blocked from its
     * first instruction, the caller's own mask put back at once */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(t, NULL, threadMain, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) free(a);
    return e;
}
