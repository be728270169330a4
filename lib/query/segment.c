/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * segment.c - writing and reading table segments (see segment.h).
 *
 * A writer owns a private temporary directory and at most one open segment
 * file in it.  Values are converted into a per-row scratch buffer before
 * anything is bound, so a row that fails its types leaves the segment
 * unchanged.
 */
#include "query/segment.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/interrupt.h"
#include "core/jsonstrict.h"
#include "core/realtext.h"
#include "core/rfc3339.h"
#include "core/utf8.h"
#include "stage/filevalue.h"

/* --- value conversion ---------------------------------------------------- */

/* A NUL-terminated copy of text bytes in *tmp (grown as needed). */
static const char *cstr(const lakeValue *v, char **tmp, size_t *cap) {
    if (v->n + 1 > *cap) {
        char *t = realloc(*tmp, v->n + 1);
        if (!t) return NULL;
        *tmp = t;
        *cap = v->n + 1;
    }
    memcpy(*tmp, v->p, v->n);
    (*tmp)[v->n] = '\0';
    return *tmp;
}

/* Parse RFC 3339 text s into out as UTC "YYYY-MM-DDTHH:MM:SS[.frac]Z".
 * 0 on success, -1 when s is not a timestamp or falls outside years
 * 0000-9999. */
static int timestampNormalise(const char *s, char out[64]) {
    long long secs;
    const char *frac;
    size_t nfrac;
    if (rfc3339Parse(s, &secs, &frac, &nfrac)) return -1;
    time_t t = (time_t)secs;
    struct tm u;
    if (!gmtime_r(&t, &u) || u.tm_year + 1900 < 0 || u.tm_year + 1900 > 9999) return -1;
    size_t k = strftime(out, 64, "%Y-%m-%dT%H:%M:%S", &u);
    if (nfrac) {
        out[k++] = '.';
        memcpy(out + k, frac, nfrac);
        k += nfrac;
    }
    out[k++] = 'Z';
    out[k] = '\0';
    return 0;
}

/* A converted value ready to bind.  Text lives in the writer's scratch. */
typedef struct boundValue {
    int kind; /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB */
    int64_t i;
    double r;
    size_t off, n; /* into the scratch buffer (text, blob) */
} boundValue;

/* A column's statistics gathered as rows are added (segmentStatsCompute's
 * answer without a scan of the segment): text bounds keep their first
 * STATS_KEEP bytes, enough to cut them as the format does and to see that
 * they were longer (two values alike in those bytes give the same cut
 * bound, so which of them is larger does not matter). */
#define STATS_KEEP (SEGMENT_STATS_TEXT_MAX + 1)
typedef struct statsAcc {
    int64_t nulls;
    int has;                 /* lo and hi hold a value */
    int mixed;               /* values of two storage classes were seen */
    int kind;                /* SQLITE_INTEGER, SQLITE_FLOAT or SQLITE_TEXT */
    int64_t lo_i, hi_i;
    double lo_r, hi_r;
    unsigned char lo[STATS_KEEP], hi[STATS_KEEP];
    size_t nlo, nhi;         /* bytes kept (STATS_KEEP: the value was longer) */
} statsAcc;

struct segmentWriter {
    stage *st;
    char *key_dir;       /* tables/<table-id> */
    segmentSchema *schema;
    segmentWriterOptions opt;
    char *tmpdir;
    char *path;          /* the open segment's file, NULL when none */
    int dir_slot, path_slot; /* their interrupt registry slots, or -1 */
    sqlite3 *db;
    sqlite3_stmt *ins;
    int64_t seg_rows, rows, since_check, est_since_check;
    int nseg;
    cJSON *segments;         /* records of the uploaded segments */
    char **files;            /* referenced FILE locations, sorted and deduped at finish */
    size_t nfiles, files_cap;
    char **pending;          /* per column: this row's FILE location, until it is stored */
    boundValue *bound;
    statsAcc *acc;           /* per column, of the open segment */
    statsAcc *racc;          /* per column, of the open row range (SEGMENT_RANGE_ROWS) */
    int64_t range_first, range_last, range_rows; /* its rowids and rows */
    sqlite3_stmt *range_ins; /* INSERT INTO lake_ranges */
    char *scratch;           /* converted text and blob bytes of the row */
    size_t scratch_len, scratch_cap;
    char *tmp;               /* NUL-terminated copies for parsing */
    size_t tmp_cap;
};

static int statsFromAcc(segmentWriter *w, const statsAcc *acc, cJSON **out, lakeError *err);

/* Append n bytes to the scratch buffer; its offset, or -1 when out of
 * memory. */
static long long scratchPut(segmentWriter *w, const void *p, size_t n) {
    if (w->scratch_len + n > w->scratch_cap) {
        size_t cap = w->scratch_cap ? w->scratch_cap : 4096;
        while (cap < w->scratch_len + n) cap *= 2;
        char *s = realloc(w->scratch, cap);
        if (!s) return -1;
        w->scratch = s;
        w->scratch_cap = cap;
    }
    if (n && p) memcpy(w->scratch + w->scratch_len, p, n);
    w->scratch_len += n;
    return (long long)(w->scratch_len - n);
}

static int putText(segmentWriter *w, boundValue *b, int kind, const void *p, size_t n,
                   lakeError *err) {
    long long off = scratchPut(w, p, n);
    if (off < 0) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    b->kind = kind;
    b->off = (size_t)off;
    b->n = n;
    return 0;
}

/* Short printable excerpt of a text value for messages. */
static void excerpt(const lakeValue *v, char out[48]) {
    size_t n = v->n < 40 ? v->n : 40;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v->p[i];
        out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n < v->n) { memcpy(out + k, "...", 3); k += 3; }
    out[k] = '\0';
}

static int mismatch(const segmentColumn *c, const lakeValue *v, lakeError *err) {
    static const char *kinds[] = {"null", "an integer", "a real", "text", "a blob", "a boolean"};
    if (v->kind == LAKE_VALUE_TEXT) {
        char ex[48];
        excerpt(v, ex);
        return errSet(err, LAKE_EDATA, "column %s: '%s' is not %s %s", c->name, ex,
                      c->type == LAKE_TYPE_INTEGER ? "an" : "a", lakeTypeName(c->type));
    }
    return errSet(err, LAKE_EDATA, "column %s: %s is not %s %s", c->name, kinds[v->kind],
                  c->type == LAKE_TYPE_INTEGER ? "an" : "a", lakeTypeName(c->type));
}

static int hexDigit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Text of hexadecimal digit pairs as the bytes they spell. */
static int putHex(segmentWriter *w, const segmentColumn *c, const lakeValue *v, boundValue *b, lakeError *err) {
    if (v->n % 2) return mismatch(c, v, err);
    long long off = scratchPut(w, NULL, v->n / 2);
    if (off < 0) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    unsigned char *out = (unsigned char *)w->scratch + off;
    for (size_t i = 0; i < v->n; i += 2) {
        int hi = hexDigit(v->p[i]), lo = hexDigit(v->p[i + 1]);
        if (hi < 0 || lo < 0) return mismatch(c, v, err);
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    b->kind = SQLITE_BLOB;
    b->off = (size_t)off;
    b->n = v->n / 2;
    return 0;
}

#define EXACT_INT_MAX 9007199254740992.0 /* 2^53 */

/* Convert v for column c into b.  65 when it does not fit. */
static int convert(segmentWriter *w, const segmentColumn *c, const lakeValue *v, boundValue *b,
                   lakeError *err) {
    memset(b, 0, sizeof *b);
    b->kind = SQLITE_NULL;
    if (v->kind == LAKE_VALUE_NULL) return 0;
    const char *s = NULL;
    if (v->kind == LAKE_VALUE_TEXT && c->type == LAKE_TYPE_TEXT) {
        /* U+0000 is a character like any other in TEXT */
        if (!utf8ValidNul((const unsigned char *)v->p, v->n))
            return errSet(err, LAKE_EDATA, "column %s: invalid UTF-8", c->name);
    } else if (v->kind == LAKE_VALUE_TEXT && c->type != LAKE_TYPE_BLOB) {
        /* parsed as a C string: a NUL would end it early */
        if (!utf8Valid((const unsigned char *)v->p, v->n))
            return errSet(err, LAKE_EDATA, "column %s: invalid UTF-8 (or a NUL byte)", c->name);
        if (c->type != LAKE_TYPE_TEXT && !(s = cstr(v, &w->tmp, &w->tmp_cap)))
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    }
    switch (c->type) {
    case LAKE_TYPE_INTEGER:
        b->kind = SQLITE_INTEGER;
        if (v->kind == LAKE_VALUE_INT || v->kind == LAKE_VALUE_BOOL) { b->i = v->i; return 0; }
        if (v->kind == LAKE_VALUE_REAL && v->r == floor(v->r) && fabs(v->r) <= EXACT_INT_MAX) {
            b->i = (int64_t)v->r;
            return 0;
        }
        if (s) {
            const char *p = s + (*s == '-' || *s == '+');
            char *end;
            errno = 0;
            long long x = strtoll(s, &end, 10);
            if (*p >= '0' && *p <= '9' && !*end && errno == 0 && strspn(p, "0123456789") == strlen(p)) {
                b->i = x;
                return 0;
            }
        }
        return mismatch(c, v, err);
    case LAKE_TYPE_REAL:
        b->kind = SQLITE_FLOAT;
        if (v->kind == LAKE_VALUE_INT) { b->r = (double)v->i; return 0; }
        if (v->kind == LAKE_VALUE_REAL && isfinite(v->r)) { b->r = v->r; return 0; }
        if (s && *s && !strchr(" \t\r\n", *s)) {
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            /* ERANGE with a finite result is underflow: 4.9e-324 is the
             * nearest (subnormal) double, as SQLite reads it too */
            if (!*end && isfinite(x)) { b->r = x; return 0; }
        }
        return mismatch(c, v, err);
    case LAKE_TYPE_TEXT: {
        char num[40];
        if (v->kind == LAKE_VALUE_TEXT) return putText(w, b, SQLITE_TEXT, v->p, v->n, err);
        if (v->kind == LAKE_VALUE_INT) snprintf(num, sizeof num, "%lld", (long long)v->i);
        else if (v->kind == LAKE_VALUE_REAL && isfinite(v->r)) realText(v->r, num);
        else if (v->kind == LAKE_VALUE_BOOL) snprintf(num, sizeof num, "%s", v->i ? "true" : "false");
        else return mismatch(c, v, err);
        return putText(w, b, SQLITE_TEXT, num, strlen(num), err);
    }
    case LAKE_TYPE_BLOB:
        if (v->kind == LAKE_VALUE_TEXT && w->opt.hex_blobs) return putHex(w, c, v, b, err);
        if (v->kind == LAKE_VALUE_BLOB || v->kind == LAKE_VALUE_TEXT)
            return putText(w, b, SQLITE_BLOB, v->p, v->n, err);
        return mismatch(c, v, err);
    case LAKE_TYPE_BOOLEAN:
        b->kind = SQLITE_INTEGER;
        if ((v->kind == LAKE_VALUE_BOOL || v->kind == LAKE_VALUE_INT) && (v->i == 0 || v->i == 1)) {
            b->i = v->i;
            return 0;
        }
        if (s && (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)) { b->i = 1; return 0; }
        if (s && (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)) { b->i = 0; return 0; }
        return mismatch(c, v, err);
    case LAKE_TYPE_TIMESTAMP: {
        char ts[64];
        if (s && timestampNormalise(s, ts) == 0) return putText(w, b, SQLITE_TEXT, ts, strlen(ts), err);
        return mismatch(c, v, err);
    }
    case LAKE_TYPE_FILE: {
        if (!s) return mismatch(c, v, err);
        fileValue fv = {.size = -1};
        lakeError e = {0};
        cJSON *j = jsonStrictLoad(s, strlen(s), "not a FILE value", &e);
        int rc = j ? fileValueFromJson(j, &fv, &e) : (int)e.code;
        cJSON_Delete(j);
        if (!rc) rc = stageContains(w->st, fv.location, &e);
        char *canon = rc ? NULL : fileValueToJson(&fv);
        if (!rc && !canon) rc = errSetErrno(&e, LAKE_EFAIL, ENOMEM, "segment");
        if (!rc) rc = putText(w, b, SQLITE_TEXT, canon, strlen(canon), &e);
        /* remembered for append's "files" once the row is stored */
        if (!rc) {
            w->pending[c - w->schema->cols] = fv.location;
            fv.location = NULL;
        }
        free(canon);
        fileValueFree(&fv);
        if (rc) {
            *err = e;
            errPrefix(err, "column %s", c->name);
        }
        return rc;
    }
    }
    return mismatch(c, v, err);
}

/* --- writer -------------------------------------------------------------- */

static int sqlErr(sqlite3 *db, lakeError *err, const char *what) {
    int rc = errSet(err, LAKE_EFAIL, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
    snprintf(err->cause, sizeof err->cause, "sqlite %d", db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM);
    return rc;
}

/* Open a new empty segment file in the temporary directory. */
static int segmentBegin(segmentWriter *w, lakeError *err) {
    int rc = 0;
    char *sql = NULL;
    size_t len = 0;
    FILE *f = NULL;
    memset(w->acc, 0, sizeof *w->acc * (size_t)w->schema->ncols);
    memset(w->racc, 0, sizeof *w->racc * (size_t)w->schema->ncols);
    w->range_rows = 0;
    if (asprintf(&w->path, "%s/segment-%d", w->tmpdir, ++w->nseg) < 0) {
        w->path = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    }
    w->path_slot = interruptTempAdd(AT_FDCWD, w->path, 0);
    if (sqlite3_open_v2(w->path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK)
        return sqlErr(w->db, err, w->path);
    char *table = segmentSchemaTableSql(w->schema, "rows");
    if (!table) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    char *setup = sqlite3_mprintf("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
                                  "PRAGMA cache_size=-%d; %s; " SEGMENT_RANGES_DDL "; BEGIN;", SEGMENT_CACHE_KIB,
                                  table);
    sqlite3_free(table);
    if (!setup) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    if (sqlite3_exec(w->db, setup, NULL, NULL, NULL) != SQLITE_OK) rc = sqlErr(w->db, err, w->path);
    sqlite3_free(setup);
    if (rc) return rc;

    sql = NULL;
    if (!(f = open_memstream(&sql, &len))) return errSetErrno(err, LAKE_EFAIL, errno, "segment");
    fprintf(f, "INSERT INTO rows VALUES(");
    for (int i = 0; i < w->schema->ncols; i++) fprintf(f, "%s?", i ? "," : "");
    fprintf(f, ")");
    if (fclose(f) != 0) { free(sql); return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment"); }
    if (sqlite3_prepare_v2(w->db, sql, -1, &w->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(w->db, "INSERT INTO " SEGMENT_RANGES "(first, last, rows, stats) VALUES(?, ?, ?, ?)", -1,
                           &w->range_ins, NULL) != SQLITE_OK)
        rc = sqlErr(w->db, err, w->path);
    free(sql);
    w->seg_rows = w->since_check = w->est_since_check = 0;
    return rc;
}

/* Close the open segment without keeping it. */
static void segmentDiscard(segmentWriter *w) {
    sqlite3_finalize(w->ins);
    w->ins = NULL;
    sqlite3_finalize(w->range_ins);
    w->range_ins = NULL;
    sqlite3_close(w->db);
    w->db = NULL;
    if (w->path) unlink(w->path);
    interruptTempDrop(w->path_slot);
    w->path_slot = -1;
    free(w->path);
    w->path = NULL;
}

/* Record the open row range's statistics in the segment's SEGMENT_RANGES
 * table and start the next range. */
static int rangeEnd(segmentWriter *w, lakeError *err) {
    if (w->range_rows == 0) return 0;
    cJSON *stats = NULL;
    int rc = statsFromAcc(w, w->racc, &stats, err);
    char *text = rc ? NULL : cJSON_PrintUnformatted(stats);
    cJSON_Delete(stats);
    if (rc) return rc;
    if (!text) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics");
    sqlite3_reset(w->range_ins);
    sqlite3_bind_int64(w->range_ins, 1, w->range_first);
    sqlite3_bind_int64(w->range_ins, 2, w->range_last);
    sqlite3_bind_int64(w->range_ins, 3, w->range_rows);
    sqlite3_bind_text(w->range_ins, 4, text, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(w->range_ins) != SQLITE_DONE) rc = sqlErr(w->db, err, w->path);
    sqlite3_reset(w->range_ins);
    free(text);
    memset(w->racc, 0, sizeof *w->racc * (size_t)w->schema->ncols);
    w->range_rows = 0;
    return rc;
}

/* Commit the open segment, compute its statistics, upload it, record it
 * and delete the file.  An empty segment is just discarded. */
static int segmentEnd(segmentWriter *w, lakeError *err) {
    int rc = 0, fd = -1;
    fileValue fv = {0};
    cJSON *stats = NULL;
    if (!w->db) return 0;
    if (w->seg_rows == 0) { segmentDiscard(w); return 0; }
    sqlite3_finalize(w->ins);
    w->ins = NULL;
    rc = rangeEnd(w, err);
    sqlite3_finalize(w->range_ins);
    w->range_ins = NULL;
    if (rc) goto out;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = sqlErr(w->db, err, w->path);
        goto out;
    }
    if ((rc = statsFromAcc(w, w->acc, &stats, err))) goto out;
    if (sqlite3_close(w->db) != SQLITE_OK) { rc = sqlErr(w->db, err, w->path); goto out; }
    w->db = NULL;
    if ((fd = open(w->path, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", w->path);
        goto out;
    }
    lakeReader r = {fdRead, &fd, "segment"};
    stagePutOptions po = {.content_type = "application/vnd.sqlite3", .expect_size = -1, .progress = w->opt.progress,
                          .stop = w->opt.stop ? w->opt.stop : interruptFlag()};
    if ((rc = stagePutInto(w->st, w->key_dir, &r, &po, &fv, err))) goto out;
    cJSON *rec = cJSON_CreateObject();
    if (!rec || !cJSON_AddItemToArray(w->segments, rec) ||
        !cJSON_AddStringToObject(rec, "location", fv.location) ||
        !cJSON_AddNumberToObject(rec, "size", (double)fv.size) ||
        !cJSON_AddStringToObject(rec, "sha256", fv.sha256) ||
        !cJSON_AddNumberToObject(rec, "rows", (double)w->seg_rows) ||
        !cJSON_AddItemToObject(rec, "stats", stats))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    else stats = NULL; /* rec owns it */
    /* an altered table's column ids (catalog/schema.h); none when 1 to n */
    if (!rc && w->schema->explicit_ids) {
        cJSON *ids = cJSON_AddArrayToObject(rec, "columns");
        for (int i = 0; ids && i < w->schema->ncols; i++)
            if (!cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)w->schema->cols[i].id))) ids = NULL;
        if (!ids) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    }
out:
    if (fd >= 0) close(fd);
    cJSON_Delete(stats);
    fileValueFree(&fv);
    segmentDiscard(w);
    return rc;
}

/* Remove the writer's temporary directory and the segment-N files in it
 * (the only names it creates). */
static void removeTree(const char *dir, int nseg) {
    for (int i = 1; i <= nseg; i++) {
        char *p = NULL;
        if (asprintf(&p, "%s/segment-%d", dir, i) >= 0) unlink(p);
        free(p);
    }
    rmdir(dir);
}

int segmentWriterOpen(stage *st, const char *table_id, const char *schema_json,
                      const segmentWriterOptions *opt, segmentWriter **out,
                      lakeError *err) {
    *out = NULL;
    if (!table_id || !*table_id || strchr(table_id, '/') || strcmp(table_id, ".") == 0 ||
        strcmp(table_id, "..") == 0)
        return errSet(err, LAKE_EUSAGE, "%s: not a table id", table_id ? table_id : "(null)");
    segmentWriter *w = calloc(1, sizeof *w);
    if (!w) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    int rc = 0;
    if (opt) w->opt = *opt;
    if (w->opt.max_bytes <= 0) w->opt.max_bytes = SEGMENT_MAX_BYTES;
    if (w->opt.max_rows <= 0) w->opt.max_rows = SEGMENT_MAX_ROWS;
    w->st = st;
    w->dir_slot = w->path_slot = -1;
    if ((rc = segmentSchemaParse(schema_json, &w->schema, err))) goto out;
    const char *parent = w->opt.tmp_dir;
    if (!parent) parent = getenv("TMPDIR");
    if (!parent || !*parent) parent = "/tmp";
    w->opt.tmp_dir = NULL; /* not kept: the caller's string */
    if (asprintf(&w->key_dir, "tables/%s", table_id) < 0) w->key_dir = NULL;
    if (asprintf(&w->tmpdir, "%s/lake-segments-XXXXXX", parent) < 0) w->tmpdir = NULL;
    w->segments = cJSON_CreateArray();
    w->pending = calloc((size_t)w->schema->ncols, sizeof *w->pending);
    w->bound = calloc((size_t)w->schema->ncols, sizeof *w->bound);
    w->acc = calloc((size_t)w->schema->ncols, sizeof *w->acc);
    w->racc = calloc((size_t)w->schema->ncols, sizeof *w->racc);
    if (!w->key_dir || !w->tmpdir || !w->segments || !w->pending || !w->bound || !w->acc || !w->racc) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
        goto out;
    }
    if (!mkdtemp(w->tmpdir)) {
        rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", w->tmpdir);
        free(w->tmpdir);
        w->tmpdir = NULL;
        goto out;
    }
    w->dir_slot = interruptTempAdd(AT_FDCWD, w->tmpdir, 1);
out:
    if (rc) segmentWriterFree(w);
    else *out = w;
    return rc;
}

const segmentSchema *segmentWriterSchema(const segmentWriter *w) { return w->schema; }

int64_t segmentWriterRows(const segmentWriter *w) { return w->rows; }

/* Close the segment when it has reached its bounds. */
static int maybeRoll(segmentWriter *w, lakeError *err) {
    if (w->seg_rows >= w->opt.max_rows) return segmentEnd(w, err);
    int64_t step = w->opt.max_bytes / 32;
    if (w->est_since_check < (step > 0 ? step : 1) && w->since_check < 4096) return 0;
    w->since_check = w->est_since_check = 0;
    int pages = 0, psize = 0;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(w->db, "SELECT * FROM pragma_page_count, pragma_page_size", -1, &q,
                           NULL) != SQLITE_OK)
        return sqlErr(w->db, err, w->path);
    if (sqlite3_step(q) == SQLITE_ROW) {
        pages = sqlite3_column_int(q, 0);
        psize = sqlite3_column_int(q, 1);
    }
    sqlite3_finalize(q);
    if ((int64_t)pages * psize >= w->opt.max_bytes) return segmentEnd(w, err);
    return 0;
}

/* Drop the FILE locations of a row that was not stored. */
static void pendingClear(segmentWriter *w) {
    for (int i = 0; i < w->schema->ncols; i++) {
        free(w->pending[i]);
        w->pending[i] = NULL;
    }
}

/* Keep the FILE locations of a row that was stored. */
static int pendingKeep(segmentWriter *w, lakeError *err) {
    for (int i = 0; i < w->schema->ncols; i++) {
        if (!w->pending[i]) continue;
        if (w->nfiles == w->files_cap) {
            size_t cap = w->files_cap ? w->files_cap * 2 : 64;
            char **f = realloc(w->files, cap * sizeof *f);
            if (!f) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
            w->files = f;
            w->files_cap = cap;
        }
        /* a run of rows naming the same object is common (lake-put) */
        if (w->nfiles && strcmp(w->files[w->nfiles - 1], w->pending[i]) == 0) free(w->pending[i]);
        else w->files[w->nfiles++] = w->pending[i];
        w->pending[i] = NULL;
    }
    return 0;
}

int segmentWriterCheckValue(segmentWriter *w, int col, const lakeValue *v, lakeError *err) {
    if (col < 0 || col >= w->schema->ncols) return errSet(err, LAKE_EUSAGE, "column %d: no such column", col + 1);
    size_t len = w->scratch_len;
    boundValue b;
    int rc = convert(w, &w->schema->cols[col], v, &b, err);
    w->scratch_len = len;
    free(w->pending[col]); /* a FILE value's location: nothing was stored */
    w->pending[col] = NULL;
    return rc;
}

/* Text a <=> b in memcmp order, where either may be a kept prefix
 * (STATS_KEEP bytes: the value was longer): alike in all the kept bytes
 * is 0, "the same bound". */
static int keptCmp(const unsigned char *a, size_t na, const unsigned char *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c || (na == STATS_KEEP && nb == STATS_KEEP)) return c;
    return na < nb ? -1 : na > nb;
}

/* Count one stored value into a column's statistics. */
static void statsAdd(statsAcc *a, const boundValue *b, const char *scratch) {
    if (b->kind == SQLITE_NULL || (b->kind == SQLITE_FLOAT && isnan(b->r))) { /* SQLite stores NaN as NULL */
        a->nulls++;
        return;
    }
    if (a->has && a->kind != b->kind) a->mixed = 1; /* not what a column holds: no bounds */
    int first = !a->has;
    a->has = 1;
    a->kind = b->kind;
    if (b->kind == SQLITE_INTEGER) {
        if (first || b->i < a->lo_i) a->lo_i = b->i;
        if (first || b->i > a->hi_i) a->hi_i = b->i;
    } else if (b->kind == SQLITE_FLOAT) {
        double r = b->r == 0 ? 0.0 : b->r; /* a segment stores -0.0 as 0 */
        if (first || r < a->lo_r) a->lo_r = r;
        if (first || r > a->hi_r) a->hi_r = r;
    } else if (b->kind == SQLITE_TEXT) {
        const unsigned char *p = (const unsigned char *)(b->n ? scratch + b->off : "");
        size_t n = b->n < STATS_KEEP ? b->n : STATS_KEEP;
        if (first || keptCmp(p, n, a->lo, a->nlo) < 0) {
            memcpy(a->lo, p, n);
            a->nlo = n;
        }
        if (first || keptCmp(p, n, a->hi, a->nhi) > 0) {
            memcpy(a->hi, p, n);
            a->nhi = n;
        }
    }
}

static int rowAdd(segmentWriter *w, const lakeValue *vals, int n, lakeError *err);

int segmentWriterAddRow(segmentWriter *w, const lakeValue *vals, int n, lakeError *err) {
    int rc = rowAdd(w, vals, n, err);
    if (rc) pendingClear(w);
    return rc;
}

/* Convert, store and count one row; the segment may roll over. */
static int rowAdd(segmentWriter *w, const lakeValue *vals, int n, lakeError *err) {
    const segmentSchema *s = w->schema;
    if (n != s->ncols)
        return errSet(err, LAKE_EDATA, "%d values for %d columns", n, s->ncols);
    w->scratch_len = 0;
    int rc;
    for (int i = 0; i < n; i++)
        if ((rc = convert(w, &s->cols[i], &vals[i], &w->bound[i], err))) return rc;
    if (!w->db && (rc = segmentBegin(w, err))) return rc;
    int64_t est = 8;
    for (int i = 0; i < n; i++) {
        const boundValue *b = &w->bound[i];
        /* an empty value still binds a pointer: a NULL one would bind SQL
         * NULL, and the scratch buffer is NULL until something is put */
        const char *p = b->n ? w->scratch + b->off : "";
        int r;
        switch (b->kind) {
        case SQLITE_INTEGER: r = sqlite3_bind_int64(w->ins, i + 1, b->i); est += 8; break;
        case SQLITE_FLOAT: r = sqlite3_bind_double(w->ins, i + 1, b->r); est += 8; break;
        case SQLITE_TEXT: r = sqlite3_bind_text64(w->ins, i + 1, p, b->n, SQLITE_STATIC, SQLITE_UTF8); est += (int64_t)b->n + 2; break;
        case SQLITE_BLOB:
            r = b->n ? sqlite3_bind_blob64(w->ins, i + 1, p, b->n, SQLITE_STATIC) : sqlite3_bind_zeroblob(w->ins, i + 1, 0);
            est += (int64_t)b->n + 2;
            break;
        default: r = sqlite3_bind_null(w->ins, i + 1); est += 1; break;
        }
        if (r != SQLITE_OK) return sqlErr(w->db, err, w->path);
    }
    if (sqlite3_step(w->ins) != SQLITE_DONE) {
        rc = sqlErr(w->db, err, w->path);
        sqlite3_reset(w->ins);
        return rc;
    }
    sqlite3_reset(w->ins);
    sqlite3_clear_bindings(w->ins);
    for (int i = 0; i < n; i++) {
        statsAdd(&w->acc[i], &w->bound[i], w->scratch);
        statsAdd(&w->racc[i], &w->bound[i], w->scratch);
    }
    int64_t rowid = sqlite3_last_insert_rowid(w->db);
    if (w->range_rows++ == 0) w->range_first = rowid;
    w->range_last = rowid;
    if (w->range_rows >= SEGMENT_RANGE_ROWS && (rc = rangeEnd(w, err))) return rc;
    if ((rc = pendingKeep(w, err))) return rc;
    w->rows++;
    w->seg_rows++;
    w->since_check++;
    w->est_since_check += est;
    return maybeRoll(w, err);
}

int segmentWriterAddSqlRow(segmentWriter *w, sqlite3_value **vals, int n, lakeError *err) {
    lakeValue stackv[16], *v = stackv;
    memset(stackv, 0, sizeof stackv);
    if (n > 16) v = calloc((size_t)n, sizeof *v);
    if (!v) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    for (int i = 0; i < n; i++) {
        memset(&v[i], 0, sizeof v[i]);
        switch (sqlite3_value_type(vals[i])) {
        case SQLITE_INTEGER: v[i].kind = LAKE_VALUE_INT; v[i].i = sqlite3_value_int64(vals[i]); break;
        case SQLITE_FLOAT: v[i].kind = LAKE_VALUE_REAL; v[i].r = sqlite3_value_double(vals[i]); break;
        case SQLITE_TEXT:
            v[i].kind = LAKE_VALUE_TEXT;
            v[i].p = (const char *)sqlite3_value_text(vals[i]);
            v[i].n = (size_t)sqlite3_value_bytes(vals[i]);
            break;
        case SQLITE_BLOB:
            v[i].kind = LAKE_VALUE_BLOB;
            v[i].p = sqlite3_value_blob(vals[i]);
            v[i].n = (size_t)sqlite3_value_bytes(vals[i]);
            break;
        default: v[i].kind = LAKE_VALUE_NULL; break;
        }
    }
    int rc = segmentWriterAddRow(w, v, n, err);
    if (v != stackv) free(v);
    return rc;
}

static int strcmpp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int segmentWriterFinish(segmentWriter *w, cJSON **segments, cJSON **files, lakeError *err) {
    if (segments) *segments = NULL;
    if (files) *files = NULL;
    int rc = segmentEnd(w, err);
    if (rc) return rc;
    cJSON *f = files ? cJSON_CreateArray() : NULL;
    if (files && !f) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    if (f && w->nfiles) qsort(w->files, w->nfiles, sizeof *w->files, strcmpp);
    for (size_t i = 0; f && i < w->nfiles; i++) {
        if (i && strcmp(w->files[i], w->files[i - 1]) == 0) continue;
        if (!cJSON_AddItemToArray(f, cJSON_CreateString(w->files[i]))) {
            cJSON_Delete(f);
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
        }
    }
    if (files) *files = f;
    if (segments) {
        *segments = w->segments;
        w->segments = cJSON_CreateArray();
    }
    return 0;
}

void segmentWriterFree(segmentWriter *w) {
    if (!w) return;
    segmentDiscard(w);
    if (w->tmpdir) removeTree(w->tmpdir, w->nseg);
    interruptTempDrop(w->dir_slot);
    free(w->tmpdir);
    free(w->key_dir);
    if (w->pending && w->schema) pendingClear(w);
    free(w->pending);
    segmentSchemaFree(w->schema);
    cJSON_Delete(w->segments);
    for (size_t i = 0; i < w->nfiles; i++) free(w->files[i]);
    free(w->files);
    free(w->bound);
    free(w->acc);
    free(w->racc);
    free(w->scratch);
    free(w->tmp);
    free(w);
}

/* --- statistics ---------------------------------------------------------- */

/* Columns per aggregate SELECT: three result columns each stay below
 * SQLite's 2000. */
#define STATS_COLS_PER_SCAN 600

/* The length of the longest prefix of text p[0..n) (valid UTF-8) that is
 * at most SEGMENT_STATS_TEXT_MAX bytes and ends at a character
 * boundary. */
static size_t statsCut(const unsigned char *p, size_t n) {
    if (n <= SEGMENT_STATS_TEXT_MAX) return n;
    size_t k = SEGMENT_STATS_TEXT_MAX;
    while (k > 0 && (p[k] & 0xC0) == 0x80) k--; /* p[k] continues a character */
    return k;
}

/* Add min and max of one column (result columns lo, hi of q) to entry e
 * when they can be represented; 0, or -1 when out of memory. */
static int statsBounds(sqlite3_stmt *q, int lo, int hi, lakeType type, cJSON *e) {
    int tl = sqlite3_column_type(q, lo), th = sqlite3_column_type(q, hi);
    if (tl == SQLITE_NULL || th == SQLITE_NULL) return 0; /* no value, or BLOB */
    switch (type) {
    case LAKE_TYPE_INTEGER:
    case LAKE_TYPE_BOOLEAN: {
        if (tl != SQLITE_INTEGER || th != SQLITE_INTEGER) return 0;
        int64_t a = sqlite3_column_int64(q, lo), b = sqlite3_column_int64(q, hi);
        const int64_t m = (int64_t)1 << 53;
        double da = (double)a, db = (double)b; /* exact within ±2^53 */
        if (a < -m || a > m || b < -m || b > m || !schemaWidenToExact(&da, &db, JSON_WHOLE_MAX)) return 0;
        return cJSON_AddNumberToObject(e, "min", da) && cJSON_AddNumberToObject(e, "max", db) ? 0 : -1;
    }
    case LAKE_TYPE_REAL: {
        if ((tl != SQLITE_FLOAT && tl != SQLITE_INTEGER) || (th != SQLITE_FLOAT && th != SQLITE_INTEGER)) return 0;
        double a = sqlite3_column_double(q, lo), b = sqlite3_column_double(q, hi);
        if (!isfinite(a) || !isfinite(b) || !schemaWidenToExact(&a, &b, DBL_MAX)) return 0;
        return cJSON_AddNumberToObject(e, "min", a) && cJSON_AddNumberToObject(e, "max", b) ? 0 : -1;
    }
    case LAKE_TYPE_TEXT:
    case LAKE_TYPE_TIMESTAMP:
    case LAKE_TYPE_FILE: {
        if (tl != SQLITE_TEXT || th != SQLITE_TEXT) return 0;
        const unsigned char *a = sqlite3_column_text(q, lo);
        size_t na = (size_t)sqlite3_column_bytes(q, lo);
        const unsigned char *b = sqlite3_column_text(q, hi);
        size_t nb = (size_t)sqlite3_column_bytes(q, hi);
        if (!a || !b) return -1;
        size_t ka = statsCut(a, na), kb = statsCut(b, nb);
        if (memchr(a, 0, ka) || memchr(b, 0, kb)) return 0;
        char ta[SEGMENT_STATS_TEXT_MAX + 1], tb[SEGMENT_STATS_TEXT_MAX + 1];
        memcpy(ta, a, ka);
        ta[ka] = '\0';
        memcpy(tb, b, kb);
        tb[kb] = '\0';
        if (!cJSON_AddStringToObject(e, "min", ta) || !cJSON_AddStringToObject(e, "max", tb)) return -1;
        return kb < nb && !cJSON_AddTrueToObject(e, "max_cut") ? -1 : 0;
    }
    case LAKE_TYPE_BLOB: break;
    }
    return 0;
}

int segmentStatsCompute(sqlite3 *db, const segmentSchema *s, cJSON **out, lakeError *err) {
    *out = NULL;
    cJSON *arr = cJSON_CreateArray();
    sqlite3_stmt *q = NULL;
    char *sql = NULL;
    int rc = 0;
    if (!arr) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics");
    for (int from = 0; from < s->ncols; from += STATS_COLS_PER_SCAN) {
        int to = from + STATS_COLS_PER_SCAN < s->ncols ? from + STATS_COLS_PER_SCAN : s->ncols;
        size_t len = 0;
        FILE *f = open_memstream(&sql, &len);
        if (!f) { rc = errSetErrno(err, LAKE_EFAIL, errno, "segment statistics"); goto out; }
        fputs("SELECT count(*)", f);
        for (int i = from; i < to; i++) {
            const char *c = s->cols[i].name; /* an identifier: nothing to escape */
            if (s->cols[i].type == LAKE_TYPE_BLOB) fprintf(f, ", count(\"%s\"), NULL, NULL", c);
            else fprintf(f, ", count(\"%s\"), min(\"%s\"), max(\"%s\")", c, c, c);
        }
        fputs(" FROM rows", f);
        if (fclose(f) != 0) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics"); goto out; }
        if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK || sqlite3_step(q) != SQLITE_ROW) {
            rc = sqlErr(db, err, "segment statistics");
            goto out;
        }
        int64_t rows = sqlite3_column_int64(q, 0);
        for (int i = from; i < to; i++) {
            int k = 1 + 3 * (i - from);
            cJSON *e = cJSON_CreateObject();
            if (!e || !cJSON_AddItemToArray(arr, e) ||
                !cJSON_AddNumberToObject(e, "nulls", (double)(rows - sqlite3_column_int64(q, k))) ||
                statsBounds(q, k + 1, k + 2, s->cols[i].type, e) != 0) {
                rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics");
                goto out;
            }
        }
        sqlite3_finalize(q);
        q = NULL;
        free(sql);
        sql = NULL;
    }
out:
    sqlite3_finalize(q);
    free(sql);
    if (rc) cJSON_Delete(arr);
    else *out = arr;
    return rc;
}

/* The statistics of the open segment from what its rows added (statsAdd),
 * in the format segmentStatsCompute gives: each column's bounds go
 * through the same statsBounds, bound to a SELECT of two parameters. */
static int statsFromAcc(segmentWriter *w, const statsAcc *acc, cJSON **out, lakeError *err) {
    *out = NULL;
    sqlite3_stmt *q = NULL;
    cJSON *arr = cJSON_CreateArray();
    if (!arr || sqlite3_prepare_v2(w->db, "SELECT ?1, ?2", -1, &q, NULL) != SQLITE_OK) {
        cJSON_Delete(arr);
        return arr ? sqlErr(w->db, err, "segment statistics") : errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics");
    }
    int rc = 0;
    for (int i = 0; i < w->schema->ncols && !rc; i++) {
        const statsAcc *a = &acc[i];
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e) || !cJSON_AddNumberToObject(e, "nulls", (double)a->nulls)) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics");
            break;
        }
        if (!a->has || a->mixed || w->schema->cols[i].type == LAKE_TYPE_BLOB) continue;
        sqlite3_reset(q);
        if (a->kind == SQLITE_INTEGER) {
            sqlite3_bind_int64(q, 1, a->lo_i);
            sqlite3_bind_int64(q, 2, a->hi_i);
        } else if (a->kind == SQLITE_FLOAT) {
            sqlite3_bind_double(q, 1, a->lo_r);
            sqlite3_bind_double(q, 2, a->hi_r);
        } else {
            sqlite3_bind_text64(q, 1, (const char *)a->lo, a->nlo, SQLITE_STATIC, SQLITE_UTF8);
            sqlite3_bind_text64(q, 2, (const char *)a->hi, a->nhi, SQLITE_STATIC, SQLITE_UTF8);
        }
        if (sqlite3_step(q) != SQLITE_ROW) rc = sqlErr(w->db, err, "segment statistics");
        else if (statsBounds(q, 0, 1, w->schema->cols[i].type, e) != 0)
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics");
    }
    sqlite3_finalize(q);
    if (rc) cJSON_Delete(arr);
    else *out = arr;
    return rc;
}

int segmentRecordFile(const cJSON *g, fileValue *out) {
    const cJSON *loc = cJSON_GetObjectItemCaseSensitive(g, "location");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(g, "sha256");
    memset(out, 0, sizeof *out);
    if (!cJSON_IsString(loc) || !jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "size"), 0, &out->size) ||
        !cJSON_IsString(sha) || !sha256IsHex(sha->valuestring))
        return 0;
    out->location = loc->valuestring;
    snprintf(out->sha256, sizeof out->sha256, "%s", sha->valuestring);
    return 1;
}

/* --- row ranges ----------------------------------------------------------- */

int segmentRangesRead(sqlite3 *db, const char *schema, const cJSON *record, cJSON **out) {
    *out = NULL;
    sqlite3_stmt *q = NULL;
    char *sql = sqlite3_mprintf("SELECT first, last, rows, stats FROM \"%w\"." SEGMENT_RANGES " ORDER BY first", schema);
    if (!sql) return 1;
    int prepared = sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK;
    sqlite3_free(sql);
    if (!prepared) return 0; /* a segment from before row ranges */
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(record, "columns");
    cJSON *arr = cJSON_CreateArray();
    int rc = arr ? 0 : 1, ok = 1, n = 0, s = SQLITE_DONE;
    int64_t prev = INT64_MIN;
    while (!rc && ok && (s = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t first = sqlite3_column_int64(q, 0), last = sqlite3_column_int64(q, 1), rows = sqlite3_column_int64(q, 2);
        const char *text = (const char *)sqlite3_column_text(q, 3);
        cJSON *stats = text ? cJSON_Parse(text) : NULL;
        if (!stats || !cJSON_IsArray(stats) || first < 1 || first > last || first <= prev || rows < 1 || rows - 1 > last - first ||
            ++n > SEGMENT_RANGES_MAX) {
            cJSON_Delete(stats);
            ok = 0;
            break;
        }
        prev = last;
        cJSON *r = cJSON_CreateObject();
        if (!r || !cJSON_AddItemToArray(arr, r)) {
            cJSON_Delete(r);
            cJSON_Delete(stats);
            rc = 1;
            break;
        }
        if (!cJSON_AddNumberToObject(r, "first", (double)first) || !cJSON_AddNumberToObject(r, "last", (double)last) ||
            !cJSON_AddNumberToObject(r, "rows", (double)rows) || !cJSON_AddItemToObject(r, "stats", stats))
            rc = 1;
        if (!rc && cols && !cJSON_AddItemToObject(r, "columns", cJSON_Duplicate(cols, 1))) rc = 1;
    }
    if (!rc && ok && s != SQLITE_DONE) ok = 0;
    /* the ranges cover every row of the segment, or are not used */
    int64_t rows = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) rows += (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "rows"));
    if (!rc && ok && record && jsonWhole(cJSON_GetObjectItemCaseSensitive(record, "rows"), 0, &prev) && prev != rows)
        ok = 0;
    sqlite3_finalize(q);
    if (rc || !ok) cJSON_Delete(arr);
    else *out = arr;
    return rc;
}

/* --- reader -------------------------------------------------------------- */

struct segmentReader {
    sqlite3 *db;
    int ncols;  /* the schema's */
    char *view; /* the select list reading `rows` through the schema, or NULL */
};

/* How the file's columns (names, declared types, ids) meet schema s: the
 * select list of a view that reads them as s's columns, by id ("x" AS "y",
 * NULL AS "new", and the rowid last) into *view, or NULL when the file
 * has s's columns by id, name and order (read as it is).  65 when a
 * column the two share has another type, or ids is not one per column. */
static int mapColumns(const segmentSchema *s, sqlite3_stmt *q, const int64_t *ids, int n, const char *path,
                      char **view, lakeError *err) {
    *view = NULL;
    int same = n == s->ncols;
    for (int i = 0; i < s->ncols; i++) {
        int at = -1;
        for (int j = 0; j < n && at < 0; j++)
            if (ids[j] == s->cols[i].id) at = j;
        const char *type = at >= 0 ? sqlite3_column_decltype(q, at) : NULL;
        if (at >= 0 && (!type || strcasecmp(type, lakeTypeDecl(s->cols[i].type)) != 0))
            return errSet(err, LAKE_EDATA, "%s: column %d of the segment is not %s %s", path, at + 1,
                          s->cols[i].name, lakeTypeName(s->cols[i].type));
        const char *name = at >= 0 ? sqlite3_column_name(q, at) : NULL;
        if (at != i || !name || strcmp(name, s->cols[i].name) != 0) same = 0;
    }
    if (same) return 0;
    sqlite3_str *v = sqlite3_str_new(NULL);
    for (int i = 0; i < s->ncols; i++) {
        int at = -1;
        for (int j = 0; j < n && at < 0; j++)
            if (ids[j] == s->cols[i].id) at = j;
        if (at >= 0) sqlite3_str_appendf(v, "\"%w\" AS \"%w\", ", sqlite3_column_name(q, at), s->cols[i].name);
        else sqlite3_str_appendf(v, "NULL AS \"%w\", ", s->cols[i].name);
    }
    /* a view has no rowid of its own: the plans' "SELECT rowid, …" read
     * this column, the segment's */
    sqlite3_str_appendall(v, "rowid AS rowid");
    if (!(*view = sqlite3_str_finish(v))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
    return 0;
}

int segmentReaderOpen(const char *path, const char *schema_json, const cJSON *record, segmentReader **out,
                      lakeError *err) {
    *out = NULL;
    segmentSchema *s = NULL;
    segmentReader *r = NULL;
    sqlite3_stmt *q = NULL;
    char *uri = NULL, *create = NULL;
    int64_t *ids = NULL;
    int rc = 0;
    struct stat st;
    if (stat(path, &st) < 0) return errSetErrno(err, errCodeForErrno(errno), errno, "%s", path);
    if ((rc = segmentSchemaParse(schema_json, &s, err))) return rc;
    if (!(r = calloc(1, sizeof *r))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
        goto out;
    }
    r->ncols = s->ncols;
    /* A URI path: escape what a URI would read as syntax. */
    {
        char *esc = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&esc, &len);
        if (!f) { rc = errSetErrno(err, LAKE_EFAIL, errno, "segment"); goto out; }
        fputs("file:", f);
        for (const char *p = path; *p; p++)
            if (strchr("%?#", *p)) fprintf(f, "%%%02X", (unsigned char)*p);
            else fputc(*p, f);
        fputs("?immutable=1", f);
        fclose(f);
        uri = sqlite3_mprintf("%s", esc);
        free(esc);
        if (!uri) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment"); goto out; }
    }
    if (sqlite3_open_v2(uri, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        rc = sqlErr(r->db, err, path);
        err->code = LAKE_EDATA;
        goto out;
    }
    /* a segment is immutable and pinned while read: map it rather than
     * copy it page by page (SQLite caps the map at its own limit) */
    sqlite3_exec(r->db, "PRAGMA mmap_size=268435456", NULL, NULL, NULL);
    /* the columns' names and declared types, from a statement's prepare
     * alone (pragma_table_info costs as much again) */
    if (sqlite3_prepare_v2(r->db, "SELECT * FROM rows", -1, &q, NULL) != SQLITE_OK) {
        rc = errSet(err, LAKE_EDATA, "%s: not a segment: %s", path, sqlite3_errmsg(r->db));
        goto out;
    }
    int n = sqlite3_column_count(q);
    if (!(ids = calloc((size_t)n + 1, sizeof *ids))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment");
        goto out;
    }
    /* the file's columns by id: its record's "columns", else 1 to n */
    if (segmentRecordColumns(record, n, ids, n) != n) {
        rc = errSet(err, LAKE_EDATA, "%s: not a segment of this table (%d columns, not as its record says)", path, n);
        goto out;
    }
    if ((rc = mapColumns(s, q, ids, n, path, &r->view, err))) goto out;
    /* read through the schema: a temporary view named rows comes before
     * main.rows in every unqualified name */
    if (r->view && (!(create = sqlite3_mprintf("CREATE TEMP VIEW rows AS SELECT %s FROM main.rows", r->view)) ||
                    sqlite3_exec(r->db, create, NULL, NULL, NULL) != SQLITE_OK)) {
        rc = errSet(err, LAKE_EDATA, "%s: a segment cannot be read through the schema", path);
        goto out;
    }
out:
    sqlite3_finalize(q);
    sqlite3_free(uri);
    sqlite3_free(create);
    free(ids);
    segmentSchemaFree(s);
    if (rc) segmentReaderClose(r);
    else *out = r;
    return rc;
}

int segmentReaderViewSql(const segmentReader *r, const char *schema, char **sql) {
    *sql = r->view ? sqlite3_mprintf("CREATE TEMP VIEW rows AS SELECT %s FROM \"%w\".rows", r->view, schema) : NULL;
    return r->view && !*sql ? -1 : 0;
}

int segmentReaderColumns(const segmentReader *r) { return r->ncols; }

sqlite3 *segmentReaderDb(segmentReader *r) { return r->db; }

int segmentReaderCount(segmentReader *r, int64_t *rows, lakeError *err) {
    sqlite3_stmt *q;
    *rows = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT count(*) FROM rows", -1, &q, NULL) != SQLITE_OK)
        return sqlErr(r->db, err, "segment");
    int rc = sqlite3_step(q) == SQLITE_ROW ? 0 : sqlErr(r->db, err, "segment");
    if (!rc) *rows = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return rc;
}

void segmentReaderClose(segmentReader *r) {
    if (!r) return;
    sqlite3_close(r->db);
    sqlite3_free(r->view);
    free(r);
}
