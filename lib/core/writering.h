/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * writering.h - write a stream to a descriptor beside the work that
 * produces it.
 *
 * A writeRing is one buffer of a fixed size, used as a ring: the caller
 * asks for free space, fills it (reading input into it, hashing it there)
 * and queues it; a writer thread write(2)s what is queued, in order, and
 * frees it.  So producing the bytes and writing them take two cores, and a
 * stream takes the longer of the two, not their sum, in the memory of the
 * one buffer.  The thread starts only when the ring is first full: a
 * stream that fits in it is written by the caller alone, at the finish,
 * with no thread at all.  Should the thread not start, the caller writes
 * what is queued itself, and the stream goes on without it.
 *
 * The writer thread blocks every signal (they are for the calling thread,
 * core/interrupt.h).  A failed write stops the writing: the caller learns
 * of it the next time it asks for space, or at the finish, with its errno.
 * All of the ring's state but the bytes is shared under one mutex; the
 * bytes queued belong to the writer and the free ones to the caller, each
 * handed over under the mutex.
 */
#ifndef LAKE_WRITERING_H
#define LAKE_WRITERING_H

#include <stddef.h>
#include <stdint.h>

typedef struct writeRing writeRing;

/* A ring of cap bytes writing to fd from its current offset, chunk bytes
 * at a time at most (cap a multiple of chunk).  Every sync_every bytes
 * (0: never) the writer starts the writeback of what it wrote since
 * (sync_file_range(2)), so that dirty pages do not pile up and a final
 * fsync is short.  NULL when out of memory.  The caller keeps fd open
 * until writeRingFree. */
writeRing *writeRingNew(int fd, size_t cap, size_t chunk, int64_t sync_every);

/* Free space for the next bytes of the stream: contiguous, at least one
 * byte and at most want (*len says how much), waiting for the writer to
 * free some when the ring is full (starting it the first time).  The
 * first call may give the whole ring.  NULL with errno set when a write
 * failed (the stream cannot go on). */
char *writeRingSpace(writeRing *w, size_t want, size_t *len);

/* Queue the first n bytes of the space writeRingSpace last gave (n at
 * most its *len), for writing in order. */
void writeRingQueue(writeRing *w, size_t n);

/* Write everything queued and wait until it is written (ending the
 * thread): 0, or -1 with errno set when a write failed.  Then only
 * writeRingFree. */
int writeRingFinish(writeRing *w);

/* Stop writing (a write in progress completes; what is queued after it is
 * dropped), end the thread and free the ring.  NULL is ignored. */
void writeRingFree(writeRing *w);

#endif
