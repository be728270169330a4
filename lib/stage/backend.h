/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * backend.h - what a stage backend provides (private to lib/stage).
 */
#ifndef LAKE_STAGE_BACKEND_H
#define LAKE_STAGE_BACKEND_H

#include "stage/stage.h"

typedef struct stageOps {
    /* key_dir: as for stagePutInto, already checked (NULL: files/YYYY/MM) */
    int (*put)(stage *s, const char *key_dir, lakeReader *r, const stagePutOptions *opt,
               fileValue *out, lakeError *err);
    int (*get)(stage *s, const fileValue *fv, lakeWriter *w, int verify,
               progress *prog, lakeError *err);
    /* The key below the root, or NULL when outside; no I/O. */
    char *(*relative)(const stage *s, const char *location);
    void (*close)(stage *s);
    /* gc: prefix already checked; location already contained */
    int (*list)(stage *s, const char *prefix, stageListFn fn, void *ctx, lakeError *err);
    /* NULL: list, filtered (stageListAfter).  Else the objects after the
     * key `after` (not NULL), in key order */
    int (*list_after)(stage *s, const char *prefix, const char *after, stageListFn fn, void *ctx,
                      lakeError *err);
    int (*del)(stage *s, const char *location, lakeError *err);
    /* NULL: del per object.  Remove the n objects at locs (contained, n at
     * most STAGE_DELETE_BATCH, their lengths summed at most
     * delete_batch_bytes) in one request; failed(ctx, i, why) for each one
     * the store refused; 0 when answered, else the error of the request
     * (nothing known removed).  *unsupported is set (and 0 returned, with
     * nothing removed) when the store does not implement batches: del per
     * object from then on. */
    int (*del_batch)(stage *s, char *const *locs, size_t n,
                     void (*failed)(void *ctx, size_t i, const lakeError *why), void *ctx,
                     int *unsupported, lakeError *err);
    size_t delete_batch_bytes;
    /* NULL: the backend has no multipart uploads */
    int (*abort_uploads)(stage *s, long long before, int dry_run, stageUploadFn fn, void *ctx,
                         int *supported, lakeError *err);
    /* NULL: puts are durable when they return */
    int (*sync)(stage *s, lakeError *err);
    /* 1: a put's content type lives only in the FILE value it returns
     * (stageTypeInValue) */
    int type_in_value;
    /* NULL: no URLs to sign (local); else vended access (s3vend.c) */
    const struct stageVendOps *vend;
    /* NULL: objects are only pushed (get); else a reader pulled by the
     * caller, as stageOpenRead (location already contained) */
    int (*open_read)(stage *s, const fileValue *fv, int verify, stageReader **out, lakeError *err);
} stageOps;

/* A pulled reader's functions (the first member of a backend's reader). */
struct stageReader {
    ssize_t (*read)(stageReader *rd, void *buf, size_t len, lakeError *err);
    void (*close)(stageReader *rd);
};

/* Vended access, as stage.h's stageVend* and stageSetVendor (the
 * arguments already checked: locations contained, expires in range). */
typedef struct stageVendOps {
    /* probe: check first that the object store takes the keys (a
     * holder's answer to someone else; signing for oneself needs no
     * request) */
    int (*get)(const stage *s, const char *location, int64_t expires, int probe, char **url, lakeError *err);
    int (*put)(const stage *s, const stagePutReq *req, int64_t expires, char **location, char **url,
               lakeError *err);
    int (*begin)(const stage *s, const stagePutReq *req, stageUpload *out, lakeError *err);
    int (*parts)(const stage *s, const stageUpload *u, const stagePartReq *parts, size_t n,
                 int64_t expires, char **urls, lakeError *err);
    int (*complete)(const stage *s, const stageUpload *u, int64_t size, int nparts, char *const *etags,
                    lakeError *err);
    int (*abort)(const stage *s, const stageUpload *u, lakeError *err);
    int (*set_vendor)(stage *s, const stageVendor *v, lakeError *err);
    const stageVendor *(*vendor)(const stage *s); /* the attached one, or NULL */
} stageVendOps;

struct stage {
    const stageOps *ops;
    char *url; /* normalised */
    int get_jobs;          /* stageSetGetJobs */
    int64_t get_part_size;
};

int localStageOpen(const char *url, stage **out, lakeError *err);
int s3StageOpen(const char *url, stage **out, lakeError *err);

/* Shared by the backends: the streaming unit and key directories (time
 * stamps: core/rfc3339.h). */
#define STAGE_BUF_SIZE (1024 * 1024)
/* "files/2026/12/" for t. */
void stageKeyDir(char out[32], long long t);
/* The directory of a new key, with its trailing '/': key_dir + "/" when
 * key_dir is set (checked by stagePutInto), else stageKeyDir(t). */
#define STAGE_KEY_DIR_BUF (STAGE_KEY_DIR_MAX + 2)
void stagePutKeyDir(const char *key_dir, long long t, char out[STAGE_KEY_DIR_BUF]);

/* Decode %XX escapes; NULL on a bad escape, an encoded NUL or an encoded
 * '/' (which would give one object two spellings), or out of memory.
 * Caller frees. */
char *stagePercentDecode(const char *s);
/* s with every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~) and '/'
 * percent-encoded, upper-case hex: a well-formed URI path, and AWS's
 * UriEncode of an S3 key.  Caller frees; NULL when out of memory. */
char *stagePercentEncode(const char *s);
/* The same with '/' encoded too: a query parameter value (AWS's UriEncode
 * of a value: a listing's prefix, a continuation token, an upload id). */
char *stageQueryEncode(const char *s);
/* True when the relative path p has only non-empty components that are
 * neither "." nor ".." ("a/b" yes; "", "a//b", "a/", "../a" no). */
int stageCleanRelative(const char *p);

/* True when the put was told to give up (opt->stop is set). */
int stageStopped(const stagePutOptions *opt);
/* The error of a put that gave up: "WHAT: interrupted" (1).  The caller
 * (lake-put) tells the signal apart and exits as killed by it. */
int stageInterrupted(const lakeReader *r, lakeError *err);

/* 65 when a put has read more than the size it was told (--size). */
int stageOverStated(const lakeReader *r, const stagePutOptions *opt, int64_t total,
                    lakeError *err);
/* 65 unless a whole input of total bytes and digest sha256 (hex) is what
 * the put was told (--size, --sha256). */
int stageCheckStated(const lakeReader *r, const stagePutOptions *opt, int64_t total,
                     const char *sha256, lakeError *err);

/* The content type of an object's first bytes into *type (the caller
 * frees; application/octet-stream when libmagic finds none): 0, or 1 with
 * err set when libmagic cannot be bound (bound by the first detection,
 * never exiting) or memory runs out. */
int contentTypeDetect(const void *buf, size_t len, char **type, lakeError *err);
/* Unload the magic database (about 8 MiB resident) until the next
 * detection: the S3 backend does, before its part buffers fill. */
void contentTypeRelease(void);

#endif
