/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gc.h - garbage collection of the managed stage (lake-catalog gc).
 *
 * First the versions past the source's retention expire (sourceExpire
 * without an age: lake.conf's retention in the embedded lake, the
 * server's --retention in remote mode; not in a dry run).  Then it
 * removes the stage objects under files/ and tables/ that no unexpired
 * version of a table that is not dropped refers to (registryReferences)
 * and that are older than a grace period, and aborts multipart uploads
 * older than it where the stage has them.  Safe beside concurrent
 * writers: the stage is listed FIRST, then the live reference set is
 * read from the source (so every reference committed before the listing
 * ended is seen), and only objects that are unreferenced AND last
 * modified at or before now - grace are removed; a put's object is
 * referenced by its append within the grace period or is garbage.  A
 * segment that a compaction or rewrite replaced stays referenced while a
 * version that holds it is unexpired, and so do the FILE objects only
 * its rows referred to; once those versions expired gc removes them.
 * Objects are removed in batches where the stage can (S3:
 * DeleteObjects), and counted and reported only once they are gone.
 * Memory is bounded: the listing and the references go to a temporary
 * on-disk SQLite database, never into RAM as a whole.
 *
 * Objects and references are compared by their key below the stage root
 * (stageRelativePath), so two spellings of one location are one object;
 * a reference outside the stage is ignored.
 */
#ifndef LAKE_GC_H
#define LAKE_GC_H

#include <stdint.h>

#include "catalog/source.h"
#include "core/error.h"
#include "stage/stage.h"

#define GC_GRACE_DEFAULT 86400

typedef struct gcOptions {
    long long grace; /* seconds, >= 0 */
    int dry_run;     /* report, remove nothing */
    long long now;   /* 0: the current time */
} gcOptions;

typedef struct gcStats {
    int64_t removed, removed_bytes; /* (or, dry run, would be) */
    int64_t kept_referenced, kept_young;
    int64_t uploads;                /* multipart uploads aborted (would be) */
    int64_t expired;                /* versions expired first (-1: the source
                                       has no expire; 0 in a dry run) */
    int uploads_supported;          /* as stageAbortUploads says: 1 listed, 0 the
                                       store refuses, -1 the stage has none */
} gcStats;

/* Called per object removed (with dry_run: that would be), after its
 * removal; non-zero stops gc with that code (err set). */
typedef int (*gcObjectFn)(void *ctx, const char *location, int64_t size, lakeError *err);

/* Called per object the object store refused to remove (one of a batch
 * whose request was answered: see stageDeleter), with the reason. */
typedef void (*gcRefusedFn)(void *ctx, const lakeError *why);

/* Run gc over st with the references of src (which must be the live
 * source: an outage is 69 and removes nothing).  Objects are removed in
 * batches (stageDeleter); object is called for each once it is gone.  When
 * the store refuses some objects of a batch, gc reports each to refused,
 * stops after that batch and fails with the code of the first refusal;
 * stats then count only what is gone.  object, refused and upload may be
 * NULL. */
int catalogGc(catalogSource *src, stage *st, const gcOptions *opt, gcObjectFn object,
              gcRefusedFn refused, stageUploadFn upload, void *ctx, gcStats *stats,
              lakeError *err);

#endif
