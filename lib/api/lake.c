/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake.c - liblake: the public C API of include/lake.h over the library.
 *
 * Each call does what the command does with the same internals: a client
 * is lake-put's and lake-get's configuration and stage (configLoad,
 * catalogStageOpen), a put is stagePut, a reader is stageGet.  What the
 * library would print (logWarn) goes to the client's warning callback or
 * nowhere (logSinkSet, per thread, for the duration of a call), and no
 * signal handler is installed: lake_interrupt sets the flag a put polls,
 * which is what lake-put's SIGINT handler sets.
 *
 * The catalog calls are lake-catalog's list and resolve over the same
 * snapshot cache (cacheOpen with lake.conf's TTL), opened on first use.
 *
 * lake_query compiles and steps on a query session (query/session.h),
 * lake-query's own connection and compiler, opened on first use with
 * lake_open's options; each statement sees the catalog as a new
 * lake-query process would (as the shell's inputs do), and the session's
 * progress handler stops a statement when lake_interrupt has been
 * called; the same flag is the query context's stop (queryStopped), so
 * that planning (a split aggregate's reads) and a write's uploads and
 * commit stop too, and lake_query fails "interrupted" when it was set
 * while the statement was planned.  A statement's rows hold the client,
 * as a reader does.  The threads the library starts (core/thread.h)
 * block every signal and warn through the sink of their starter.
 *
 * lake_catalog_create, _drop, _create_namespace, _alter and _rollback
 * are lake-catalog's: the source changed, then the cache refreshed
 * (cacheAfterChange) so the change is visible at once on this host.
 * _history is sourceHistoryAll, _expire sourceExpire then
 * cacheAfterExpire, _compact compactRun; the client's stop flag is the
 * compaction's stop (compactOptions), as it is the query session's,
 * whose close compacts after appends.  lake-catalog makes these
 * changes, and asks for history, through these very calls (the _v2
 * forms, which also return what it prints, and LIBLAKE_IF_NOT_EXISTS
 * for --if-not-exists), on a client of lake_open_v2 whose keys
 * catalog_offline and catalog_strict are its --offline and --strict.
 * lake_import is lake-query --import's querySessionImport on the client's
 * query session, reading the descriptor as a put does.
 *
 * A reader pulls what stageGet pushes: stageGet runs on a thread of the
 * reader's own (all signals blocked, a stage handle of its own from
 * stageDup) and writes into a bounded ring the reader drains; its result,
 * a digest mismatch included, is the reader's at the end.  A client is
 * counted: each reader holds it, so lake_close may come before the
 * readers are closed.
 */
#include "lake.h"
#include "api/command.h"
#include "api/handles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "catalog/cache.h"
#include "catalog/names.h"
#include "catalog/source.h"
#include "catalog/vend.h"
#include <cjson/cJSON.h>
#include "core/config.h"
#include "core/crypto.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/realtext.h"
#include "core/sha256.h"
#include "core/thread.h"
#include "query/compact.h"
#include "query/session.h"
#include "stage/stage.h"

/* lake_open's options: key, value pairs, at most this many. */
#define OPTIONS_MAX 32
/* lake_catalog_expire's older_than: at most about 100 years, as
 * lake-catalog expire --older-than */
#define EXPIRE_MAX_S (36500LL * 86400)
/* A reader's ring: what its thread may read ahead of the program. */
#define RING (2 * 1024 * 1024)

struct lake_client {
    pthread_mutex_t mu; /* refs */
    int refs;
    lakeConfig cfg;
    stage *st;
    catalogSource *src; /* the catalog, opened on first use */
    catalogCache *cache;
    logSink sink; /* warnings; fn NULL: dropped */
    int offline, strict; /* lake_open's catalog_offline and catalog_strict */
    int64_t max_age;     /* catalog_max_age, or -1: catalog_ttl */
    volatile sig_atomic_t stop;
    int wake; /* an eventfd lake_interrupt writes: a read of a pipe waits on it too */
    /* lake_open's options, kept for the query session */
    char *optText[2 * OPTIONS_MAX];
    configOverride ov[OPTIONS_MAX];
    int nov;
    querySession *qs;  /* opened on first lake_query */
    lake_rows *active; /* the statement whose rows are open (not done) */
};

/* A statement's state. */
enum { ROWS_READY, ROWS_ROW, ROWS_DONE, ROWS_FAILED };

struct lake_rows {
    lake_client *c;
    sqlite3_stmt *st;
    char *sql; /* its text, compiled again after a lost race */
    int state, attempt, cols;
    int *isFile;      /* per column: declared FILE */
    int *types;       /* per column: the current row's LIBLAKE_ type */
    lake_file **files; /* per column: the current row's FILE value */
    char **own;       /* per column: text made for a BLOB */
    char *num;        /* per column: REAL_TEXT_MAX bytes for a number's text */
    lakeError err;    /* the failure, once failed */
    const char *code; /* its code when not the status's */
    logSink sink;     /* the client's when compiled: its threads' (lake_set_warn races none) */
};

struct lake_file {
    fileValue fv;
    char *json;
};

struct lake_reader {
    lake_client *c;
    stage *st;
    stageReader *pull; /* a stage the program pulls from (local): no thread, no ring */
    fileValue fv;
    int verify;
    logSink sink;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *buf;
    size_t head, len;
    int done, closed, rc;
    int want_data, want_room; /* a side waits: the other wakes it (only then) */
    lakeError err;
};

/* --- errors ---------------------------------------------------------------- */

static const char *codeOf(int status) {
    switch (status) {
    case LAKE_OK: return "ok";
    case LAKE_EUSAGE: return "usage";
    case LAKE_EDATA: return "data";
    case LAKE_ENOINPUT: return "no_input";
    case LAKE_EEXPIRED: return "expired";
    case LAKE_EUNAVAIL: return "unavailable";
    case LAKE_ETEMP: return "temporary";
    case LAKE_EPERM: return "permission";
    case LAKE_ECONFIG: return "config";
    default: return "failed";
    }
}

/* The messages are the commands' (no secret in them); a signed URL's
 * signature, credential or session token, should one be quoted, is
 * replaced all the same. */
static void redact(char *msg) {
    static const char *const keys[] = {"X-Amz-Signature=", "X-Amz-Credential=", "X-Amz-Security-Token="};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *p = msg;
        while ((p = strstr(p, keys[i]))) {
            p += strlen(keys[i]);
            size_t n = strcspn(p, "& \t\"'");
            if (n <= 8) continue;
            memcpy(p, "REDACTED", 8);
            memmove(p + 8, p + n, strlen(p + n) + 1);
        }
    }
}

static void ok(lake_error *e) {
    if (!e) return;
    e->exit_status = 0;
    e->code = "ok";
    e->message[0] = '\0';
}

static int fail(lake_error *e, const lakeError *err, const char *code) {
    int status = err->code ? (int)err->code : LAKE_EFAIL;
    if (!e) return status;
    e->exit_status = status;
    e->code = code ? code : codeOf(status);
    snprintf(e->message, sizeof e->message, "%s", err->msg[0] ? err->msg : "failed");
    redact(e->message);
    return status;
}

/* The end of a call: 0 and e "ok", or err's status and e filled, its
 * code code (NULL: the status's). */
static int finish(lake_error *e, int rc, const lakeError *err, const char *code) {
    if (rc) return fail(e, err, code);
    ok(e);
    return 0;
}

int commandFailed(const lake_error *e, lakeError *err) {
    return errSet(err, e->exit_status ? e->exit_status : LAKE_EFAIL, "%s", e->message);
}

/* NULL handles and other misuse: 64, as a command's bad argument. */
__attribute__((format(printf, 2, 3))) static int misuse(lake_error *e, const char *fmt, ...) {
    lakeError err = {0};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.msg, sizeof err.msg, fmt, ap);
    va_end(ap);
    err.code = LAKE_EUSAGE;
    return fail(e, &err, NULL);
}

/* --- clients --------------------------------------------------------------- */

/* Why c cannot be used ("no client", "a closed client"), or NULL when it
 * can: a client lake_close has closed is no longer live (handles.h),
 * though readers or rows may still hold its memory. */
static const char *noClient(const lake_client *c) {
    if (!c) return "no client";
    return handleLive(c, HANDLE_CLIENT) ? NULL : "a closed client";
}

/* The same of rows and of a reader. */
static const char *noRows(const lake_rows *q) {
    if (!q) return "no rows";
    return handleLive(q, HANDLE_ROWS) ? NULL : "closed rows";
}

static const char *noReader(const lake_reader *r) {
    if (!r) return "no reader";
    return handleLive(r, HANDLE_READER) ? NULL : "a closed reader";
}

const char *lake_version(void) { return LAKE_VERSION; }

static void clientUnref(lake_client *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    int left = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (left > 0) return;
    if (c->qs) {
        const logSink *old = logSinkSet(&c->sink); /* compaction's warnings */
        querySessionClose(c->qs);
        logSinkSet(old);
        free(c->qs);
    }
    for (int i = 0; i < 2 * c->nov; i++) free(c->optText[i]);
    cacheClose(c->cache);
    sourceClose(c->src);
    stageClose(c->st);
    configFree(&c->cfg);
    if (c->wake >= 0) close(c->wake);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* The run-time library every client needs, bound now: the commands exit 1
 * when one is missing at its first use, and the library never exits, so
 * a client that opened has libcrypto.  libcurl, which only a remote lake
 * or an S3 stage needs, is bound by the first of them to open (httpOpen,
 * s3ClientInit), and libmagic by the first put that detects a content
 * type (contentTypeDetect), which fail as this does. */
static int librariesReady(lakeError *err) {
    const char *why = lakeCryptoReady();
    if (why) errSet(err, LAKE_EFAIL, "%s", why);
    return why ? -1 : 0;
}

/* c's stage, opened on first need: a remote lake's, unless the
 * configuration names one, is asked of lake-metasrv by the first call
 * that puts, reads or signs, so that a program that only queries or
 * reads the catalog pays no request for it. */
static int clientStage(lake_client *c, lakeError *err) {
    pthread_mutex_lock(&c->mu);
    int rc = c->st ? 0 : catalogStageOpen(&c->cfg, NULL, NULL, &c->st, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* An option's "0" or "1" into *flag: 0, or -1 for any other text. */
static int parseFlag(const char *value, int *flag) {
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) return -1;
    *flag = value[0] == '1';
    return 0;
}

/* lake_open's own keys, beyond lake.conf(5)'s, into c: catalog_offline
 * and catalog_strict "0" or "1", catalog_max_age a whole number of
 * seconds.  0 when key is one of them, 1 when it is not, -1 for a bad
 * value. */
static int clientKey(const char *key, const char *value, lake_client *c) {
    if (strcmp(key, "catalog_max_age") == 0) {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end || v < 0) return -1;
        c->max_age = v;
        return 0;
    }
    int *flag = strcmp(key, "catalog_offline") == 0 ? &c->offline : strcmp(key, "catalog_strict") == 0 ? &c->strict : NULL;
    if (!flag) return 1;
    return parseFlag(value, flag);
}

int lake_open(lake_client **out, const char *const *options, lake_error *e) {
    return lake_open_v2(out, options, NULL, NULL, e);
}

int lake_open_v2(lake_client **out, const char *const *options, lake_warn_fn warn, void *ctx, lake_error *e) {
    configOverride ov[OPTIONS_MAX];
    lake_client own = {.max_age = -1}; /* its keys, until there is a client */
    int n = 0;
    if (!out) return misuse(e, "lake_open: out is NULL");
    *out = NULL;
    for (int i = 0; options && options[i]; i += 2) {
        if (!options[i + 1]) return misuse(e, "lake_open: option '%s' has no value", options[i]);
        int k = clientKey(options[i], options[i + 1], &own);
        if (k < 0)
            return misuse(e, "lake_open: %s: '%s' is %s", options[i], options[i + 1],
                          strcmp(options[i], "catalog_max_age") == 0 ? "not a number of seconds" : "neither 0 nor 1");
        if (k == 0) continue;
        if (!configKnownKey(options[i]))
            return misuse(e, "lake_open: unknown option '%s' (the keys are lake.conf(5)'s)", options[i]);
        if (n == OPTIONS_MAX) return misuse(e, "lake_open: more than %d options", OPTIONS_MAX);
        ov[n++] = (configOverride){options[i], options[i + 1]};
    }
    lake_client *c = calloc(1, sizeof *c);
    lakeError err = {0};
    if (!c) {
        errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_open");
        return fail(e, &err, NULL);
    }
    pthread_mutex_init(&c->mu, NULL);
    c->refs = 1;
    c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->wake < 0) {
        errSetErrno(&err, LAKE_EFAIL, errno, "lake_open: eventfd");
        clientUnref(c);
        return fail(e, &err, NULL);
    }
    c->sink = (logSink){warn, ctx}; /* lake_open_v2's: the configuration's warnings too */
    c->offline = own.offline;
    c->strict = own.strict;
    c->max_age = own.max_age;
    for (int i = 0; i < n; i++) {
        c->optText[2 * i] = strdup(ov[i].key);
        c->optText[2 * i + 1] = strdup(ov[i].value);
        c->ov[i] = (configOverride){c->optText[2 * i], c->optText[2 * i + 1]};
        c->nov = i + 1;
        if (!c->optText[2 * i] || !c->optText[2 * i + 1]) {
            clientUnref(c);
            errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_open");
            return fail(e, &err, NULL);
        }
    }
    const logSink *old = logSinkSet(&c->sink);
    int rc = configLoad(&c->cfg, ov, n, &err);
    if (!rc) rc = librariesReady(&err);
    /* a stage the configuration names is opened (and checked) now; the
     * one a lake-metasrv advertises when first needed (clientStage) */
    if (!rc && (configIsLocal(&c->cfg) || c->cfg.stage)) rc = catalogStageOpen(&c->cfg, NULL, NULL, &c->st, &err);
    logSinkSet(old);
    if (!rc && handleAdd(c, HANDLE_CLIENT)) rc = errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_open");
    if (rc) {
        clientUnref(c);
        return fail(e, &err, NULL);
    }
    *out = c;
    ok(e);
    return 0;
}

/* The program's reference goes once: a second close finds c no longer
 * live and does nothing. */
void lake_close(lake_client *c) {
    if (c && handleDrop(c, HANDLE_CLIENT)) clientUnref(c);
}

int lake_set_warn(lake_client *c, lake_warn_fn fn, void *ctx) {
    if (noClient(c)) return misuse(NULL, "lake_set_warn: %s", noClient(c));
    c->sink = (logSink){fn, ctx};
    return 0;
}

void lake_interrupt(lake_client *c) {
    if (!c) return;
    c->stop = 1;
    /* wakes a read waiting on a pipe (readSome); write(2) is async-signal-safe */
    uint64_t one = 1;
    int saved = errno;
    if (write(c->wake, &one, sizeof one) < 0) {} /* full (EAGAIN): already awake */
    errno = saved;
}

/* Forget the wake-ups lake_interrupt wrote. */
static void wakeDrain(lake_client *c) {
    uint64_t n;
    if (read(c->wake, &n, sizeof n) < 0) {} /* nothing to drain (EAGAIN) */
}

/* The stop asked for has been used up (by the call it stopped). */
static void stopTaken(lake_client *c) {
    c->stop = 0;
    wakeDrain(c);
}

const char *lake_stage_url(const lake_client *c) {
    if (noClient(c)) return NULL;
    lake_client *m = (lake_client *)c; /* only its stage, opened once */
    lakeError err = {0};
    const logSink *old = logSinkSet(&m->sink);
    int rc = clientStage(m, &err);
    logSinkSet(old);
    return rc ? NULL : stageUrl(c->st);
}

/* --- FILE values ----------------------------------------------------------- */

/* A lake_file taking over fv (emptied either way). */
static int fileWrap(fileValue *fv, lake_file **out, lakeError *err) {
    lake_file *f = calloc(1, sizeof *f);
    /* a bare location (lake_file_from_json's "file:///..."): itself, the
     * text every call that takes a FILE value takes */
    if (f) f->json = fv->sha256[0] ? fileValueToJson(fv) : strdup(fv->location);
    if (!f || !f->json) {
        free(f);
        fileValueFree(fv);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "FILE value");
    }
    f->fv = *fv;
    memset(fv, 0, sizeof *fv);
    *out = f;
    return 0;
}

/* A REF as lake-get reads it; a null FILE has nothing to name: 65. */
static int refRead(const char *text, fileValue *fv, lakeError *err) {
    int rc = refParse(text, fv, err);
    if (!rc && !fv->location) rc = errSet(err, LAKE_EDATA, "a null FILE value names no object");
    if (rc) fileValueFree(fv);
    return rc;
}

int lake_file_from_json(const char *json, lake_file **out, lake_error *e) {
    if (!out) return misuse(e, "lake_file_from_json: out is NULL");
    *out = NULL;
    if (!json) return misuse(e, "lake_file_from_json: no JSON text");
    fileValue fv;
    lakeError err = {0};
    int rc = refRead(json, &fv, &err);
    if (!rc) rc = fileWrap(&fv, out, &err);
    return finish(e, rc, &err, NULL);
}

const char *lake_file_json(const lake_file *f) { return f ? f->json : NULL; }
const char *lake_file_location(const lake_file *f) { return f ? f->fv.location : NULL; }
int64_t lake_file_size(const lake_file *f) { return f ? f->fv.size : -1; }
const char *lake_file_sha256(const lake_file *f) { return f ? f->fv.sha256 : NULL; }
const char *lake_file_name(const lake_file *f) { return f ? f->fv.name : NULL; }
const char *lake_file_content_type(const lake_file *f) { return f ? f->fv.content_type : NULL; }

void lake_file_free(lake_file *f) {
    if (!f) return;
    fileValueFree(&f->fv);
    free(f->json);
    free(f);
}

/* --- put ------------------------------------------------------------------- */

/* The source of a put: a descriptor or the program's callback, read until
 * len bytes or the end (as fdRead), with progress and the stop flag
 * looked at between reads. */
typedef struct putSrc {
    lake_client *c;
    int fd;
    lake_read_fn read;
    void *ctx;
    lake_progress_fn progress;
    void *pctx;
    int64_t done, total;
} putSrc;

static ssize_t readSome(putSrc *s, void *buf, size_t len) {
    ssize_t n;
    if (s->read) {
        n = s->read(s->ctx, buf, len);
        if (n > (ssize_t)len) {
            errno = EINVAL; /* a callback that says it read more than it was given room for */
            return -1;
        }
        return n;
    }
    /* wait on the descriptor and on lake_interrupt's eventfd together, so
     * that a stalled pipe gives up at once; poll(2) says a regular file
     * is always ready, and a descriptor it refuses is read as it is */
    for (;;) {
        if (s->c->stop) {
            errno = EINTR;
            return -1;
        }
        struct pollfd p[2] = {{s->fd, POLLIN, 0}, {s->c->wake, POLLIN, 0}};
        int k = poll(p, 2, -1);
        if (k < 0 && errno == EINTR) continue;
        if (k > 0 && (p[0].revents & POLLNVAL)) {
            errno = EBADF;
            return -1;
        }
        if (k > 0 && !p[0].revents) { /* only the wake-up: a stale one is drained */
            wakeDrain(s->c); /* a stop meanwhile is seen above */
            continue;
        }
        do n = read(s->fd, buf, len);
        while (n < 0 && errno == EINTR && !s->c->stop);
        return n;
    }
}

static ssize_t srcRead(void *ctx, void *buf, size_t len) {
    putSrc *s = ctx;
    size_t got = 0;
    while (got < len) {
        if (s->c->stop) {
            errno = EINTR;
            return -1;
        }
        ssize_t n = readSome(s, (char *)buf + got, len - got);
        if (n < 0) return -1;
        if (n == 0) break;
        got += (size_t)n;
        s->done += n;
        if (s->progress && s->progress(s->pctx, s->done, s->total)) {
            s->c->stop = 1;
            errno = EINTR;
            return -1;
        }
    }
    return (ssize_t)got;
}

/* A value the commands' parser refused ("--jobs: '0' is not ..."), said
 * of the function's option key instead: "fn: jobs: '0' is not ...". */
static int optionFailed(lakeError *err, const char *fn, const char *key) {
    const char *why = strstr(err->msg, ": ");
    char rest[sizeof err->msg];
    snprintf(rest, sizeof rest, "%s", why ? why + 2 : err->msg);
    return errSet(err, LAKE_EUSAGE, "%s: %s: %s", fn, key, rest);
}

/* lake_put_opt's options into opt, checked as lake-put checks its
 * options; 64 with the key named otherwise. */
static int putOptions(const char *const *options, stagePutOptions *opt, const char **what, lakeError *err) {
    for (int i = 0; options && options[i]; i += 2) {
        const char *k = options[i], *v = options[i + 1];
        int rc = 0;
        if (!v) return errSet(err, LAKE_EUSAGE, "lake_put_opt: option '%s' has no value", k);
        if (strcmp(k, "label") == 0) {
            *what = v;
        } else if (strcmp(k, "content_type") == 0) {
            if (!*v) return errSet(err, LAKE_EUSAGE, "lake_put_opt: content_type is empty");
            opt->content_type = v;
        } else if (strcmp(k, "size") == 0) {
            int64_t n;
            if (!(rc = stageParseSize(v, &n, err))) opt->expect_size = n;
        } else if (strcmp(k, "sha256") == 0) {
            if (!sha256IsHex(v)) return errSet(err, LAKE_EUSAGE, "lake_put_opt: sha256: '%s' is not 64 hex digits", v);
            opt->expect_sha256 = v;
        } else if (strcmp(k, "part_size") == 0) {
            rc = stageParsePartSize(v, &opt->part_size, err);
        } else if (strcmp(k, "jobs") == 0) {
            rc = stageParseJobs(v, &opt->jobs, err);
        } else {
            return errSet(err, LAKE_EUSAGE, "lake_put_opt: unknown option '%s'", k);
        }
        if (rc) return optionFailed(err, "lake_put_opt", k);
    }
    return 0;
}

static int put(lake_client *c, putSrc *src, const char *name, const char *const *options, lake_file **out,
               lake_error *e) {
    if (!out) return misuse(e, "lake_put: out is NULL");
    *out = NULL;
    if (noClient(c)) return misuse(e, "lake_put: %s", noClient(c));
    src->c = c;
    lakeError err = {0};
    const char *what = name ? name : src->read ? "input" : "descriptor";
    stagePutOptions opt = {.name = name, .expect_size = -1, .stop = &c->stop};
    int rc = putOptions(options, &opt, &what, &err);
    const logSink *old = logSinkSet(&c->sink);
    lakeReader r = {srcRead, src, what};
    fileValue fv;
    if (!rc) rc = clientStage(c, &err);
    if (!rc) rc = stagePut(c->st, &r, &opt, &fv, &err);
    const char *code = NULL;
    if (rc && c->stop) { /* the stop asked for, not the read it broke */
        stopTaken(c);
        errSet(&err, LAKE_EFAIL, "%s: interrupted", what);
        code = "interrupted";
    }
    if (!rc) rc = fileWrap(&fv, out, &err);
    logSinkSet(old);
    return finish(e, rc, &err, code);
}

/* 0 when fd is open for reading; else 64's message in e, as a negative
 * descriptor's. */
static int readableFd(const char *what, int fd, lake_error *e) {
    int fl = fd < 0 ? -1 : fcntl(fd, F_GETFL);
    if (fl < 0) return misuse(e, "%s: descriptor %d is not open", what, fd);
    if ((fl & O_ACCMODE) == O_WRONLY) return misuse(e, "%s: descriptor %d is not open for reading", what, fd);
    return 0;
}

int lake_put_fd(lake_client *c, int fd, const char *name, lake_file **out, lake_error *e) {
    int bad = readableFd("lake_put_fd", fd, e);
    if (bad) {
        if (out) *out = NULL;
        return bad;
    }
    putSrc src = {.fd = fd, .total = -1};
    return put(c, &src, name, NULL, out, e);
}

int lake_put_cb(lake_client *c, lake_read_fn read, void *read_ctx, const char *name, int64_t total,
                lake_progress_fn progress, void *progress_ctx, lake_file **out, lake_error *e) {
    return lake_put_opt(c, read, read_ctx, name, total, NULL, progress, progress_ctx, out, e);
}

int lake_put_opt(lake_client *c, lake_read_fn read, void *read_ctx, const char *name, int64_t total,
                 const char *const *options, lake_progress_fn progress, void *progress_ctx, lake_file **out,
                 lake_error *e) {
    if (!read) {
        if (out) *out = NULL;
        return misuse(e, "lake_put_cb: no read function");
    }
    putSrc src = {.fd = -1, .read = read, .ctx = read_ctx, .progress = progress, .pctx = progress_ctx,
                  .total = total < 0 ? -1 : total};
    return put(c, &src, name, options, out, e);
}

int lake_presign(lake_client *c, const char *file_json, int64_t seconds, char **url, lake_error *e) {
    if (!url) return misuse(e, "lake_presign: url is NULL");
    *url = NULL;
    if (noClient(c)) return misuse(e, "lake_presign: %s", noClient(c));
    if (!file_json) return misuse(e, "lake_presign: no FILE value");
    if (seconds < 1 || seconds > STAGE_PRESIGN_MAX)
        return misuse(e, "lake_presign: %lld seconds is not 1..%d", (long long)seconds, STAGE_PRESIGN_MAX);
    fileValue fv;
    lakeError err = {0};
    char *signed_url = NULL;
    const logSink *old = logSinkSet(&c->sink);
    int rc = refRead(file_json, &fv, &err);
    if (!rc && (rc = clientStage(c, &err))) fileValueFree(&fv);
    if (!rc) {
        rc = stagePresignGet(c->st, fv.location, seconds, &signed_url, &err);
        fileValueFree(&fv);
    }
    logSinkSet(old);
    if (rc) return fail(e, &err, NULL);
    *url = signed_url;
    ok(e);
    return 0;
}

/* --- the catalog ------------------------------------------------------------ */

void lake_free(void *p) { free(p); }

/* The client's catalog cache, opened on first use, as lake-catalog's. */
static int catalog(lake_client *c, lakeError *err) {
    /* each call answers as a new lake-catalog process would: the cache's
     * files read again (another process's change since), the source
     * asked as they say (catalog_ttl) */
    if (c->cache) {
        cacheForget(c->cache);
        return 0;
    }
    cacheOptions copt = {c->max_age >= 0 ? c->max_age : c->cfg.catalog_ttl, c->offline, c->strict};
    int rc = c->src ? 0 : sourceOpen(&c->cfg, &c->src, err);
    if (!rc) rc = cacheOpen(&c->cfg, c->src, &copt, &c->cache, err);
    return rc;
}

/* *out: j's one-line text in memory lake_free frees. */
static int jsonOut(const cJSON *j, char **out, lakeError *err) {
    char *text = cJSON_PrintUnformatted(j);
    *out = text ? strdup(text) : NULL;
    cJSON_free(text);
    return *out ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "output");
}

/* The tables of e[0..n), of namespace ns when not NULL, as
 * lake-catalog --json list prints them. */
static int listJson(const cacheEntry *e, size_t n, const char *ns, char **out, lakeError *err) {
    cJSON *arr = cJSON_CreateArray();
    int bad = !arr;
    for (size_t i = 0; !bad && i < n; i++) {
        if (!e[i].name || (ns && strcmp(e[i].ns, ns) != 0)) continue;
        cJSON *o = cJSON_CreateObject();
        bad = !o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddStringToObject(o, "namespace", e[i].ns) ||
              !cJSON_AddStringToObject(o, "name", e[i].name);
    }
    int rc = bad ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "output") : jsonOut(arr, out, err);
    cJSON_Delete(arr);
    return rc;
}

int lake_catalog_list(lake_client *c, const char *ns, char **json, lake_error *e) {
    if (!json) return misuse(e, "lake_catalog_list: json is NULL");
    *json = NULL;
    if (noClient(c)) return misuse(e, "lake_catalog_list: %s", noClient(c));
    if (ns && !nameIsValid(ns)) return misuse(e, "%s: not a valid namespace name", ns);
    const cacheEntry *ents;
    size_t n;
    lakeError err = {0};
    const logSink *old = logSinkSet(&c->sink);
    int rc = catalog(c, &err);
    if (!rc) rc = cacheListing(c->cache, &ents, &n, &err);
    /* created elsewhere since? ask once, as lake-catalog list does */
    if (!rc && ns && !cacheHasNamespace(c->cache, ns) &&
        !(rc = cacheRefresh(c->cache, 0, &err)))
        rc = cacheListing(c->cache, &ents, &n, &err);
    if (!rc && ns && !cacheHasNamespace(c->cache, ns)) rc = errSet(&err, LAKE_ENOINPUT, "%s: no such namespace", ns);
    if (!rc) rc = listJson(ents, n, ns, json, &err);
    logSinkSet(old);
    return finish(e, rc, &err, NULL);
}

int lake_resolve(lake_client *c, const char *table, int64_t version, char **json, lake_error *e) {
    if (!json) return misuse(e, "lake_resolve: json is NULL");
    *json = NULL;
    if (noClient(c)) return misuse(e, "lake_resolve: %s", noClient(c));
    if (!table) return misuse(e, "lake_resolve: no table");
    char *ns = NULL, *name = NULL;
    cJSON *reg = NULL;
    lakeError err = {0};
    if (nameSplitTable(table, &ns, &name, &err)) {
        err.code = LAKE_EUSAGE;
        return fail(e, &err, NULL);
    }
    const logSink *old = logSinkSet(&c->sink);
    int rc = catalog(c, &err);
    if (!rc) rc = cacheResolve(c->cache, ns, name, version < 0 ? -1 : version, &reg, &err);
    if (!rc) rc = jsonOut(reg, json, &err);
    logSinkSet(old);
    cJSON_Delete(reg);
    free(ns);
    free(name);
    return finish(e, rc, &err, NULL);
}

/* After a change: the snapshot refreshed so the change is seen at once. */
static int changed(lake_client *c, int rc, lakeError *err) {
    return rc ? rc : cacheAfterChange(c->cache, err);
}

int lake_catalog_create_namespace(lake_client *c, const char *ns, lake_error *e) {
    return lake_catalog_create_namespace_v2(c, ns, 0, e);
}

/* "a TEXT, b INTEGER" for a schema's JSON text (caller frees), NULL when
 * it is not one. */
static char *schemaText(const char *json) {
    cJSON *schema = cJSON_Parse(json), *col;
    char *text = NULL;
    size_t len = 0;
    FILE *f = cJSON_IsArray(schema) ? open_memstream(&text, &len) : NULL;
    if (f) {
        cJSON_ArrayForEach(col, schema) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(col, "name");
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(col, "type");
            fprintf(f, "%s%s %s", col == schema->child ? "" : ", ", cJSON_IsString(n) ? n->valuestring : "?",
                    cJSON_IsString(t) ? t->valuestring : "?");
        }
        if (fclose(f) != 0) {
            free(text);
            text = NULL;
        }
    }
    cJSON_Delete(schema);
    return text;
}

/* LIBLAKE_IF_NOT_EXISTS after the source refused a create (why, in
 * *err): 0 when what was to be created exists already, the same (a
 * table: the same columns, names and types in order); otherwise the
 * refusal, or one naming the other schema (*code "exists"), in *err.
 * The snapshot is asked again first: the thing may be another host's. */
static int existsAlready(lake_client *c, const char *ns, const char *name, const char *schema, lakeError *err,
                         const char **code) {
    lakeError why = *err;
    errClear(err);
    int rc = cacheRefresh(c->cache, 0, err);
    if (rc) return rc;
    if (!name) {
        if (cacheHasNamespace(c->cache, ns)) return 0;
        *err = why;
        return err->code;
    }
    const cacheEntry *ent = cacheFindTable(c->cache, ns, name);
    if (!ent) {
        *err = why;
        return err->code;
    }
    char *have = NULL;
    if ((rc = schemaCanonical(ent->schema, &have, err))) return rc;
    /* the ids an alter gave the columns (lake-catalog alter) are not the
     * schema's text */
    char *haveText = schemaText(have), *wantText = schemaText(schema);
    int same = haveText && wantText && strcmp(haveText, wantText) == 0;
    free(wantText);
    if (!same) {
        rc = errSetStatus(err, "failed_precondition",
                          "%s.%s exists with another schema ('%s'); --if-not-exists changes nothing", ns, name,
                          haveText ? haveText : have);
        *code = "exists";
    }
    free(haveText);
    cJSON_free(have);
    return rc;
}

/* A create's end: the snapshot refreshed after a change; a refusal with
 * LIBLAKE_IF_NOT_EXISTS looked into. */
static int created(lake_client *c, int rc, int flags, const char *ns, const char *name, const char *schema,
                   lakeError *err, const char **code) {
    int clash = rc && err->status && strcmp(err->status, "failed_precondition") == 0;
    if (clash && (flags & LIBLAKE_IF_NOT_EXISTS)) return existsAlready(c, ns, name, schema, err, code);
    if (clash) *code = "exists"; /* one code for one condition, the flag's clash's */
    return changed(c, rc, err);
}

int lake_catalog_create_namespace_v2(lake_client *c, const char *ns, int flags, lake_error *e) {
    if (noClient(c)) return misuse(e, "lake_catalog_create_namespace: %s", noClient(c));
    if (!ns || !nameIsValid(ns)) return misuse(e, "%s: not a valid namespace name", ns ? ns : "(null)");
    if (flags & ~LIBLAKE_IF_NOT_EXISTS) return misuse(e, "lake_catalog_create_namespace: unknown flags %#x", flags);
    lakeError err = {0};
    int64_t gen;
    const char *code = NULL;
    const logSink *old = logSinkSet(&c->sink);
    int rc = catalog(c, &err);
    if (!rc) rc = created(c, sourceCreateNamespace(c->src, ns, &gen, &err), flags, ns, NULL, NULL, &err, &code);
    logSinkSet(old);
    return finish(e, rc, &err, code);
}

/* NS.T split for a change; 64 when it is no table name. */
static int tableName(const char *what, const char *table, char **ns, char **name, lake_error *e) {
    lakeError err = {0};
    *ns = *name = NULL;
    if (!table) return misuse(e, "%s: no table", what);
    if (nameSplitTable(table, ns, name, &err)) {
        err.code = LAKE_EUSAGE;
        return fail(e, &err, NULL);
    }
    return 0;
}

int lake_catalog_create(lake_client *c, const char *table, const char *columns, lake_error *e) {
    return lake_catalog_create_v2(c, table, columns, 0, e);
}

int lake_catalog_create_v2(lake_client *c, const char *table, const char *columns, int flags, lake_error *e) {
    if (noClient(c)) return misuse(e, "lake_catalog_create: %s", noClient(c));
    if (!columns) return misuse(e, "lake_catalog_create: no columns");
    if (flags & ~LIBLAKE_IF_NOT_EXISTS) return misuse(e, "lake_catalog_create: unknown flags %#x", flags);
    char *ns, *name, *schema = NULL;
    int rc = tableName("lake_catalog_create", table, &ns, &name, e);
    if (rc) return rc;
    lakeError err = {0};
    int64_t gen;
    const char *code = NULL;
    if (schemaParse(columns, &schema, &err)) {
        err.code = LAKE_EUSAGE;
        rc = err.code;
    }
    const logSink *old = logSinkSet(&c->sink);
    if (!rc) rc = catalog(c, &err);
    if (!rc)
        rc = created(c, sourceCreateTable(c->src, ns, name, schema, &gen, &err), flags, ns, name, schema, &err, &code);
    logSinkSet(old);
    free(ns);
    free(name);
    cJSON_free(schema);
    return finish(e, rc, &err, code);
}

int lake_catalog_drop(lake_client *c, const char *table, lake_error *e) {
    if (noClient(c)) return misuse(e, "lake_catalog_drop: %s", noClient(c));
    char *ns, *name;
    int rc = tableName("lake_catalog_drop", table, &ns, &name, e);
    if (rc) return rc;
    lakeError err = {0};
    int64_t gen;
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    if (!rc) rc = changed(c, sourceDropTable(c->src, ns, name, &gen, &err), &err);
    logSinkSet(old);
    free(ns);
    free(name);
    return finish(e, rc, &err, NULL);
}

int lake_catalog_alter(lake_client *c, const char *table, const char *action, const char *arg1, const char *arg2,
                       lake_error *e) {
    return lake_catalog_alter_v2(c, table, action, arg1, arg2, NULL, e);
}

int lake_catalog_alter_v2(lake_client *c, const char *table, const char *action, const char *arg1, const char *arg2,
                          int64_t *new_version, lake_error *e) {
    if (new_version) *new_version = -1;
    if (noClient(c)) return misuse(e, "lake_catalog_alter: %s", noClient(c));
    char *ns, *name;
    int64_t version = -1;
    lakeError err = {0};
    int rc = schemaAlterCheck(table, action, arg1, arg2, &ns, &name, &err);
    if (rc) return fail(e, &err, NULL);
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    if (!rc) rc = changed(c, cacheAlter(c->cache, ns, name, action, arg1, arg2, &version, &err), &err);
    logSinkSet(old);
    free(ns);
    free(name);
    if (!rc && new_version) *new_version = version;
    return finish(e, rc, &err, NULL);
}

int lake_catalog_rollback(lake_client *c, const char *table, int64_t to_version, lake_error *e) {
    return lake_catalog_rollback_v2(c, table, to_version, NULL, e);
}

int lake_catalog_rollback_v2(lake_client *c, const char *table, int64_t to_version, int64_t *new_version,
                             lake_error *e) {
    if (new_version) *new_version = -1;
    if (noClient(c)) return misuse(e, "lake_catalog_rollback: %s", noClient(c));
    if (to_version < 0) return misuse(e, "lake_catalog_rollback: to_version %lld is negative", (long long)to_version);
    char *ns, *name;
    int rc = tableName("lake_catalog_rollback", table, &ns, &name, e);
    if (rc) return rc;
    lakeError err = {0};
    int64_t version;
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    /* version N's schema may not be the one before (an alter between) */
    if (!rc) rc = changed(c, cacheRollback(c->cache, ns, name, to_version, &version, &err), &err);
    logSinkSet(old);
    free(ns);
    free(name);
    if (!rc && new_version) *new_version = version;
    return finish(e, rc, &err, NULL);
}

int lake_catalog_history(lake_client *c, const char *table, char **json, lake_error *e) {
    if (!json) return misuse(e, "lake_catalog_history: json is NULL");
    *json = NULL;
    if (noClient(c)) return misuse(e, "lake_catalog_history: %s", noClient(c));
    char *ns, *name;
    int rc = tableName("lake_catalog_history", table, &ns, &name, e);
    if (rc) return rc;
    lakeError err = {0};
    cJSON *all = NULL;
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    if (!rc) rc = sourceHistoryAll(c->src, ns, name, &all, &err);
    if (!rc) rc = jsonOut(all, json, &err);
    logSinkSet(old);
    cJSON_Delete(all);
    free(ns);
    free(name);
    return finish(e, rc, &err, NULL);
}

int lake_catalog_expire(lake_client *c, const char *table, const char *older_than, lake_error *e) {
    return lake_catalog_expire_v2(c, table, older_than, NULL, e);
}

int lake_catalog_expire_v2(lake_client *c, const char *table, const char *older_than, int64_t *expired,
                           lake_error *e) {
    if (expired) *expired = 0;
    if (noClient(c)) return misuse(e, "lake_catalog_expire: %s", noClient(c));
    char *ns = NULL, *name = NULL;
    int64_t secs = -1, n;
    if (older_than && durationParse(older_than, EXPIRE_MAX_S, &secs))
        return misuse(e, "older_than: '%s' is not a duration (seconds, or with a unit: 45s, 30m, 12h, 7d)",
                      older_than);
    int rc = table ? tableName("lake_catalog_expire", table, &ns, &name, e) : 0;
    if (rc) return rc;
    lakeError err = {0};
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    if (!rc) rc = sourceExpire(c->src, ns, name, secs, &n, &err);
    if (!rc) cacheAfterExpire(c->cache, ns, name);
    if (!rc && expired) *expired = n;
    logSinkSet(old);
    free(ns);
    free(name);
    return finish(e, rc, &err, NULL);
}

int lake_catalog_compact(lake_client *c, const char *table, int64_t target_size, lake_error *e) {
    return lake_catalog_compact_v2(c, table, target_size, NULL, NULL, NULL, e);
}

int lake_catalog_compact_v2(lake_client *c, const char *table, int64_t target_size, int64_t *replaced,
                            int64_t *written, int64_t *new_version, lake_error *e) {
    if (replaced) *replaced = 0;
    if (written) *written = 0;
    if (new_version) *new_version = -1;
    if (noClient(c)) return misuse(e, "lake_catalog_compact: %s", noClient(c));
    if (target_size < 0 || target_size == 1)
        return misuse(e, "lake_catalog_compact: target_size %lld is not a size in bytes (0, or 2 or more)",
                      (long long)target_size);
    char *ns, *name;
    int rc = tableName("lake_catalog_compact", table, &ns, &name, e);
    if (rc) return rc;
    lakeError err = {0};
    compactResult res;
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    if (!rc) rc = compactRun(&c->cfg, c->cache, ns, name, target_size, &c->stop, &res, &err);
    const char *code = NULL;
    if (rc && c->stop) { /* the stop asked for, not what it broke */
        stopTaken(c);
        errSet(&err, LAKE_EFAIL, "%s.%s: interrupted; nothing committed", ns, name);
        code = "interrupted";
    }
    if (!rc && res.replaced) { /* nothing to do: 0, 0 and -1 */
        if (replaced) *replaced = res.replaced;
        if (written) *written = res.written;
        if (new_version) *new_version = res.version;
    }
    logSinkSet(old);
    free(ns);
    free(name);
    return finish(e, rc, &err, code);
}

int lake_catalog_show(lake_client *c, const char *table, char **json, lake_error *e) {
    if (!json) return misuse(e, "lake_catalog_show: json is NULL");
    *json = NULL;
    if (noClient(c)) return misuse(e, "lake_catalog_show: %s", noClient(c));
    char *ns, *name;
    int rc = tableName("lake_catalog_show", table, &ns, &name, e);
    if (rc) return rc;
    lakeError err = {0};
    const cacheEntry *ent;
    cJSON *schema = NULL;
    const logSink *old = logSinkSet(&c->sink);
    rc = catalog(c, &err);
    if (!rc) rc = cacheTable(c->cache, ns, name, &ent, &err);
    if (rc && err.status && strcmp(err.status, "not_found") == 0)
        rc = errSet(&err, LAKE_ENOINPUT, "%s: no such table", table);
    if (!rc && !cJSON_IsArray(schema = cJSON_Parse(ent->schema)))
        rc = errSet(&err, LAKE_EFAIL, "%s: malformed schema in the catalog", table);
    if (!rc) rc = jsonOut(schema, json, &err);
    logSinkSet(old);
    cJSON_Delete(schema);
    free(ns);
    free(name);
    return finish(e, rc, &err, NULL);
}

/* --- queries ---------------------------------------------------------------- */

/* The session's progress handler: a statement gives up once
 * lake_interrupt has been called. */
static int stopQuery(void *arg) {
    lake_client *c = arg;
    return c->stop != 0;
}

/* The client's query session, opened on first use. */
static int session(lake_client *c, lakeError *err) {
    if (c->qs) return 0;
    querySession *qs = calloc(1, sizeof *qs);
    if (!qs) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "lake_query");
    qs->overrides = c->ov;
    qs->noverrides = c->nov;
    int rc = querySessionOpen(qs, err);
    if (rc) {
        free(qs);
        return rc;
    }
    sqlite3_progress_handler(qs->db, 1000, stopQuery, c);
    qs->q.stop = &c->stop; /* what planning does (a split aggregate's reads) stops too */
    c->qs = qs;
    return 0;
}

/* Is only a statement's end left at p (blanks, comments, semicolons)? */
static int onlyEnd(const char *p) {
    for (p = querySkipBlank(p); *p == ';'; p = querySkipBlank(p + 1)) {}
    return *p == '\0';
}

/* Compile q->sql into q->st: exactly one statement. */
static int rowsCompile(lake_rows *q, lakeError *err) {
    querySession *qs = q->c->qs;
    const char *next = NULL;
    qs->q.replan = 0;
    int rc = querySessionCompile(qs, q->sql, &q->st, &next, err);
    if (!rc && !q->st) rc = errSet(err, LAKE_EUSAGE, "lake_query: no statement in the SQL text");
    if (!rc && next && !onlyEnd(next))
        rc = errSet(err, LAKE_EUSAGE, "lake_query: more than one statement (run them one at a time)");
    if (rc) {
        sqlite3_finalize(q->st);
        q->st = NULL;
        queryUnpin(&qs->q);
    }
    return rc;
}

/* Forget the current row's values. */
static void rowClear(lake_rows *q) {
    for (int i = 0; i < q->cols; i++) {
        lake_file_free(q->files[i]);
        q->files[i] = NULL;
        free(q->own[i]);
        q->own[i] = NULL;
        q->types[i] = -1;
    }
}

/* The current row's types, its FILE values decoded: a FILE column's TEXT
 * that is a FILE value is LIBLAKE_FILE, as lake-query -f json prints it
 * as an object. */
static void rowTypes(lake_rows *q) {
    for (int i = 0; i < q->cols; i++) {
        int t = sqlite3_column_type(q->st, i);
        q->types[i] = t == SQLITE_INTEGER ? LIBLAKE_INTEGER : t == SQLITE_FLOAT ? LIBLAKE_FLOAT
                    : t == SQLITE_TEXT    ? LIBLAKE_TEXT    : t == SQLITE_BLOB  ? LIBLAKE_BLOB
                                                                                : LIBLAKE_NULL;
        if (t != SQLITE_TEXT || !q->isFile[i]) continue;
        cJSON *j = cJSON_Parse((const char *)sqlite3_column_text(q->st, i));
        fileValue fv = {0};
        lakeError err = {0};
        if (j && cJSON_IsObject(j) && !fileValueFromJson(j, &fv, &err) && fv.location &&
            !fileWrap(&fv, &q->files[i], &err))
            q->types[i] = LIBLAKE_FILE;
        fileValueFree(&fv);
        cJSON_Delete(j);
    }
}

static void rowsFree(lake_rows *q) {
    if (q->files) rowClear(q);
    free(q->isFile);
    free(q->types);
    free(q->files);
    free(q->own);
    free(q->num);
    free(q->sql);
    free(q);
}

int lake_query(lake_client *c, const char *sql, lake_rows **out, lake_error *e) {
    if (!out) return misuse(e, "lake_query: out is NULL");
    *out = NULL;
    if (noClient(c)) return misuse(e, "lake_query: %s", noClient(c));
    if (!sql) return misuse(e, "lake_query: no SQL text");
    if (c->active) return misuse(e, "lake_query: a statement's rows are still open on this client (close them first)");
    lakeError err = {0};
    lake_rows *q = calloc(1, sizeof *q);
    if (!q || !(q->sql = strdup(sql))) {
        free(q);
        errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_query");
        return fail(e, &err, NULL);
    }
    q->c = c;
    q->sink = c->sink;
    const logSink *old = logSinkSet(&q->sink);
    int rc = session(c, &err);
    if (!rc && c->qs->cache) {
        /* as a new lake-query would: the catalog cache's files read again
         * (a create or drop since, through this client or another
         * program), the tables declared again, an unknown one asked for */
        cacheForget(c->qs->cache);
        queryForget(c->qs->db);
        c->qs->refreshed = 0;
    }
    if (!rc) rc = rowsCompile(q, &err);
    if (c->stop) { /* asked while planned: the stop, not what it broke */
        stopTaken(c);
        if (!rc) {
            sqlite3_finalize(q->st);
            q->st = NULL;
            queryUnpin(&c->qs->q);
        }
        errClear(&err);
        rc = errSet(&err, LAKE_EFAIL, "interrupted");
        q->code = "interrupted";
    }
    logSinkSet(old);
    if (!rc) {
        int n = q->cols = sqlite3_column_count(q->st);
        size_t k = n ? (size_t)n : 1;
        q->isFile = calloc(k, sizeof *q->isFile);
        q->types = calloc(k, sizeof *q->types);
        q->files = calloc(k, sizeof *q->files);
        q->own = calloc(k, sizeof *q->own);
        q->num = calloc(k, REAL_TEXT_MAX);
        if (!q->isFile || !q->types || !q->files || !q->own || !q->num) {
            rc = errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_query");
        } else {
            for (int i = 0; i < n; i++) {
                const char *d = sqlite3_column_decltype(q->st, i);
                q->isFile[i] = d && strncmp(d, "FILE", 4) == 0;
                q->types[i] = -1;
            }
        }
    }
    if (rc) {
        if (q->st) {
            sqlite3_finalize(q->st);
            queryUnpin(&c->qs->q);
        }
        const char *code = q->code;
        rowsFree(q);
        return fail(e, &err, code);
    }
    if (handleAdd(q, HANDLE_ROWS)) {
        sqlite3_finalize(q->st);
        queryUnpin(&c->qs->q);
        rowsFree(q);
        errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_query");
        return fail(e, &err, NULL);
    }
    pthread_mutex_lock(&c->mu);
    c->refs++;
    pthread_mutex_unlock(&c->mu);
    c->active = q;
    *out = q;
    ok(e);
    return 0;
}

/* A bind's checks, and SQLite's answer as a status. */
static int bound(lake_rows *q, int index, int s, const char *what, lake_error *e) {
    if (s == SQLITE_OK) {
        ok(e);
        return 0;
    }
    if (s == SQLITE_RANGE)
        return misuse(e, "%s: parameter %d out of range (the statement has %d)", what, index,
                      sqlite3_bind_parameter_count(q->st));
    if (s == SQLITE_NOMEM || s == SQLITE_TOOBIG) {
        lakeError err = {0};
        errSet(&err, s == SQLITE_TOOBIG ? LAKE_EDATA : LAKE_EFAIL, "%s: %s", what, sqlite3_errstr(s));
        return fail(e, &err, NULL);
    }
    return misuse(e, "%s: %s", what, sqlite3_errstr(s));
}

static int bindable(lake_rows *q, const char *what, lake_error *e) {
    if (noRows(q)) return misuse(e, "%s: %s", what, noRows(q));
    if (q->state != ROWS_READY) return misuse(e, "%s: the statement has been stepped already", what);
    return 0;
}

int lake_rows_bind_text(lake_rows *q, int index, const char *text, lake_error *e) {
    int rc = bindable(q, "lake_rows_bind_text", e);
    if (rc) return rc;
    if (!text) return lake_rows_bind_null(q, index, e);
    return bound(q, index, sqlite3_bind_text64(q->st, index, text, strlen(text), SQLITE_TRANSIENT, SQLITE_UTF8),
                 "lake_rows_bind_text", e);
}

int lake_rows_bind_int64(lake_rows *q, int index, int64_t v, lake_error *e) {
    int rc = bindable(q, "lake_rows_bind_int64", e);
    return rc ? rc : bound(q, index, sqlite3_bind_int64(q->st, index, v), "lake_rows_bind_int64", e);
}

int lake_rows_bind_double(lake_rows *q, int index, double v, lake_error *e) {
    int rc = bindable(q, "lake_rows_bind_double", e);
    return rc ? rc : bound(q, index, sqlite3_bind_double(q->st, index, v), "lake_rows_bind_double", e);
}

int lake_rows_bind_blob(lake_rows *q, int index, const void *blob, size_t len, lake_error *e) {
    int rc = bindable(q, "lake_rows_bind_blob", e);
    if (rc) return rc;
    if (!blob && len) return misuse(e, "lake_rows_bind_blob: no bytes");
    return bound(q, index, sqlite3_bind_blob64(q->st, index, blob ? blob : "", len, SQLITE_TRANSIENT),
                 "lake_rows_bind_blob", e);
}

int lake_rows_bind_null(lake_rows *q, int index, lake_error *e) {
    int rc = bindable(q, "lake_rows_bind_null", e);
    return rc ? rc : bound(q, index, sqlite3_bind_null(q->st, index), "lake_rows_bind_null", e);
}

int lake_rows_params(const lake_rows *q) { return noRows(q) ? -1 : sqlite3_bind_parameter_count(q->st); }

/* The statement is over (done or failed): its pins dropped, so the next
 * statement resolves afresh, and the client free for another. */
static void rowsEnd(lake_rows *q) {
    sqlite3_reset(q->st);
    queryUnpin(&q->c->qs->q);
    if (q->c->active == q) q->c->active = NULL;
}

int lake_rows_next(lake_rows *q, lake_error *e) {
    if (noRows(q)) return misuse(e, "lake_rows_next: %s", noRows(q)), -1;
    if (q->state == ROWS_DONE) {
        ok(e);
        return LIBLAKE_DONE;
    }
    if (q->state == ROWS_FAILED) return fail(e, &q->err, q->code), -1;
    lake_client *c = q->c;
    querySession *qs = c->qs;
    const logSink *old = logSinkSet(&q->sink);
    rowClear(q);
    int answer = -1;
    for (;;) {
        errClear(&qs->q.err);
        int s = sqlite3_step(q->st);
        if (s == SQLITE_ROW) {
            q->state = ROWS_ROW;
            rowTypes(q);
            answer = LIBLAKE_ROW;
            break;
        }
        if (s == SQLITE_DONE) {
            rowsEnd(q);
            q->state = ROWS_DONE;
            answer = LIBLAKE_DONE;
            break;
        }
        lakeError err = {0};
        sqlite3_reset(q->st);
        querySessionFailure(qs, querySkipBlank(q->sql), 0, &err);
        queryUnpin(&qs->q);
        if (q->state == ROWS_READY && qs->q.replan && querySessionRetry(qs, ++q->attempt, &err)) {
            /* nothing was committed: compiled again on the new version,
             * with the same parameters */
            sqlite3_stmt *was = q->st;
            q->st = NULL;
            if (!rowsCompile(q, &err)) {
                sqlite3_transfer_bindings(was, q->st);
                sqlite3_finalize(was);
                continue;
            }
            q->st = was;
        }
        if (c->stop) { /* the stop asked for, not the failure it caused */
            stopTaken(c);
            errSet(&err, LAKE_EFAIL, "interrupted");
            q->code = "interrupted";
        }
        rowsEnd(q);
        q->err = err;
        q->state = ROWS_FAILED;
        break;
    }
    logSinkSet(old);
    if (answer < 0) return fail(e, &q->err, q->code), -1;
    ok(e);
    return answer;
}

int lake_rows_columns(const lake_rows *q) { return noRows(q) ? -1 : q->cols; }

const char *lake_rows_name(const lake_rows *q, int i) {
    return !noRows(q) && i >= 0 && i < q->cols ? sqlite3_column_name(q->st, i) : NULL;
}

/* Is there a value at column i? */
static int cellOk(const lake_rows *q, int i) { return !noRows(q) && q->state == ROWS_ROW && i >= 0 && i < q->cols; }

int lake_rows_type(const lake_rows *q, int i) { return cellOk(q, i) ? q->types[i] : -1; }

const char *lake_rows_text(lake_rows *q, int i, size_t *len) {
    if (len) *len = 0;
    if (!cellOk(q, i)) return NULL;
    const char *p = NULL;
    size_t n = 0;
    char *num = q->num + (size_t)i * REAL_TEXT_MAX;
    switch (q->types[i]) {
    case LIBLAKE_NULL: return NULL;
    case LIBLAKE_INTEGER:
        snprintf(num, REAL_TEXT_MAX, "%lld", (long long)sqlite3_column_int64(q->st, i));
        p = num;
        n = strlen(p);
        break;
    case LIBLAKE_FLOAT:
        p = realText(sqlite3_column_double(q->st, i), num);
        n = strlen(p);
        break;
    case LIBLAKE_BLOB:
        if (!q->own[i]) {
            static const char digit[] = "0123456789abcdef";
            const unsigned char *b = sqlite3_column_blob(q->st, i);
            size_t k = (size_t)sqlite3_column_bytes(q->st, i);
            if (!(q->own[i] = malloc(2 * k + 1))) return NULL;
            for (size_t j = 0; j < k; j++) {
                q->own[i][2 * j] = digit[b[j] >> 4];
                q->own[i][2 * j + 1] = digit[b[j] & 15];
            }
            q->own[i][2 * k] = '\0';
        }
        p = q->own[i];
        n = strlen(p);
        break;
    default: /* TEXT, FILE */
        p = (const char *)sqlite3_column_text(q->st, i);
        n = (size_t)sqlite3_column_bytes(q->st, i);
    }
    if (len) *len = n;
    return p;
}

int64_t lake_rows_int64(lake_rows *q, int i) { return cellOk(q, i) ? sqlite3_column_int64(q->st, i) : 0; }

double lake_rows_double(lake_rows *q, int i) { return cellOk(q, i) ? sqlite3_column_double(q->st, i) : 0.0; }

const void *lake_rows_blob(lake_rows *q, int i, size_t *len) {
    if (!cellOk(q, i) || q->types[i] != LIBLAKE_BLOB) return lake_rows_text(q, i, len);
    if (len) *len = (size_t)sqlite3_column_bytes(q->st, i);
    return sqlite3_column_blob(q->st, i);
}

const lake_file *lake_rows_file(lake_rows *q, int i) { return cellOk(q, i) ? q->files[i] : NULL; }

void lake_rows_close(lake_rows *q) {
    if (!q || !handleDrop(q, HANDLE_ROWS)) return; /* closed already: nothing */
    lake_client *c = q->c;
    const logSink *old = logSinkSet(&q->sink);
    if (c->active == q) rowsEnd(q); /* abandoned: SQLite rolls the statement back */
    sqlite3_finalize(q->st);
    logSinkSet(old);
    rowsFree(q);
    clientUnref(c);
}

/* --- import --------------------------------------------------------------- */

/* lake_import's formats: lake-query --import's --csv, --csv --strict and
 * --jsonl; NULL its default (the first non-blank byte decides). */
static int importFormatNamed(const char *format, importFormat *fmt) {
    if (!format) *fmt = IMPORT_AUTO;
    else if (strcmp(format, "csv") == 0) *fmt = IMPORT_CSV;
    else if (strcmp(format, "csv-strict") == 0) *fmt = IMPORT_CSV | IMPORT_STRICT;
    else if (strcmp(format, "jsonl") == 0) *fmt = IMPORT_JSONL;
    else return -1;
    return 0;
}

int lake_import(lake_client *c, const char *table, int fd, const char *format, lake_error *e) {
    importFormat fmt;
    if (noClient(c)) return misuse(e, "lake_import: %s", noClient(c));
    if (!table) return misuse(e, "lake_import: no table");
    int bad = readableFd("lake_import", fd, e);
    if (bad) return bad;
    if (importFormatNamed(format, &fmt))
        return misuse(e, "lake_import: format '%s' is not csv, csv-strict or jsonl", format);
    if (c->active) return misuse(e, "lake_import: a statement's rows are still open on this client (close them first)");
    lakeError err = {0};
    /* read as lake_put_fd reads, giving up once lake_interrupt is called;
     * named as lake-query names its input in messages ("stdin: line 3") */
    putSrc src = {.c = c, .fd = fd, .total = -1};
    lakeReader in = {srcRead, &src, fd == STDIN_FILENO ? "stdin" : "input"};
    const logSink *old = logSinkSet(&c->sink);
    int rc = session(c, &err);
    if (!rc && c->qs->cache) cacheForget(c->qs->cache); /* as a new lake-query: the catalog read again */
    if (!rc) rc = querySessionImport(c->qs, table, &in, fmt, NULL, &c->stop, NULL, &err);
    const char *code = NULL;
    if (rc && c->stop) { /* the stop asked for, not the read it broke */
        stopTaken(c);
        errSet(&err, LAKE_EFAIL, "%s: interrupted", table);
        code = "interrupted";
    }
    logSinkSet(old);
    return finish(e, rc, &err, code);
}

/* --- readers --------------------------------------------------------------- */

/* stageGet's writer: into the ring, waiting while it is full; a reader
 * closed meanwhile ends the get. */
static int ringWrite(void *ctx, const void *buf, size_t len) {
    lake_reader *r = ctx;
    const char *p = buf;
    pthread_mutex_lock(&r->mu);
    while (len > 0) {
        while (r->len == RING && !r->closed) {
            r->want_room = 1;
            pthread_cond_wait(&r->cv, &r->mu);
        }
        if (r->closed) {
            pthread_mutex_unlock(&r->mu);
            errno = ECANCELED;
            return -1;
        }
        size_t tail = (r->head + r->len) % RING, k = RING - r->len;
        if (k > RING - tail) k = RING - tail;
        if (k > len) k = len;
        memcpy(r->buf + tail, p, k);
        r->len += k;
        p += k;
        len -= k;
        if (r->want_data) {
            r->want_data = 0;
            pthread_cond_broadcast(&r->cv);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return 0;
}

static void *readerMain(void *arg) {
    lake_reader *r = arg;
    logSinkSet(&r->sink);
    progress prog;
    progressStart(&prog, PROGRESS_OFF, "", r->fv.size);
    lakeWriter w = {ringWrite, r, r->fv.location};
    lakeError err = {0};
    int rc = stageGet(r->st, &r->fv, &w, r->verify, &prog, &err);
    pthread_mutex_lock(&r->mu);
    r->done = 1;
    r->rc = rc;
    r->err = err;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* lake_open_file_opt's options into r (verify) and its stage (jobs,
 * part_size), checked as lake-get checks its options; 64 with the key
 * named otherwise. */
static int readerOptions(lake_reader *r, const char *const *options, lakeError *err) {
    int jobs = STAGE_GET_JOBS_DEFAULT;
    int64_t part_size = 0;
    r->verify = 1;
    for (int i = 0; options && options[i]; i += 2) {
        const char *k = options[i], *v = options[i + 1];
        int rc = 0;
        if (!v) return errSet(err, LAKE_EUSAGE, "lake_open_file_opt: option '%s' has no value", k);
        if (strcmp(k, "verify") == 0) {
            if (parseFlag(v, &r->verify))
                return errSet(err, LAKE_EUSAGE, "lake_open_file_opt: verify: '%s' is not 0 or 1", v);
        } else if (strcmp(k, "jobs") == 0) {
            rc = stageParseJobs(v, &jobs, err);
        } else if (strcmp(k, "part_size") == 0) {
            rc = stageParsePartSize(v, &part_size, err);
        } else {
            return errSet(err, LAKE_EUSAGE, "lake_open_file_opt: unknown option '%s'", k);
        }
        if (rc) return optionFailed(err, "lake_open_file_opt", k);
    }
    stageSetGetJobs(r->st, jobs, part_size);
    return 0;
}

static void readerFree(lake_reader *r);

int lake_open_file(lake_client *c, const char *file_json, lake_reader **out, lake_error *e) {
    return lake_open_file_opt(c, file_json, NULL, out, e);
}

int lake_open_file_opt(lake_client *c, const char *file_json, const char *const *options, lake_reader **out,
                       lake_error *e) {
    if (!out) return misuse(e, "lake_open_file: out is NULL");
    *out = NULL;
    if (noClient(c)) return misuse(e, "lake_open_file: %s", noClient(c));
    if (!file_json) return misuse(e, "lake_open_file: no FILE value");
    lakeError err = {0};
    lake_reader *r = calloc(1, sizeof *r);
    if (!r) {
        errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_open_file");
        return fail(e, &err, NULL);
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&c->mu);
    c->refs++;
    pthread_mutex_unlock(&c->mu);
    r->c = c;
    r->sink = c->sink;
    int rc = refRead(file_json, &r->fv, &err);
    if (!rc) {
        const logSink *old = logSinkSet(&c->sink);
        rc = clientStage(c, &err);
        logSinkSet(old);
    }
    if (!rc) rc = stageContains(c->st, r->fv.location, &err); /* before any object I/O */
    if (!rc) rc = stageDup(c->st, &r->st, &err);
    if (!rc) rc = readerOptions(r, options, &err);
    if (!rc) {
        const logSink *old = logSinkSet(&r->sink);
        rc = stageOpenRead(r->st, &r->fv, r->verify, &r->pull, &err);
        logSinkSet(old);
    }
    /* a stage that pushes (S3) gets a thread of its own at the first read */
    if (!rc && !r->pull && !(r->buf = malloc(RING))) rc = errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_open_file");
    if (!rc && handleAdd(r, HANDLE_READER)) rc = errSetErrno(&err, LAKE_EFAIL, ENOMEM, "lake_open_file");
    if (rc) {
        readerFree(r);
        return fail(e, &err, NULL);
    }
    *out = r;
    ok(e);
    return 0;
}

ssize_t lake_reader_read(lake_reader *r, void *buf, size_t len, lake_error *e) {
    if (noReader(r)) return misuse(e, "lake_reader_read: %s", noReader(r)), -1;
    if (!buf || len == 0) return misuse(e, "lake_reader_read: no room to read into"), -1;
    if (len > SSIZE_MAX) len = SSIZE_MAX;
    if (r->pull) {
        lakeError err = {0};
        const logSink *old = logSinkSet(&r->sink);
        ssize_t n = stageReaderRead(r->pull, buf, len, &err);
        logSinkSet(old);
        if (n >= 0) ok(e);
        else fail(e, &err, NULL);
        return n;
    }
    if (!r->started) { /* the first read: the GET begins */
        /* the signals are the program's: none is delivered to this thread */
        int t = threadStart(&r->th, readerMain, r);
        if (t) {
            lakeError err = {0};
            errSetErrno(&err, LAKE_EFAIL, t, "lake_open_file: a thread");
            return fail(e, &err, NULL), -1;
        }
        r->started = 1;
    }
    pthread_mutex_lock(&r->mu);
    while (r->len == 0 && !r->done) {
        r->want_data = 1;
        pthread_cond_wait(&r->cv, &r->mu);
    }
    size_t k = r->len < len ? r->len : len, first = k < RING - r->head ? k : RING - r->head;
    memcpy(buf, r->buf + r->head, first);
    memcpy((char *)buf + first, r->buf, k - first);
    r->head = (r->head + k) % RING;
    r->len -= k;
    int rc = r->rc;
    /* the writer, waiting for room, goes on once half the ring is free:
     * one wake-up a half ring, not one a read */
    if (r->want_room && r->len <= RING / 2) {
        r->want_room = 0;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    if (k || !rc) {
        ok(e);
        return (ssize_t)k;
    }
    return fail(e, &r->err, NULL), -1;
}

/* Stop r's thread, then free r and drop its hold on the client. */
static void readerFree(lake_reader *r) {
    pthread_mutex_lock(&r->mu);
    r->closed = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->started) pthread_join(r->th, NULL);
    stageReaderClose(r->pull);
    stageClose(r->st);
    fileValueFree(&r->fv);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->buf);
    clientUnref(r->c);
    free(r);
}

void lake_reader_close(lake_reader *r) {
    if (r && handleDrop(r, HANDLE_READER)) readerFree(r); /* closed already: nothing */
}
