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
    long long grace;   /* seconds, >= 0 */
    int dry_run;       /* report, remove nothing */
    long long now;     /* 0: the current time */
    /* One page of a gc run in several calls (the gc action): only the
     * objects whose key sorts after `after` (NULL or "": from the first),
     * and at most limit of them (0: all), smallest keys first.  The
     * versions expire only in the first page (no after), the multipart
     * uploads are aborted only in the last (no next). */
    const char *after;
    int64_t limit;
} gcOptions;

typedef struct gcStats {
    int64_t removed, removed_bytes; /* (or, dry run, would be) */
    int64_t kept_referenced, kept_young;
    int64_t uploads;                /* multipart uploads aborted (would be) */
    int64_t expired;                /* versions expired first (-1: the source
                                       has no expire; 0 in a dry run) */
    int uploads_supported;          /* as stageAbortUploads says: 1 listed, 0 the
                                       store refuses, -1 the stage has none (or,
                                       paged, not the last page: not asked) */
    char *next;                     /* paged: the key the next page starts after,
                                       NULL when this was the last; caller frees */
} gcStats;

/* Called per object removed (with dry_run: that would be), after its
 * removal; non-zero stops gc with that code (err set). */
typedef int (*gcObjectFn)(void *ctx, const char *location, int64_t size, lakeError *err);

/* Called per object the object store refused to remove (one of a batch
 * whose request was answered: see stageDeleter), with the reason. */
typedef void (*gcRefusedFn)(void *ctx, const lakeError *why);

/* Run gc over st with the references of src (which must be the live
 * source: an outage is 69 and removes nothing).  Paged (opt->limit), each
 * page is safe on its own: its objects are listed before the references
 * are read.  Objects are removed in
 * batches (stageDeleter); object is called for each once it is gone.  When
 * the store refuses some objects of a batch, gc reports each to refused,
 * stops after that batch and fails with the code of the first refusal;
 * stats then count only what is gone.  object, refused and upload may be
 * NULL. */
int catalogGc(catalogSource *src, stage *st, const gcOptions *opt, gcObjectFn object,
              gcRefusedFn refused, stageUploadFn upload, void *ctx, gcStats *stats,
              lakeError *err);

/* --- gc where the keys are (issue 41): the gc action ---------------------
 *
 * A keyless client (its stage vended: stageVended) cannot list or delete
 * objects; lake-metasrv, which holds the stage's keys, runs gc for it, one
 * page a call.  Request {"dry_run", "grace", "limit", "after"}; answer
 * {"removed", "removed_bytes", "kept_referenced", "kept_young", "expired",
 * "uploads", "uploads_supported", "objects": [{"location","size"}…],
 * "aborted_uploads": [{"location","initiated"}…], "next"}: the page's
 * counts, the objects it removed (dry run: would remove), and where the
 * next page starts (absent after the last).  A call does bounded work:
 * it lists at most limit + 1 objects (limit at most GC_PAGE_MAX, the
 * default), reads the live references once, removes at most limit
 * objects (DeleteObjects of up to 1,000 keys), and, in the last page
 * only, aborts the old multipart uploads (at most GC_UPLOADS_LISTED of
 * them named in the answer, all counted). */
#define GC_PAGE_MAX 1000
#define GC_UPLOADS_LISTED 1000

struct actionContext;
struct cJSON;
/* The server's side: one page, with the server's own stage (a handle of
 * its own) and the caller's context (its role was checked).  An S3
 * stage without usable keys is 78 (the caller words it). */
int catalogGcAction(const struct actionContext *ctx, const struct cJSON *req, struct cJSON **answer,
                    lakeError *err);

/* The client's side: catalogGc's contract and callbacks (refused is not
 * called: the server logs refusals, and the page fails), run as calls of
 * the gc action on src until the last page. */
int catalogGcRemote(catalogSource *src, const gcOptions *opt, gcObjectFn object, stageUploadFn upload,
                    void *ctx, gcStats *stats, lakeError *err);

#endif
