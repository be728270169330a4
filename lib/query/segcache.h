/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * segcache.h - the segment cache (issue 6 part 3, DESIGN §6): segments
 * fetched once from the stage into cache_dir/segments/<sha256>, verified,
 * shared by every process on the host, bounded in size.
 *
 * Layout of cache_dir/segments/ (mode 0700):
 *   <64 hex>          a verified segment, named by its SHA-256; immutable
 *   <64 hex>.lock     held (flock LOCK_EX) by the one process fetching that
 *                     segment; removed when the fetch ends
 *   .lock             flock LOCK_EX while publishing and evicting
 *
 * Promises:
 *  - A segment is downloaded into an atomic temporary file (fsutil.h),
 *    hashed and counted as it streams, and published under its digest name
 *    only when its size and SHA-256 match the fileValue asked for.  A
 *    killed fetch leaves nothing under a digest name.
 *  - Concurrent fetchers of one segment coalesce: one downloads (under
 *    <digest>.lock), the others wait on that lock and then reuse its file.
 *    Fetches of different segments run in parallel.
 *  - Every segment is verified (size and full SHA-256) as it is fetched,
 *    and then stamped: its modification time is set to one nanosecond
 *    past the epoch, a time no write produces.  A hit checks the size and
 *    the stamp; a file whose bytes were changed since (so its mtime is
 *    now), or one left by an older version, is hashed in full again before
 *    use.  A file that fails is removed and fetched again; a fetch whose
 *    bytes fail their digest is 65 and publishes nothing.  (What the stamp
 *    cannot see is a disk that changes bytes without a write; SQLite's own
 *    checks catch most such damage as an unreadable segment, 65.)
 *  - Least-recently-used eviction bounds the total size of the segment
 *    files: the use stamp is the file's atime, set explicitly to now on
 *    every fetch and hit (so noatime and relatime do not matter).  Before a
 *    new segment is published, the oldest files are evicted until the
 *    total, new segment included, fits in max_bytes.
 *  - A maximum age (segcacheSetMaxAge, segment_cache_max_age in
 *    lake.conf(5)) evicts a segment unused for that long, so erased rows
 *    a host once read do not stay on its disk until the size bound
 *    pushes them out (issue 41).
 *  - A segment returned by segcacheGet is pinned: this handle holds a
 *    shared flock on it until segcacheRelease or segcacheClose, and
 *    eviction skips any file it cannot lock exclusively.  So a file a
 *    process uses is never evicted (and if one were removed, POSIX unlink
 *    semantics keep an open descriptor readable).  Pinned files count
 *    towards the total, so it may exceed the bound while they are in use
 *    (e.g. one segment larger than max_bytes).
 *  - A fetch makes exactly the stage's own "trace: stage GET" line under
 *    LAKE_TRACE; a hit makes none.
 */
#ifndef LAKE_QUERY_SEGCACHE_H
#define LAKE_QUERY_SEGCACHE_H

#include <stdint.h>

#include "core/error.h"
#include "stage/filevalue.h"
#include "stage/stage.h"

/* Default bound when LAKE_SEGMENT_CACHE_MAX is not set: 1 GiB. */
#define SEGCACHE_MAX_DEFAULT (1LL << 30)

typedef struct segcache segcache;

/* The bound from the environment: LAKE_SEGMENT_CACHE_MAX, a whole number of
 * bytes with an optional K, M or G suffix (powers of 1024), else
 * SEGCACHE_MAX_DEFAULT.  A malformed or zero value is 78. */
int segcacheMaxFromEnv(int64_t *max_bytes, lakeError *err);

/* Open the cache under cache_dir (creating cache_dir/segments, 0700) with
 * the given bound in bytes (> 0).  *out is freed with segcacheClose.
 * Fails with 1 (or 66) when the directory cannot be created, 64 on a bad
 * bound. */
int segcacheOpen(const char *cache_dir, int64_t max_bytes, segcache **out, lakeError *err);

/* A verified local copy of seg (location, size and sha256 are required;
 * the location must be inside st, which stageGet checks before any I/O):
 * a hit, or fetched through stageGet.  On success *path is the copy's path
 * (caller frees the string) and the segment is pinned until
 * segcacheRelease(c, seg->sha256) or segcacheClose.  Fails with 65 when
 * seg lacks a size or digest or the stage's bytes fail them, otherwise
 * with the stage's or the file system's error; *path is then NULL. */
int segcacheGet(segcache *c, stage *st, const fileValue *seg, char **path, lakeError *err);

/* A second handle on the same cache and bound, for another thread (each
 * handle is used by one thread; handles coordinate through the file
 * locks, as processes do). */
int segcacheDup(const segcache *c, segcache **out, lakeError *err);

/* Bound the age of c's segments: a segment unused (its atime, the LRU
 * stamp) for longer than seconds is evicted (unless pinned), now and at
 * every later publish; 0: no bound.  Best effort, as eviction is. */
void segcacheSetMaxAge(segcache *c, int64_t seconds);

/* Remove from cache_dir/segments every segment whose digest is not in
 * keep[0..n) (sorted here), pinned ones too (a process reading one
 * keeps its descriptor): what no cached registration references, when the
 * host forgets expired versions or purges (catalog/cache.h).  The count
 * removed in *removed.  0, or the file system's error (the rest is still
 * removed). */
int segcacheForget(const char *cache_dir, char **keep, size_t n, int64_t *removed, lakeError *err);

/* Drop one pin of the segment with this digest (no-op if none). */
void segcacheRelease(segcache *c, const char *sha256);

/* Drop every pin and free c.  NULL is allowed. */
void segcacheClose(segcache *c);

#endif
