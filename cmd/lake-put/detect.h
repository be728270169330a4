/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * detect.h - lake-put --archive: content types detected on a helper thread.
 *
 * libmagic costs a fraction of a millisecond per object whatever its size,
 * which for many small archive entries is more than the rest of the put.
 * With a local stage the detection can wait (the FILE values of a batch are
 * printed only after the batch is synced, see main.c), so the main thread
 * puts entry n + 1 while the helper looks at the first bytes of entry n.
 *
 * Promises:
 *  - Jobs are done in the order submitted, one at a time, by one thread,
 *    which is the only caller of stageDetectContentType while it runs.
 *  - detectorWait returns when every job submitted so far is done.
 */
#ifndef LAKE_PUT_DETECT_H
#define LAKE_PUT_DETECT_H

#include <stddef.h>

#include "core/error.h"

typedef struct detector detector;
typedef struct detectJob detectJob;

/* The most bytes of an entry's start that are looked at. */
#define DETECT_PREFIX_MAX (64 * 1024)

/* Bind libmagic and start the helper thread.  1 when either cannot be
 * done (the line saying why in err). */
int detectorStart(detector **out, lakeError *err);

/* Queue the detection of buf (len bytes, malloc'd: the job takes it, and
 * frees it even on failure).  The job belongs to the caller, who frees it
 * with detectJobFree after detectorWait.  NULL when out of memory. */
detectJob *detectorSubmit(detector *d, void *buf, size_t len);

/* Wait until every submitted job is done. */
void detectorWait(detector *d);

/* The type a done job found (never NULL); the caller may take it (then the
 * job no longer frees it). */
char *detectJobTake(detectJob *j);
void detectJobFree(detectJob *j);

/* Stop the thread (after finishing what is queued) and free d. */
void detectorStop(detector *d);

#endif
