/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * thread.h - the one way lake starts a thread.
 *
 * Every thread the library starts (a split aggregate's readers, segment
 * prefetch, S3's parallel GETs and part uploads, the write ring, a
 * liblake reader) is started here, so that each one
 *
 *  - blocks every signal: the signals are the program's, delivered to its
 *    own threads (lake's stop handlers, or whatever a program using
 *    liblake installed), never to one of lake's;
 *  - says what it has to say where its starter would: it begins with the
 *    log sink (core/log.h logSinkSet) of the thread that started it, so a
 *    warning raised on a worker reaches liblake's lake_set_warn callback
 *    (or nowhere) exactly as one raised on the calling thread does.
 *
 * The sink is a pointer: what it points to must outlive the thread, which
 * holds for every sink lake sets (the client's, a reader's), as a thread
 * is joined before the call that started it returns or the object that
 * owns the sink is freed.
 */
#ifndef LAKE_THREAD_H
#define LAKE_THREAD_H

#include <pthread.h>

/* pthread_create(t, NULL, fn, arg) as above: fn runs with every signal
 * blocked and the caller's log sink set.  0, or the error number
 * (nothing started). */
int threadStart(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
