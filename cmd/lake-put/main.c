/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake-put - stream bytes into the managed stage, one FILE value per object.
 *
 *   lake-put [-q] [--name NAME] [--content-type TYPE] [--size BYTES]
 *            [--sha256 HEX] [--part-size BYTES] [--jobs N] [--stage URL]
 *            [--table NS.T [--column COL] [--set COL=VALUE]...]
 *            [--archive [--max-skipped BYTES]] [FILE|-]...
 *
 * Inputs are put in order (with --archive, every regular entry of every
 * archive, in archive order); each FILE value is printed (one JSON line) as
 * soon as its object is durable.  The first failure stops the run.
 * SIGINT, SIGTERM and SIGHUP make the put in progress give up and clean up
 * (an S3 upload is aborted); then lake-put says "interrupted" and dies of
 * the same signal (core/interrupt.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/command.h"

#include "catalog/cache.h"
#include "catalog/vend.h"
#include "catalog/names.h"
#include "catalog/source.h"
#include "query/compact.h"
#include "query/segment.h"
#include <cjson/cJSON.h>
#include "core/bytesize.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/progress.h"
#include "detect.h"
#include "entries.h"
#include "stage/stage.h"

enum { OPT_NAME = 0x100, OPT_CTYPE, OPT_SIZE, OPT_SHA, OPT_STAGE, OPT_PROGRESS,
       OPT_NO_PROGRESS, OPT_PART_SIZE, OPT_JOBS, OPT_TABLE, OPT_COLUMN, OPT_SET,
       OPT_ARCHIVE, OPT_MAX_SKIPPED };

/* --set may be given this many times. */
#define MAX_SETS 64
/* --archive: the data of skipped entries an archive may hold (lake-put(1)
 * "Limits of archive reading"), unless --max-skipped says otherwise */
#define MAX_SKIPPED_DEFAULT (1LL << 30)
/* The size a pipe given as input is asked to take (openInput): Linux's
 * default most for an unprivileged process (/proc/sys/fs/pipe-max-size). */
#define PIPE_SIZE (1024 * 1024)

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings or progress"},
    {OPT_NAME, 0, "name", "NAME", "the FILE value's name (default: the file's base name)"},
    {OPT_CTYPE, 0, "content-type", "TYPE", "content type (default: detected)"},
    {OPT_SIZE, 0, "size", "BYTES", "fail unless the input is exactly BYTES long"},
    {OPT_SHA, 0, "sha256", "HEX", "fail unless the input has this SHA-256"},
    {OPT_PART_SIZE, 0, "part-size", "BYTES", "S3: bytes per part (default 8MiB, at least 5MiB)"},
    {OPT_JOBS, 0, "jobs", "N", "S3: parts to send at once (default 1)"},
    {OPT_TABLE, 0, "table", "NS.T", "also add one row per object to this table, in one append"},
    {OPT_COLUMN, 0, "column", "COL", "with --table: the FILE column (default: the table's first FILE column)"},
    {OPT_SET, 0, "set", "COL=VALUE", "with --table: a value for another column of every row (repeatable)"},
    {OPT_ARCHIVE, 0, "archive", NULL, "the inputs are archives (tar, cpio, zip or 7z): put each regular entry"},
    {OPT_MAX_SKIPPED, 0, "max-skipped", "BYTES", "with --archive: data of skipped entries allowed per archive (default 1GiB)"},
    {OPT_STAGE, 0, "stage", "URL", "the managed stage (overrides LAKE_STAGE)"},
    {OPT_PROGRESS, 0, "progress", NULL, "draw a progress bar even if stderr is no terminal"},
    {OPT_NO_PROGRESS, 0, "no-progress", NULL, "never draw a progress bar"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "[-q] [--name NAME] [--content-type TYPE] [--size BYTES] [--sha256 HEX]\n"
    " [--table NS.T [--column COL] [--set COL=VALUE]...] [--archive [--max-skipped BYTES]]\n"
    " [--part-size BYTES] [--jobs N] [--stage URL] [FILE|-]...",
    "Stream files or stdin into the lake's managed stage; print one FILE value "
    "(JSON) per object.",
    options,
    0,
    1,
};

typedef struct putArgs {
    const char *name, *content_type, *sha256, *stage;
    long long size, part_size;
    int jobs;
    progressMode progress;
    const char *table, *column;
    const char *sets[MAX_SETS];
    int nsets;
    int archive;
    long long max_skipped; /* --archive: archiveInOpen's bound; -1 unset */
    lake_client *c; /* neither --table nor --archive: the public library's client */
} putArgs;

/* --table: the rows being written, one per object put. */
typedef struct rowPlan {
    segmentWriter *w;
    int ncols, filecol;
    int pathcol;     /* --archive: the TEXT column "path" no --set fills, or -1 */
    lakeValue *vals; /* the --set values; the FILE column filled per row */
    int stored;      /* objects put so far, none of them referenced yet */
} rowPlan;

static long long parseSize(const char *s) {
    int64_t v;
    lakeError err = {0};
    if (stageParseSize(s, &v, &err)) cliUsageError(&spec, "%s", err.msg);
    return v;
}

static long long parsePartSize(const char *s) {
    int64_t v;
    lakeError err = {0};
    if (stageParsePartSize(s, &v, &err)) cliUsageError(&spec, "%s", err.msg);
    return v;
}

static long long parseMaxSkipped(const char *s) {
    int64_t v;
    if (bytesParse(s, &v)) cliUsageError(&spec, "--max-skipped: '%s' is not a number of bytes", s);
    return v;
}

static int parseJobs(const char *s) {
    int v;
    lakeError err = {0};
    if (stageParseJobs(s, &v, &err)) cliUsageError(&spec, "%s", err.msg);
    return v;
}

/* --archive: the objects of a batch are put with defer_sync; their FILE
 * values wait here until one stageSync has made the whole batch durable (a
 * local stage then syncs once per batch, not twice per object: many small
 * entries cost writes, not disk flushes).  In a local stage their content
 * types are detected meanwhile on a helper thread (detect.h), from the
 * first DETECT_PREFIX_MAX bytes; an S3 put needs its type for the upload
 * itself and detects it inline.  A batch ends after this many objects or
 * bytes, and at the end of every archive. */
#define BATCH_OBJECTS 256
#define BATCH_BYTES (64LL * 1024 * 1024)

typedef struct batchEntry {
    fileValue fv;
    char *path;     /* for the plan's path column, may be NULL */
    detectJob *job; /* the content type being detected, or NULL */
} batchEntry;

typedef struct outBatch {
    batchEntry e[BATCH_OBJECTS];
    int n;
    int64_t bytes;
    detector *detect; /* NULL: types are detected by the stage */
    char *out;        /* the FILE value lines, built at flush */
    size_t len, cap;
} outBatch;

static int printLine(const char *json, lakeError *err) {
    if (printf("%s\n", json) < 0 || fflush(stdout) == EOF) return errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    return 0;
}

/* What becomes of the objects a plan stored when nothing is appended. */
static void unreferencedNote(const char *table, const rowPlan *plan, char *note, size_t size) {
    snprintf(note, size, "nothing appended to %s (the %d object%s stored stay%s unreferenced; lake-catalog gc removes them)",
             table, plan->stored, plan->stored == 1 ? "" : "s", plan->stored == 1 ? "s" : "");
}

/* Add the row of an object (its FILE value as json) to the plan. */
static int addRow(rowPlan *plan, const char *json, const char *path, const char *what, lakeError *err) {
    plan->vals[plan->filecol] = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = json, .n = strlen(json)};
    if (plan->pathcol >= 0 && path)
        plan->vals[plan->pathcol] = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = path, .n = strlen(path)};
    int rc = segmentWriterAddRow(plan->w, plan->vals, plan->ncols, err);
    if (rc) errPrefix(err, "%s", what);
    return rc;
}

static int outAppend(outBatch *b, const char *json, lakeError *err) {
    size_t n = strlen(json) + 1;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64 * 1024;
        while (cap < b->len + n) cap *= 2;
        char *nb = realloc(b->out, cap);
        if (!nb) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stdout");
        b->out = nb;
        b->cap = cap;
    }
    memcpy(b->out + b->len, json, n - 1);
    b->out[b->len + n - 1] = '\n';
    b->len += n;
    return 0;
}

/* Finish the batch: the detected types into the FILE values, the rows
 * into the plan, then make the objects durable and print their values. */
static int batchFlush(stage *st, rowPlan *plan, outBatch *b, lakeError *err) {
    int rc = 0;
    if (!b || b->n == 0) return 0;
    if (b->detect) detectorWait(b->detect);
    b->len = 0;
    for (int i = 0; i < b->n; i++) {
        batchEntry *e = &b->e[i];
        if (!rc && e->job) {
            free(e->fv.content_type);
            if (!(e->fv.content_type = detectJobTake(e->job))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "content type");
        }
        char *json = rc ? NULL : fileValueToJson(&e->fv);
        if (!rc && !json) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stdout");
        if (!rc) rc = outAppend(b, json, err);
        if (!rc && plan) rc = addRow(plan, json, e->path, e->path ? e->path : "stdin", err);
        free(json);
        fileValueFree(&e->fv);
        free(e->path);
        detectJobFree(e->job);
    }
    b->n = 0;
    b->bytes = 0;
    if (!rc) rc = stageSync(st, err);
    if (!rc && (fwrite(b->out, 1, b->len, stdout) != b->len || fflush(stdout) == EOF))
        rc = errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    return rc;
}

/* A reader that keeps a copy of the first DETECT_PREFIX_MAX bytes. */
typedef struct peekReader {
    lakeReader *in;
    char *buf;
    size_t len;
} peekReader;

static ssize_t peekRead(void *ctx, void *buf, size_t len) {
    peekReader *p = ctx;
    ssize_t n = p->in->read(p->in->ctx, buf, len);
    if (n > 0 && p->len < DETECT_PREFIX_MAX) {
        size_t k = (size_t)n < DETECT_PREFIX_MAX - p->len ? (size_t)n : DETECT_PREFIX_MAX - p->len;
        if (!p->buf && !(p->buf = malloc(DETECT_PREFIX_MAX))) {
            errno = ENOMEM;
            return -1;
        }
        memcpy(p->buf + p->len, buf, k);
        p->len += k;
    }
    return n;
}

/* Put what r reads as one object named name (may be NULL) and print its
 * FILE value (with a batch: at the batch's flush, once durable); with a
 * plan, add its row, with path (may be NULL) in the plan's path column.
 * total is the expected size for the progress bar, -1 when unknown. */
static int putStream(stage *st, const putArgs *a, rowPlan *plan, outBatch *batch, lakeReader *r,
                     const char *name, int64_t total, const char *path, lakeError *err) {
    progress prog;
    progressStart(&prog, a->progress, name ? name : r->what, total);
    int later = batch && batch->detect && !a->content_type;
    peekReader peek = {r, NULL, 0};
    lakeReader pr = {peekRead, &peek, r->what};
    stagePutOptions opt = {.name = name, .content_type = later ? "application/octet-stream" : a->content_type,
                           .expect_size = a->size, .expect_sha256 = a->sha256, .progress = &prog,
                           .part_size = a->part_size, .jobs = a->jobs, .stop = interruptFlag(),
                           .defer_sync = batch != NULL};
    fileValue fv;
    int rc = stagePut(st, later ? &pr : r, &opt, &fv, err);
    progressEnd(&prog);
    if (rc) {
        free(peek.buf);
        return rc;
    }
    if (plan) { /* kept current: a stop, or a stuck archive, may end the process anywhere */
        char note[256];
        plan->stored++;
        unreferencedNote(a->table, plan, note, sizeof note);
        interruptNote("%s", note);
    }
    if (batch) {
        batchEntry *e = &batch->e[batch->n++];
        *e = (batchEntry){.fv = fv, .path = path ? strdup(path) : NULL};
        if (later && !(e->job = detectorSubmit(batch->detect, peek.buf, peek.len)))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", r->what);
        if (path && !e->path && !rc) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", r->what);
        batch->bytes += fv.size;
        if (!rc && (batch->n >= BATCH_OBJECTS || batch->bytes >= BATCH_BYTES))
            rc = batchFlush(st, plan, batch, err);
        return rc;
    }
    char *json = fileValueToJson(&fv);
    if (!json) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", r->what);
    else rc = printLine(json, err);
    if (!rc && plan) rc = addRow(plan, json, path, r->what, err);
    free(json);
    fileValueFree(&fv);
    return rc;
}

/* Open an input ("-" is stdin): the descriptor, or -1 with err set (66 for
 * a missing file or a directory).  A pipe is asked to hold PIPE_SIZE
 * bytes (best effort: the kernel may refuse), so that its writer runs
 * ahead while a chunk is hashed, instead of waiting on every 64 KiB. */
static int openInput(const char *input, lakeError *err) {
    struct stat sb;
    int fd = STDIN_FILENO;
    const char *what = "stdin";
    if (strcmp(input, "-") != 0) {
        fd = open(input, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return errSetErrno(err, errCodeForErrno(errno), errno, "%s", input), -1;
        what = input;
    }
    if (fstat(fd, &sb) < 0) return fd; /* the first read will say why */
    if (S_ISDIR(sb.st_mode)) {
        errSet(err, LAKE_ENOINPUT, "%s: is a directory", what);
        if (fd != STDIN_FILENO) close(fd);
        return -1;
    }
    if (S_ISFIFO(sb.st_mode) && fcntl(fd, F_GETPIPE_SZ) < PIPE_SIZE) (void)fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE);
    return fd;
}

/* A plain put (a file or stdin, no --table, no --archive) is the public
 * library's lake_put_opt: the bytes through interruptRead, the progress
 * bar from its callback, a stop signal passed on (interruptForward). */
typedef struct libSrc {
    int fd;
    progress prog;
    int64_t shown;
} libSrc;

static ssize_t libRead(void *ctx, void *buf, size_t len) { return interruptRead(&((libSrc *)ctx)->fd, buf, len); }

static int libProgress(void *ctx, int64_t done, int64_t total) {
    libSrc *s = ctx;
    (void)total;
    progressAdd(&s->prog, done - s->shown);
    s->shown = done;
    return 0;
}

static void libStop(void *ctx) { lake_interrupt(ctx); }

static int putLib(const putArgs *a, int fd, const char *what, const char *name, int64_t total, lakeError *err) {
    char size[32], part[32], jobs[16];
    const char *opt[13];
    int n = 0;
    opt[n++] = "label", opt[n++] = what;
    if (a->content_type) opt[n++] = "content_type", opt[n++] = a->content_type;
    if (a->size >= 0) snprintf(size, sizeof size, "%lld", a->size), opt[n++] = "size", opt[n++] = size;
    if (a->sha256) opt[n++] = "sha256", opt[n++] = a->sha256;
    if (a->part_size) snprintf(part, sizeof part, "%lld", a->part_size), opt[n++] = "part_size", opt[n++] = part;
    if (a->jobs) snprintf(jobs, sizeof jobs, "%d", a->jobs), opt[n++] = "jobs", opt[n++] = jobs;
    opt[n] = NULL;
    libSrc src = {.fd = fd};
    lake_file *f = NULL;
    lake_error e;
    progressStart(&src.prog, a->progress, name ? name : what, total);
    int rc = lake_put_opt(a->c, libRead, &src, name, total, opt, libProgress, &src, &f, &e);
    progressEnd(&src.prog);
    if (rc) rc = commandFailed(&e, err);
    else rc = printLine(lake_file_json(f), err);
    lake_file_free(f);
    return rc;
}

/* Put one input ("-" is stdin) and print its FILE value; with a plan, add
 * its row. */
static int putOne(stage *st, const putArgs *a, rowPlan *plan, const char *input, lakeError *err) {
    int fd = openInput(input, err);
    if (fd < 0) return err->code;
    const char *what = fd == STDIN_FILENO ? "stdin" : input, *name = a->name;
    if (!name && fd != STDIN_FILENO) {
        const char *slash = strrchr(input, '/');
        name = slash ? slash + 1 : input;
    }
    struct stat sb;
    int64_t total = a->size >= 0                                   ? a->size
                    : fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (int64_t)sb.st_size
                                                                   : -1;
    lakeReader r = {interruptRead, &fd, what};
    int rc = a->c ? putLib(a, fd, what, name, total, err) : putStream(st, a, plan, NULL, &r, name, total, NULL, err);
    if (fd != STDIN_FILENO) close(fd);
    return rc;
}

/* --archive: put every regular entry of one archive ("-" is stdin), named
 * by its safe path, in archive order.  A damaged archive is 65 after the
 * entries before the damage were put. */
static int putArchive(stage *st, const putArgs *a, rowPlan *plan, const char *input, lakeError *err) {
    int fd = openInput(input, err);
    if (fd < 0) return err->code;
    archiveIn *in = NULL;
    archiveEntryInfo e;
    outBatch *batch = calloc(1, sizeof *batch);
    if (!batch) {
        if (fd != STDIN_FILENO) close(fd);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", input);
    }
    int rc = 0;
    /* a local stage's types can wait for the flush: detect them aside */
    if (!a->content_type && stageTypeInValue(st)) rc = detectorStart(&batch->detect, err);
    if (!rc) rc = archiveInOpen(fd, fd == STDIN_FILENO ? "stdin" : input, interruptFlag(), a->max_skipped, &in, err);
    while (!rc && !interruptPending() && !(rc = archiveInNext(in, &e, err)) && e.path) {
        rc = putStream(st, a, plan, batch, &e.reader, e.path, e.size, e.path, err);
        if (rc && archiveInDataError(in, err)) rc = err->code; /* the archive's fault: 65 */
    }
    /* the whole entries before a failure are still made durable and
     * printed; the first error is the one reported */
    lakeError ferr = {0};
    if (batchFlush(st, plan, batch, rc ? &ferr : err) && !rc) rc = err->code;
    detectorStop(batch->detect);
    free(batch->out);
    free(batch);
    archiveInClose(in);
    if (fd != STDIN_FILENO) close(fd);
    return rc;
}

/* --table: pick the FILE column (--column, else the first) and convert
 * every --set value, before any input is read: 64 naming a column that
 * does not exist or is of the wrong type, 65 naming a value that is not
 * of its column's type. */
static int checkColumns(const putArgs *a, const segmentSchema *cols, rowPlan *plan, lakeError *err) {
    plan->ncols = cols->ncols;
    plan->filecol = -1;
    if (a->column) {
        int k = segmentSchemaFind(cols, a->column);
        if (k < 0) return errSet(err, LAKE_EUSAGE, "--column %s: %s has no column '%s'", a->column, a->table, a->column);
        if (cols->cols[k].type != LAKE_TYPE_FILE)
            return errSet(err, LAKE_EUSAGE, "--column %s: %s.%s is %s, not FILE", a->column, a->table,
                          cols->cols[k].name, lakeTypeName(cols->cols[k].type));
        plan->filecol = k;
    }
    for (int i = 0; plan->filecol < 0 && i < cols->ncols; i++)
        if (cols->cols[i].type == LAKE_TYPE_FILE) plan->filecol = i;
    if (plan->filecol < 0) return errSet(err, LAKE_EUSAGE, "%s has no FILE column", a->table);
    if (!(plan->vals = calloc((size_t)plan->ncols, sizeof *plan->vals)))
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", a->table);
    for (int i = 0; i < a->nsets; i++) {
        const char *set = a->sets[i], *eq = strchr(set, '=');
        char col[NAME_MAX_LEN + 1];
        if (!eq || eq == set) return errSet(err, LAKE_EUSAGE, "--set %s: not COL=VALUE", set);
        snprintf(col, sizeof col, "%.*s", (int)(eq - set), set);
        int k = (size_t)(eq - set) <= NAME_MAX_LEN ? segmentSchemaFind(cols, col) : -1;
        if (k < 0) return errSet(err, LAKE_EUSAGE, "--set %s: %s has no column '%.*s'", set, a->table, (int)(eq - set), set);
        if (k == plan->filecol)
            return errSet(err, LAKE_EUSAGE, "--set %s: %s.%s is the FILE column that receives each object",
                          set, a->table, cols->cols[k].name);
        plan->vals[k] = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = eq + 1, .n = strlen(eq + 1)};
        if (segmentWriterCheckValue(plan->w, k, &plan->vals[k], err)) {
            errPrefix(err, "--set %s", set);
            return err->code;
        }
    }
    return 0;
}

/* --table: resolve the table, check --column and --set against its
 * schema, and open the writer, all before any object is put. */
static int planRows(const putArgs *a, stage *st, catalogCache *cache, rowPlan *plan, cJSON **reg,
                    lakeError *err) {
    char *ns, *name, *schema = NULL;
    if (nameSplitTable(a->table, &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    int rc = cacheResolve(cache, ns, name, -1, reg, err);
    if (!rc) rc = cacheMayRun(cache, "append", ns, name, err); /* refused before anything is stored */
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(*reg, "id");
    if (!rc && !(schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(*reg, "schema"))))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", a->table);
    segmentWriterOptions wopt = {.hex_blobs = 1}; /* --set gives text */
    if (!rc) rc = segmentWriterOpen(st, id->valuestring, schema, &wopt, &plan->w, err);
    const segmentSchema *cols = rc ? NULL : segmentWriterSchema(plan->w);
    if (!rc) rc = checkColumns(a, cols, plan, err);
    /* --archive: a TEXT column "path" that --set leaves alone gets each entry's path */
    int k = rc || !a->archive ? -1 : segmentSchemaFind(cols, "path");
    if (k >= 0 && cols->cols[k].type == LAKE_TYPE_TEXT && plan->vals[k].kind == LAKE_VALUE_NULL)
        plan->pathcol = k;
    cJSON_free(schema);
    free(ns);
    free(name);
    return rc;
}

int main(int argc, char **argv) {
    logInit(argv[0]);
    putArgs a = {.size = -1, .progress = PROGRESS_AUTO, .max_skipped = -1};
    const char *arg;
    int c, first;
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) {
        switch (c) {
        case 'q': logSetQuiet(1); a.progress = PROGRESS_OFF; break;
        case OPT_NAME: a.name = arg; break;
        case OPT_CTYPE: a.content_type = arg; break;
        case OPT_SIZE: a.size = parseSize(arg); break;
        case OPT_SHA:
            if (!sha256IsHex(arg)) cliUsageError(&spec, "--sha256: '%s' is not 64 hex digits", arg);
            a.sha256 = arg;
            break;
        case OPT_PART_SIZE: a.part_size = parsePartSize(arg); break;
        case OPT_JOBS: a.jobs = parseJobs(arg); break;
        case OPT_STAGE: a.stage = arg; break;
        case OPT_PROGRESS: if (!logQuiet()) a.progress = PROGRESS_ON; break;
        case OPT_NO_PROGRESS: a.progress = PROGRESS_OFF; break;
        case OPT_TABLE: a.table = arg; break;
        case OPT_COLUMN: a.column = arg; break;
        case OPT_ARCHIVE: a.archive = 1; break;
        case OPT_MAX_SKIPPED: a.max_skipped = parseMaxSkipped(arg); break;
        case OPT_SET:
            if (a.nsets == MAX_SETS) cliUsageError(&spec, "--set at most %d times", MAX_SETS);
            a.sets[a.nsets++] = arg;
            break;
        }
    }
    if (!a.table && (a.column || a.nsets)) cliUsageError(&spec, "--column and --set go with --table");
    if (!a.archive && a.max_skipped >= 0) cliUsageError(&spec, "--max-skipped goes with --archive");
    if (a.max_skipped < 0) a.max_skipped = MAX_SKIPPED_DEFAULT;
    int ninputs = argc - first;
    if (a.archive && (a.name || a.size >= 0 || a.sha256))
        cliUsageError(&spec, "--name, --size and --sha256 describe one input, not the entries of an archive");
    if (ninputs > 1 && (a.name || a.size >= 0 || a.sha256))
        cliUsageError(&spec, "--name, --size and --sha256 describe one input, not %d", ninputs);
    if (a.content_type && !*a.content_type) cliUsageError(&spec, "--content-type is empty");

    lakeError err = {0};
    lakeConfig cfg = {0};
    configOverride ov[] = {{"stage", a.stage}};
    stage *st = NULL;
    const char *lopt[3] = {a.stage ? "stage" : NULL, a.stage, NULL};
    lake_error e;
    int rc = 0;
    if (!a.table && !a.archive) { /* a plain put: the public library's */
        if (lake_open(&a.c, lopt, &e)) rc = commandFailed(&e, &err);
        else lake_set_warn(a.c, logWarnLine, NULL);
    } else {
        rc = configLoad(&cfg, ov, 1, &err);
    }
    rowPlan plan = {.pathcol = -1}, *rows = a.table ? &plan : NULL;
    catalogCache *cache = NULL;
    catalogSource *src = NULL;
    cJSON *reg = NULL, *segs = NULL, *files = NULL;
    cacheOptions copt = {cfg.catalog_ttl, 0, 0};
    /* the catalog only when rows are added (or, below, for a remote stage) */
    if (!rc && rows && !(rc = sourceOpen(&cfg, &src, &err))) rc = cacheOpen(&cfg, src, &copt, &cache, &err);
    /* remote mode: the stage lake-metasrv advertises, unless LAKE_STAGE says */
    if (!rc && !a.c) rc = catalogStageOpen(&cfg, cache, a.table, &st, &err);
    if (!rc && rows) rc = planRows(&a, st, cache, &plan, &reg, &err);
    if (!rc) interruptCatch(1);
    if (!rc && a.c) interruptForward(libStop, a.c);
    int (*put)(stage *, const putArgs *, rowPlan *, const char *, lakeError *) = a.archive ? putArchive : putOne;
    for (int i = first; !rc && !interruptPending() && i < argc; i++) rc = put(st, &a, rows, argv[i], &err);
    if (!rc && !interruptPending() && ninputs == 0) rc = put(st, &a, rows, "-", &err);
    /* nothing to append is not an error (as for lake-query --import of no
     * rows): no version is made */
    if (!rc && !interruptPending() && rows && plan.stored == 0)
        logWarn("%s: no files: nothing appended", a.table);
    /* the rows of every object, in one append: all or none */
    else if (!rc && !interruptPending() && rows) {
        int64_t version;
        char *ns, *name;
        nameSplitTable(a.table, &ns, &name, NULL);
        rc = segmentWriterFinish(plan.w, &segs, &files, &err);
        if (!rc)
            rc = cacheAppendCommuting(cache, ns, name,
                                      (int64_t)cJSON_GetObjectItemCaseSensitive(reg, "version")->valuedouble, segs,
                                      files, &version, &err);
        if (!rc && plan.stored > 0) /* a signal from here on: the rows are in */
            interruptNote("%d row%s appended to %s", plan.stored, plan.stored == 1 ? "" : "s", a.table);
        free(ns);
        free(name);
    }
    if (rc && rows && plan.stored > 0) { /* say what became of the objects already put (a signal: the note, kept current) */
        char note[256];
        unreferencedNote(a.table, &plan, note, sizeof note);
        size_t n = strlen(err.msg);
        snprintf(err.msg + n, sizeof err.msg - n, "; %s", note);
    }
    if (rc && !interruptPending()) logError(&err);
    if (cache) compactAfterAppends(&cfg, cache, st, NULL, NULL); /* warns, never fails */
    segmentWriterFree(plan.w);
    free(plan.vals);
    cJSON_Delete(reg);
    cJSON_Delete(segs);
    cJSON_Delete(files);
    cacheClose(cache);
    sourceClose(src);
    stageClose(st);
    configFree(&cfg);
    interruptForward(NULL, NULL);
    lake_close(a.c);
    interruptExit(); /* cleaned up: now die of the signal, as the caller expects */
    return rc;
}
