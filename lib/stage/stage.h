/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stage.h - the managed stage (DESIGN §4): where object bytes live.
 *
 * One interface over backends chosen by the stage URL: file:///abs/dir
 * (local) and s3://bucket/prefix (S3, lib/stage/s3*.c).  The stage owns its namespace:
 * keys are generated (files/YYYY/MM/<id>, or <key_dir>/<id> for a put that
 * names its directory, e.g. a table's segments), never derived from user
 * input.
 *
 * Promises:
 *  - stagePut streams from a reader through SHA-256 into the stage and
 *    publishes the object under its final key only after every byte is
 *    durable and the stated size and digest (if any) match.  On any failure
 *    or kill no object exists under a final key.
 *  - stageGet checks containment before any I/O on the location, streams the
 *    object to a writer and, unless told not to, verifies size and SHA-256;
 *    a mismatch is 65 (the writer has then seen the bad bytes: callers that
 *    publish files write to a temporary name first).
 *  - stageContains is pure: lexical checks only, no I/O.
 */
#ifndef LAKE_STAGE_H
#define LAKE_STAGE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/error.h"
#include "core/progress.h"
#include "stage/filevalue.h"

/* Streaming ends of a transfer.  read returns bytes read, 0 at end, -1 with
 * errno on failure; write returns 0 or -1 with errno. */
typedef struct lakeReader {
    ssize_t (*read)(void *ctx, void *buf, size_t len);
    void *ctx;
    const char *what; /* for messages: "stdin", a path */
} lakeReader;

typedef struct lakeWriter {
    int (*write)(void *ctx, const void *buf, size_t len);
    void *ctx;
    const char *what;
} lakeWriter;

/* Readers and writers over a file descriptor; ctx is an int * to the fd. */
ssize_t fdRead(void *ctx, void *buf, size_t len);
int fdWrite(void *ctx, const void *buf, size_t len);

/* S3 multipart limits (DESIGN §4): the part size a put may ask for, the
 * default, and the most parts in flight at once.  S3 itself allows parts of
 * 5 MiB to 5 GiB and at most 10,000 of them. */
#define STAGE_PART_MIN (5LL * 1024 * 1024)
#define STAGE_PART_MAX (5LL * 1024 * 1024 * 1024)
#define STAGE_PART_DEFAULT (8LL * 1024 * 1024)
#define STAGE_JOBS_MAX 64

typedef struct stagePutOptions {
    const char *name;          /* the FILE value's name, may be NULL */
    const char *content_type;  /* NULL: detected from the first bytes */
    int64_t expect_size;       /* -1: not stated */
    const char *expect_sha256; /* NULL: not stated */
    progress *progress;        /* may be NULL */
    /* S3 only (the local backend ignores them): bytes per part, 0 for the
     * default, else STAGE_PART_MIN..STAGE_PART_MAX; parts in flight, 0 for
     * 1, at most STAGE_JOBS_MAX.  Memory is bounded by (jobs + 1) parts. */
    int64_t part_size;
    int jobs;
    /* Set (by a signal handler) when the put must give up: the backend
     * polls it, cleans up (no object, an S3 upload aborted) and fails with
     * "interrupted".  NULL: never. */
    const volatile sig_atomic_t *stop;
    /* Local only: publish the object without waiting for the disk (no
     * fsync of the file or its directory).  It is durable only after the
     * next stageSync, so a caller that sets this must call stageSync
     * before it prints or records the FILE value.  S3 objects are durable
     * when the put returns, whatever this says. */
    int defer_sync;
} stagePutOptions;

typedef struct stage stage;

/* Open the stage named by url.  Parses and normalises the URL (a trailing
 * slash does not matter); no I/O beyond what the backend needs to be
 * usable.  Bad URL: 78.  An S3 stage whose AWS environment is unusable (no
 * credentials, a malformed endpoint) still opens, for containment checks;
 * its puts and gets then fail with 78 before any request. */
int stageOpen(const char *url, stage **out, lakeError *err);

/* A second handle on the stage s, for another thread: the same URL and,
 * when s is vended, the same vendor (whose calls are serialised by the
 * vendor itself).  The copy must be closed before s. */
int stageDup(const stage *s, stage **out, lakeError *err);
void stageClose(stage *s);

/* The normalised stage URL, e.g. "file:///home/u/lake/stage". */
const char *stageUrl(const stage *s);

/* Stream r into a new object; fill out (caller frees with fileValueFree). */
int stagePut(stage *s, lakeReader *r, const stagePutOptions *opt, fileValue *out,
             lakeError *err);

/* Like stagePut, with the object's key in key_dir below the stage root in
 * place of the dated "files/YYYY/MM": e.g. "tables/<table-id>" for
 * segments (DESIGN §6).  NULL key_dir is stagePut.  key_dir must be a clean
 * relative path (no empty, "." or ".." component, no leading or trailing
 * '/') of at most STAGE_KEY_DIR_MAX bytes, else 64 before any I/O; the id
 * below it is still generated, so two puts never collide.  (A separate
 * entry point rather than a stagePutOptions field, so that callers which
 * fill the options positionally keep compiling warning-free.) */
#define STAGE_KEY_DIR_MAX 256
int stagePutInto(stage *s, const char *key_dir, lakeReader *r, const stagePutOptions *opt,
                 fileValue *out, lakeError *err);

/* How gets read an object of known size (a FILE value's) from S3: as
 * ranged GETs of part_size bytes (0: STAGE_PART_DEFAULT, else
 * STAGE_PART_MIN..STAGE_PART_MAX), up to jobs at once (1..STAGE_JOBS_MAX;
 * 1: one GET, streamed), taken in order.  Memory is bounded by
 * (jobs + 1) x part_size a get.  An object no larger than one part, or a
 * bare location (size unknown), is one GET whatever this says.  A stage
 * opens with STAGE_GET_JOBS_DEFAULT; stageDup keeps the setting.  The
 * local backend ignores it. */
#define STAGE_GET_JOBS_DEFAULT 4
void stageSetGetJobs(stage *s, int jobs, int64_t part_size);

/* The option texts of lake-put's and lake-get's --jobs (1..STAGE_JOBS_MAX),
 * --part-size (bytes, STAGE_PART_MIN..STAGE_PART_MAX) and lake-put's --size
 * (a whole number of bytes, 0..FILE_SIZE_MAX): 0, or 64 with a one-line
 * message naming the option. */
int stageParseJobs(const char *text, int *jobs, lakeError *err);
int stageParsePartSize(const char *text, int64_t *bytes, lakeError *err);
int stageParseSize(const char *text, int64_t *bytes, lakeError *err);

/* Stream the object fv names to w.  verify=0 skips the digest check.  A
 * value without a known digest (a bare location) is verified against the
 * digest the backend recorded at put time, when there is one. */
int stageGet(stage *s, const fileValue *fv, lakeWriter *w, int verify,
             progress *prog, lakeError *err);

/* The same pulled by the caller, with no thread and no copy: *out reads
 * the object into the caller's buffers and verifies it as stageGet does
 * (a mismatch is the error of the read that finds the end).  *out is
 * NULL (and 0 returned) when s's backend only pushes (S3): use stageGet.
 * The local stage pulls. */
typedef struct stageReader stageReader;
int stageOpenRead(stage *s, const fileValue *fv, int verify, stageReader **out, lakeError *err);
/* Up to len bytes into buf: how many, 0 at the verified end, -1 with err
 * set. */
ssize_t stageReaderRead(stageReader *rd, void *buf, size_t len, lakeError *err);
/* NULL is fine. */
void stageReaderClose(stageReader *rd);

/* 0 when location lies inside the stage; 65 "outside the managed stage"
 * otherwise.  No I/O. */
int stageContains(const stage *s, const char *location, lakeError *err);

/* The key of location below the stage root ("files/2026/12/…"); caller
 * frees.  NULL when outside the stage. */
char *stageRelativePath(const stage *s, const char *location);

/* --- garbage collection (lake-catalog gc) --------------------------------- */

/* One object met by stageList.  Strings are valid during the callback. */
typedef struct stageObject {
    const char *key;      /* below the stage root: "files/2026/12/<id>" */
    const char *location; /* as a put would name it */
    int64_t size;
    long long mtime;      /* last modification, seconds since the epoch */
    int partial;          /* the leftover of an interrupted put (a local
                             ".tmp-<pid>-<id>" file): never a finished object */
} stageObject;

/* Called per object; non-zero stops the listing with that code (err set). */
typedef int (*stageListFn)(void *ctx, const stageObject *o, lakeError *err);

/* Stream every object whose key starts with prefix (e.g. "files/"; a clean
 * relative path with a trailing '/', or "" for the whole stage) to fn, in
 * no particular order.  The
 * local backend walks the directory without following symbolic links (a
 * symlink is neither listed nor entered); S3 pages through ListObjectsV2.
 * A missing prefix lists nothing. */
int stageList(stage *s, const char *prefix, stageListFn fn, void *ctx, lakeError *err);

/* stageList of the objects whose key sorts after `after` (bytewise, as
 * strcmp; NULL or "": every object).  Where stageListsInOrder (S3:
 * ListObjectsV2 with start-after) they come in key order, so a caller that
 * has enough may stop the listing: fn returning STAGE_LIST_STOP ends it,
 * and stageListAfter then returns 0.  Elsewhere (local) the whole prefix
 * is walked and the others skipped. */
#define STAGE_LIST_STOP (-1)
int stageListAfter(stage *s, const char *prefix, const char *after, stageListFn fn, void *ctx,
                   lakeError *err);
/* 1 when stageListAfter lists in key order. */
int stageListsInOrder(const stage *s);

/* Delete the object at location: containment first (65), before any I/O;
 * an object already gone is not an error.  Never follows a symlink. */
int stageDelete(stage *s, const char *location, lakeError *err);

/* Removing many objects (gc).  A deleter queues locations and removes
 * them in batches where the backend can (S3: one DeleteObjects request per
 * STAGE_DELETE_BATCH keys at most, and fewer when their XML would pass the
 * request body cap: see s3.c), one at a time where it cannot (local: an
 * unlink per file, as stageDelete).  Memory: one batch of locations.
 *
 * fn is called once per queued object when its fate is known: why NULL
 * when it is gone (removed now, or already gone), else why the object
 * store refused to remove it (one object of a batch that was answered;
 * the others of that batch may be gone).  A non-zero return of fn stops
 * the deleter with that code (err set).  A request that fails as a whole
 * (unreachable, denied, malformed answer) is the error of stageDeleterAdd
 * or stageDeleterFlush, and fn is not called for the objects of that
 * batch: none of them is known to be gone. */
#define STAGE_DELETE_BATCH 1000
typedef int (*stageDeletedFn)(void *ctx, const char *location, int64_t size, const lakeError *why,
                              lakeError *err);
typedef struct stageDeleter stageDeleter;

/* A deleter on s; NULL when out of memory. */
stageDeleter *stageDeleterNew(stage *s, stageDeletedFn fn, void *ctx);
/* Queue location (size is handed back to fn): containment first (65),
 * before any I/O.  May send the batch queued so far. */
int stageDeleterAdd(stageDeleter *d, const char *location, int64_t size, lakeError *err);
/* Send what is queued. */
int stageDeleterFlush(stageDeleter *d, lakeError *err);
/* Free d; what is still queued is not removed, and fn is not called for
 * it.  NULL is fine. */
void stageDeleterFree(stageDeleter *d);

/* Make every object put with defer_sync durable (local: syncfs(2) of the
 * stage's filesystem, which also writes out whatever else is dirty on it;
 * S3: nothing to do).  1 on an I/O error. */
int stageSync(stage *s, lakeError *err);

/* 1 when the backend keeps a put's content type only in the FILE value it
 * returns (local), so a caller may settle the type after the put; 0 when
 * it sends it with the object (S3: the object's Content-Type). */
int stageTypeInValue(const stage *s);

/* Binds libmagic, as a put's first detection does: 0, or 1 with err set
 * (the line saying why), never exiting.  A caller that will detect types
 * aside (lake-put's detector) asks this before anything is stored. */
int stageContentTypeLoad(lakeError *err);
/* The content type libmagic finds in the first bytes of an object, as a
 * put without a content_type records it; application/octet-stream when it
 * finds none.  The caller frees; NULL when out of memory or libmagic
 * cannot be bound.  Thread-safe (calls take turns on libmagic's one
 * cookie). */
char *stageDetectContentType(const void *buf, size_t len);

/* Called per unfinished multipart upload that stageAbortUploads aborts
 * (or, with dry_run, would abort). */
typedef void (*stageUploadFn)(void *ctx, const char *location, long long initiated);

/* Abort the unfinished multipart uploads under the stage that were
 * started at or before `before` (seconds since the epoch); dry_run only
 * reports them.  *supported is 1 when they were listed, -1 when the stage
 * has no such uploads to speak of (local), 0 when its object store does
 * not implement listing or aborting them (HTTP 405 or 501): neither is an
 * error. */
int stageAbortUploads(stage *s, long long before, int dry_run, stageUploadFn fn, void *ctx,
                      int *supported, lakeError *err);

/* --- vended access: URLs signed for someone else (DESIGN §4) ---------------
 *
 * A keyless client holds no S3 keys: it asks the holder of the keys
 * (lake-metasrv) for SigV4 query-signed URLs and moves the bytes itself.
 * The holder's side is stageVend*: each signs with this stage's own keys,
 * decides the object's key itself, and moves no object bytes (a multipart
 * upload's begin, complete and abort are bodiless or small XML requests
 * the holder sends).  The client's side is a stageVendor attached to its
 * stage: every put and get then goes through it, with hashing, bounded
 * buffers, parallel parts and abort-on-failure as with keys.
 *
 * Every URL is scoped to one key (and one upload id and part), expires
 * (1..STAGE_PRESIGN_MAX seconds; the holder may cap it lower) and binds
 * what the request must carry: a part's Content-Length and Content-MD5; a
 * single PUT's Content-Length, Content-MD5, Content-Type and
 * x-amz-meta-sha256.  A multipart upload begun for someone else is named
 * by its location, its upload id and a ticket: the holder's MAC over the
 * two, so that the holder refuses an upload it did not begin, with no
 * state of its own (holders sharing the stage's keys agree on tickets). */
#define STAGE_PRESIGN_DEFAULT 900            /* seconds, when none is asked */
#define STAGE_PRESIGN_MAX (7 * 24 * 3600)    /* SigV4's own limit */
#define STAGE_PRESIGN_PARTS_MAX 100          /* part URLs per request */
#define STAGE_PARTS_MAX 10000                /* parts of one upload (S3's limit) */
#define STAGE_MD5_B64_LEN 24                 /* base64 of 16 bytes */
#define STAGE_TICKET_LEN 64                  /* hex of a SHA-256 MAC */

typedef struct stageUpload {
    char *location;
    char *upload_id;
    char ticket[STAGE_TICKET_LEN + 1];
} stageUpload;
void stageUploadClear(stageUpload *u);

typedef struct stagePartReq {
    int number;                        /* 1..STAGE_PARTS_MAX */
    int64_t size;                      /* STAGE_PART_MIN..STAGE_PART_MAX; the last may be less */
    char md5[STAGE_MD5_B64_LEN + 1];   /* base64 Content-MD5 of the part */
} stagePartReq;

/* What a single PUT for someone else carries. */
typedef struct stagePutReq {
    const char *key_dir;               /* as for stagePutInto; NULL: files/YYYY/MM */
    const char *content_type;
    const char *sha256;                /* hex; required for a single PUT, optional to begin */
    int64_t size;                      /* single PUT: 0..STAGE_PART_MAX */
    const char *md5;                   /* single PUT: base64 Content-MD5 */
} stagePutReq;

/* The holder's side (S3 stages with usable keys; a local stage is 78, a
 * stage without keys 78).  expires 0 means STAGE_PRESIGN_DEFAULT.  Every
 * location must lie in the stage (65) and every upload carry its ticket
 * (77 "not an upload this stage began").  Thread-safe: each call that
 * sends a request uses a curl handle of its own. */
int stageVendGet(const stage *s, const char *location, int64_t expires, char **url, lakeError *err);
int stageVendPut(const stage *s, const stagePutReq *req, int64_t expires, char **location, char **url,
                 lakeError *err);
int stageVendBegin(const stage *s, const stagePutReq *req, stageUpload *out, lakeError *err);
/* urls[i] for parts[i], n at most STAGE_PRESIGN_PARTS_MAX; the caller
 * frees each. */
int stageVendParts(const stage *s, const stageUpload *u, const stagePartReq *parts, size_t n,
                   int64_t expires, char **urls, lakeError *err);
/* CompleteMultipartUpload of parts 1..nparts with their ETags; size is the
 * object's (a completion whose answer was lost is recognised by it), -1
 * when not known. */
int stageVendComplete(const stage *s, const stageUpload *u, int64_t size, int nparts,
                      char *const *etags, lakeError *err);
/* AbortMultipartUpload; an upload already gone is done. */
int stageVendAbort(const stage *s, const stageUpload *u, lakeError *err);

/* The client's side: the same operations, asked of the holder. */
typedef struct stageVendor {
    void *ctx;
    int (*get)(void *ctx, const char *location, int64_t expires, char **url, lakeError *err);
    int (*put)(void *ctx, const stagePutReq *req, char **location, char **url, lakeError *err);
    int (*begin)(void *ctx, const stagePutReq *req, stageUpload *out, lakeError *err);
    int (*parts)(void *ctx, const stageUpload *u, const stagePartReq *parts, size_t n, char **urls,
                 lakeError *err);
    int (*complete)(void *ctx, const stageUpload *u, int64_t size, int nparts, char *const *etags,
                    lakeError *err);
    int (*abort)(void *ctx, const stageUpload *u, lakeError *err);
    void (*free)(void *ctx); /* at stageClose; may be NULL */
} stageVendor;

/* Attach v (copied; the stage frees v->ctx at close) to an S3 stage: its
 * puts and gets go through v from now on and need no AWS keys.  78 for a
 * local stage. */
int stageSetVendor(stage *s, const stageVendor *v, lakeError *err);
/* 1 when s is of a kind that has URLs to sign (S3), keys or not. */
int stageCanPresign(const stage *s);
/* 1 when s has a vendor attached. */
int stageVended(const stage *s);

/* A URL anyone may GET location with for expires seconds (sharing:
 * lake-get --presign, fl_get_presigned_url): through the vendor when one
 * is attached, else signed with the stage's own keys.  No I/O on the
 * object.  A local stage: 78 "presigned URLs need an S3 stage"; outside
 * the stage: 65; expires outside 1..STAGE_PRESIGN_MAX: 64. */
int stagePresignGet(stage *s, const char *location, int64_t expires, char **url, lakeError *err);

#endif
