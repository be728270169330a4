/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prefetch.h - fetching the segments a scan reads next into the segment
 * cache, several at once, while the scan reads the current one (a cold
 * query on an S3 stage waits for one round trip at a time otherwise).
 *
 * Promises:
 *  - At most PREFETCH_JOBS fetches run at once, each on a stage and a
 *    segment cache handle of its own (stageDup, segcacheDup), and none
 *    reaches more than PREFETCH_AHEAD segments beyond the one the scan is
 *    reading; only the segments given (those the scan kept) are fetched.
 *    Each is one GET, streamed (stageSetGetJobs 1): the scan's own fetch
 *    alone reads in parallel ranged GETs, so memory stays bounded by one
 *    get's (jobs + 1) parts.
 *  - A prefetched segment is verified and published exactly as the
 *    scan's own fetch would be (segcache.h); the scan then finds it there,
 *    or waits for the fetch in progress on its digest lock.  A failed
 *    prefetch is dropped: the scan fetches that segment itself and reports
 *    the failure.
 */
#ifndef LAKE_QUERY_PREFETCH_H
#define LAKE_QUERY_PREFETCH_H

#include "core/error.h"
#include "query/segcache.h"
#include "stage/filevalue.h"
#include "stage/stage.h"

#define PREFETCH_JOBS 4
#define PREFETCH_AHEAD 4

typedef struct prefetch prefetch;

/* Start fetching segs[1..n) (location, size and sha256 are copied) into
 * c's cache through st; the scan is at segs[0], which it fetches itself.
 * Fails only for want of memory or threads (the scan then fetches every
 * segment itself). */
int prefetchStart(segcache *c, stage *st, const fileValue *segs, int n, prefetch **out, lakeError *err);

/* The scan has reached segs[i]. */
void prefetchAt(prefetch *p, int i);

/* Start no more fetches, wait for those running, free p.  NULL is fine. */
void prefetchStop(prefetch *p);

#endif
