/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_segment.c - unit tests of lib/query/segment: every column type
 * written into segments (a tiny size bound forces rollover), uploaded to a
 * temporary local stage, read back and compared; records match the stored
 * objects; type errors; the reader's schema check; key_dir puts.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sha256.h"
#include "query/segment.h"
#include "stage/stage.h"
#include "tap.h"

static const char *schema =
    "[{\"name\":\"k\",\"type\":\"INTEGER\"},{\"name\":\"x\",\"type\":\"REAL\"},"
    "{\"name\":\"s\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
    "{\"name\":\"ok\",\"type\":\"BOOLEAN\"},{\"name\":\"t\",\"type\":\"TIMESTAMP\"},"
    "{\"name\":\"f\",\"type\":\"FILE\"}]";

static char root[256], stageUrlBuf[300], tmpParent[300];

static char *fileJson; /* a FILE value inside the stage */

static ssize_t strRead(void *ctx, void *buf, size_t len) {
    const char **p = ctx;
    size_t n = strlen(*p) < len ? strlen(*p) : len;
    memcpy(buf, *p, n);
    *p += n;
    return (ssize_t)n;
}

/* The hex SHA-256 and size of a local file. */
static int64_t fileDigest(const char *path, char hex[65]) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    sha256Ctx *h = sha256New();
    char buf[65536];
    ssize_t n;
    int64_t total = 0;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        sha256Update(h, buf, (size_t)n);
        total += n;
    }
    close(fd);
    sha256FinalHex(h, hex);
    sha256Free(h);
    return total;
}

static int dirEntries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Row i of the round-trip table, as lakeValues (text in buf). */
static void makeRow(int i, lakeValue v[7], char sbuf[64], char bbuf[8], char tbuf[64]) {
    memset(v, 0, 7 * sizeof *v);
    v[0] = (lakeValue){.kind = LAKE_VALUE_INT, .i = (int64_t)i * 1000003 - 5};
    v[1] = (lakeValue){.kind = LAKE_VALUE_REAL, .r = i / 7.0};
    snprintf(sbuf, 64, "row %d, \"quoted\" \xc3\xa9", i);
    v[2] = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = sbuf, .n = strlen(sbuf)};
    bbuf[0] = 'a'; bbuf[1] = '\0'; bbuf[2] = (char)i; bbuf[3] = '\0';
    v[3] = (lakeValue){.kind = LAKE_VALUE_BLOB, .p = bbuf, .n = 4};
    v[4] = (lakeValue){.kind = LAKE_VALUE_BOOL, .i = i % 2};
    snprintf(tbuf, 64, "2026-12-02T%02d:08:02.5+02:00", i % 24);
    v[5] = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = tbuf, .n = strlen(tbuf)};
    v[6] = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = fileJson, .n = strlen(fileJson)};
    if (i % 10 == 3) /* NULLs in every column */
        for (int c = 0; c < 7; c++) v[c] = (lakeValue){.kind = LAKE_VALUE_NULL};
}

static void testRoundTrip(stage *st) {
    lakeError err = {0};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent, .max_bytes = 32768};
    ok(segmentWriterOpen(st, "T01", schema, &o, &w, &err) == 0, "open a writer");
    ok(dirEntries(tmpParent) == 1, "the writer made one temporary directory");
    const int N = 600;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        lakeValue v[7];
        char s[64], b[8], t[64];
        makeRow(i, v, s, b, t);
        if (segmentWriterAddRow(w, v, 7, &err)) { bad++; fprintf(stderr, "%s\n", err.msg); }
    }
    ok(bad == 0 && segmentWriterRows(w) == N, "%d rows of every type added", N);
    cJSON *segs = NULL, *files = NULL;
    ok(segmentWriterFinish(w, &segs, &files, &err) == 0, "finish uploads the last segment");
    segmentWriterFree(w);
    ok(dirEntries(tmpParent) == 0, "no temporary files are left");
    int nseg = cJSON_GetArraySize(segs);
    ok(nseg > 1, "a tiny size bound rolls over (%d segments)", nseg);
    ok(cJSON_GetArraySize(files) == 1, "the one referenced FILE location is recorded once");

    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s/tables/T01/", stageUrlBuf);
    int64_t total = 0, i = 0;
    int located = 1, digests = 1, matches = 1, counted = 1;
    cJSON *rec;
    cJSON_ArrayForEach(rec, segs) {
        const char *loc = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "location"));
        int64_t rows = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "rows"));
        total += rows;
        if (!loc || strncmp(loc, prefix, strlen(prefix)) != 0) { located = 0; continue; }
        const char *path = loc + strlen("file://");
        char hex[65];
        int64_t size = fileDigest(path, hex);
        if (size != (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "size")) ||
            strcmp(hex, cJSON_GetStringValue(cJSON_GetObjectItem(rec, "sha256"))) != 0)
            digests = 0;
        segmentReader *r;
        if (segmentReaderOpen(path, schema, NULL, &r, &err)) { matches = 0; fprintf(stderr, "%s\n", err.msg); continue; }
        int64_t count;
        if (segmentReaderCount(r, &count, &err) || count != rows) counted = 0;
        sqlite3_stmt *q;
        sqlite3_prepare_v2(segmentReaderDb(r), "SELECT k,x,s,b,ok,t,f,typeof(b),typeof(ok) FROM rows", -1, &q, NULL);
        while (sqlite3_step(q) == SQLITE_ROW) {
            lakeValue v[7];
            char s[64], b[8], t[64], want[64];
            makeRow((int)i, v, s, b, t);
            if (v[0].kind == LAKE_VALUE_NULL) {
                for (int c = 0; c < 7; c++)
                    if (sqlite3_column_type(q, c) != SQLITE_NULL) matches = 0;
            } else {
                int h = (int)(i % 24); /* +02:00 is two hours ahead of UTC */
                snprintf(want, sizeof want, "2026-12-%02dT%02d:08:02.5Z", h >= 2 ? 2 : 1,
                         h >= 2 ? h - 2 : h + 22);
                const char *tt = (const char *)sqlite3_column_text(q, 5);
                if (sqlite3_column_int64(q, 0) != v[0].i || sqlite3_column_double(q, 1) != v[1].r ||
                    strcmp((const char *)sqlite3_column_text(q, 2), s) != 0 ||
                    sqlite3_column_bytes(q, 3) != 4 || memcmp(sqlite3_column_blob(q, 3), b, 4) != 0 ||
                    sqlite3_column_int(q, 4) != v[4].i || !tt || strcmp(tt, want) != 0 ||
                    strcmp((const char *)sqlite3_column_text(q, 6), fileJson) != 0 ||
                    strcmp((const char *)sqlite3_column_text(q, 7), "blob") != 0 ||
                    strcmp((const char *)sqlite3_column_text(q, 8), "integer") != 0) {
                    matches = 0;
                    fprintf(stderr, "row %lld differs (t=%s want %s)\n", (long long)i, tt, want);
                }
            }
            i++;
        }
        sqlite3_finalize(q);
        segmentReaderClose(r);
    }
    ok(located, "segments are stored under tables/<table-id>/ in the stage");
    ok(digests, "each record's size and SHA-256 are the stored object's");
    ok(counted, "each record's row count is the segment's");
    ok(total == N && i == N, "all %d rows come back, in order (%lld)", N, (long long)i);
    ok(matches, "every value of every type (NULLs, BLOBs with NUL bytes) reads back as written");

    /* Read through a later schema of the table: by id, whatever the names. */
    const char *loc = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(segs, 0), "location"));
    segmentReader *r;
    int mapped = 0;
    if (segmentReaderOpen(loc + 7, "[{\"name\":\"extra\",\"type\":\"TEXT\",\"id\":9},"
                          "{\"name\":\"key\",\"type\":\"INTEGER\",\"id\":1}]", NULL, &r, &err) == 0) {
        sqlite3_stmt *q = NULL;
        char *view = NULL;
        mapped = segmentReaderColumns(r) == 2 && segmentReaderViewSql(r, "s", &view) == 0 && view &&
                 strstr(view, "FROM \"s\".rows") &&
                 sqlite3_prepare_v2(segmentReaderDb(r), "SELECT rowid, extra, key FROM rows ORDER BY rowid DESC",
                                    -1, &q, NULL) == SQLITE_OK &&
                 sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) > 1 &&
                 sqlite3_column_type(q, 1) == SQLITE_NULL && sqlite3_column_type(q, 2) != SQLITE_TEXT;
        sqlite3_finalize(q);
        sqlite3_free(view);
        segmentReaderClose(r);
    }
    ok(mapped, "a segment read through a later schema: a renamed column by its id, an added one NULL, the rowid kept");
    cJSON *withIds = cJSON_Parse("{\"columns\":[3,1]}");
    ok(segmentReaderOpen(loc + 7, schema, withIds, &r, &err) == LAKE_EDATA,
       "a record whose columns are not one id per column of the file is refused (65)");
    cJSON_Delete(withIds);
    ok(segmentReaderOpen(loc + 7, "[{\"name\":\"k\",\"type\":\"TEXT\"},{\"name\":\"x\",\"type\":\"REAL\"},"
                         "{\"name\":\"s\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
                         "{\"name\":\"ok\",\"type\":\"BOOLEAN\"},{\"name\":\"t\",\"type\":\"TIMESTAMP\"},"
                         "{\"name\":\"f\",\"type\":\"FILE\"}]", NULL, &r, &err) == LAKE_EDATA,
       "a column of another type is refused (65)");
    ok(segmentReaderOpen("/nonexistent/seg", schema, NULL, &r, &err) == LAKE_ENOINPUT,
       "a missing segment file is 66");
    char junk[400];
    snprintf(junk, sizeof junk, "%s/junk", root);
    FILE *f = fopen(junk, "w");
    fputs("not a database at all, just text that is long enough to look like a header......", f);
    fclose(f);
    ok(segmentReaderOpen(junk, schema, NULL, &r, &err) == LAKE_EDATA, "a file that is no SQLite database is 65");
    cJSON_Delete(segs);
    cJSON_Delete(files);
}

static void testRowBound(stage *st) {
    lakeError err = {0};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent, .max_rows = 10};
    segmentWriterOpen(st, "T02", "[{\"name\":\"k\",\"type\":\"INTEGER\"}]", &o, &w, &err);
    for (int i = 0; i < 25; i++) {
        lakeValue v = {.kind = LAKE_VALUE_INT, .i = i};
        segmentWriterAddRow(w, &v, 1, &err);
    }
    cJSON *segs;
    segmentWriterFinish(w, &segs, NULL, &err);
    ok(cJSON_GetArraySize(segs) == 3 &&
           cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(segs, 2), "rows")) == 5,
       "max_rows 10 splits 25 rows into 10 + 10 + 5");
    cJSON_Delete(segs);
    segmentWriterFree(w);

    segmentWriterOpen(st, "T03", "[{\"name\":\"k\",\"type\":\"INTEGER\"}]", NULL, &w, &err);
    ok(segmentWriterFinish(w, &segs, NULL, &err) == 0 && cJSON_GetArraySize(segs) == 0,
       "a writer without rows uploads nothing");
    cJSON_Delete(segs);
    segmentWriterFree(w);
}

/* Add one row of a single column of type type holding v; the rc. */
static int one(stage *st, const char *type, lakeValue v, char *stored, size_t cap, lakeError *err) {
    char sch[128];
    snprintf(sch, sizeof sch, "[{\"name\":\"c\",\"type\":\"%s\"}]", type);
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent};
    if (segmentWriterOpen(st, "T04", sch, &o, &w, err)) return -1;
    int rc = segmentWriterAddRow(w, &v, 1, err);
    cJSON *segs = NULL;
    if (!rc && stored && !(rc = segmentWriterFinish(w, &segs, NULL, err))) {
        const char *loc = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(segs, 0), "location"));
        segmentReader *r;
        if (!(rc = segmentReaderOpen(loc + 7, sch, NULL, &r, err))) {
            sqlite3_stmt *q;
            sqlite3_prepare_v2(segmentReaderDb(r), "SELECT quote(c) FROM rows", -1, &q, NULL);
            if (sqlite3_step(q) == SQLITE_ROW) snprintf(stored, cap, "%s", sqlite3_column_text(q, 0));
            sqlite3_finalize(q);
            segmentReaderClose(r);
        }
    }
    cJSON_Delete(segs);
    segmentWriterFree(w);
    return rc;
}

#define TXT(s) ((lakeValue){.kind = LAKE_VALUE_TEXT, .p = (s), .n = sizeof(s) - 1})

static void testConversions(stage *st) {
    lakeError err = {0};
    char got[512];
    ok(one(st, "INTEGER", TXT("abc"), NULL, 0, &err) == LAKE_EDATA && strstr(err.msg, "column c") &&
           strstr(err.msg, "'abc'"),
       "'abc' for INTEGER is 65 naming the column (%s)", err.msg);
    ok(one(st, "INTEGER", TXT("12x"), NULL, 0, &err) == LAKE_EDATA, "'12x' for INTEGER is 65");
    ok(one(st, "INTEGER", TXT(""), NULL, 0, &err) == LAKE_EDATA, "'' for INTEGER is 65");
    ok(one(st, "INTEGER", TXT("99999999999999999999"), NULL, 0, &err) == LAKE_EDATA,
       "an out-of-range INTEGER is 65");
    ok(one(st, "INTEGER", TXT("-9223372036854775808"), got, sizeof got, &err) == 0 &&
           strcmp(got, "-9223372036854775808") == 0, "the smallest INTEGER fits exactly");
    ok(one(st, "INTEGER", (lakeValue){.kind = LAKE_VALUE_REAL, .r = 2.5}, NULL, 0, &err) == LAKE_EDATA,
       "2.5 for INTEGER is 65");
    ok(one(st, "INTEGER", (lakeValue){.kind = LAKE_VALUE_REAL, .r = 42.0}, got, sizeof got, &err) == 0 &&
           strcmp(got, "42") == 0, "42.0 for INTEGER is 42");
    ok(one(st, "REAL", TXT("1e3"), got, sizeof got, &err) == 0 && strcmp(got, "1000.0") == 0,
       "'1e3' for REAL is 1000.0");
    ok(one(st, "REAL", TXT("nan"), NULL, 0, &err) == LAKE_EDATA, "'nan' for REAL is 65");
    ok(one(st, "TEXT", TXT("caf\xc3"), NULL, 0, &err) == LAKE_EDATA && strstr(err.msg, "UTF-8"),
       "invalid UTF-8 for TEXT is 65");
    ok(one(st, "TEXT", (lakeValue){.kind = LAKE_VALUE_INT, .i = 7}, got, sizeof got, &err) == 0 &&
           strcmp(got, "'7'") == 0, "an integer for TEXT is its decimal text");
    ok(one(st, "BOOLEAN", TXT("TRUE"), got, sizeof got, &err) == 0 && strcmp(got, "1") == 0,
       "'TRUE' for BOOLEAN is 1");
    ok(one(st, "BOOLEAN", (lakeValue){.kind = LAKE_VALUE_INT, .i = 2}, NULL, 0, &err) == LAKE_EDATA,
       "2 for BOOLEAN is 65");
    ok(one(st, "TIMESTAMP", TXT("2026-12-02 15:08:02-01:30"), got, sizeof got, &err) == 0 &&
           strcmp(got, "'2026-12-02T16:38:02Z'") == 0, "a TIMESTAMP is normalised to UTC (%s)", got);
    ok(one(st, "TIMESTAMP", TXT("2026-02-29T00:00:00Z"), NULL, 0, &err) == LAKE_EDATA,
       "29 February of a common year is 65");
    ok(one(st, "TIMESTAMP", TXT("yesterday"), NULL, 0, &err) == LAKE_EDATA, "'yesterday' is 65");
    ok(one(st, "FILE", TXT("{\"location\":\"file:///elsewhere/x\",\"size\":1,\"sha256\":"
                           "\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"}"),
           NULL, 0, &err) == LAKE_EDATA && strstr(err.msg, "outside"),
       "a FILE value outside the stage is 65 (%s)", err.msg);
    ok(one(st, "FILE", TXT("{\"size\":1}"), NULL, 0, &err) == LAKE_EDATA, "an invalid FILE value is 65");
    ok(one(st, "BLOB", (lakeValue){.kind = LAKE_VALUE_REAL, .r = 1}, NULL, 0, &err) == LAKE_EDATA,
       "a number for BLOB is 65");
    /* the first row of a writer: its scratch buffer is still NULL */
    ok(one(st, "TEXT", TXT(""), got, sizeof got, &err) == 0 && strcmp(got, "''") == 0,
       "'' is stored as '', not NULL (%s)", got);
    ok(one(st, "BLOB", (lakeValue){.kind = LAKE_VALUE_BLOB, .p = NULL, .n = 0}, got, sizeof got, &err) == 0 &&
           strcmp(got, "X''") == 0,
       "x'' is stored as x'', not NULL (%s)", got);
    ok(one(st, "TEXT", TXT("a\0b"), got, sizeof got, &err) == 0, "TEXT may hold a NUL byte");
    ok(one(st, "REAL", TXT("4.9e-324"), got, sizeof got, &err) == 0 && strcmp(got, "4.94065645841247e-324") == 0,
       "'4.9e-324' for REAL is the smallest subnormal, not 65 (%s)", got);
    ok(one(st, "TEXT", (lakeValue){.kind = LAKE_VALUE_REAL, .r = 0.1}, got, sizeof got, &err) == 0 &&
           strcmp(got, "'0.1'") == 0,
       "a REAL for TEXT is its shortest exact text (%s)", got);

    /* A failed row leaves the segment as it was. */
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent};
    segmentWriterOpen(st, "T05", "[{\"name\":\"a\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"INTEGER\"}]",
                      &o, &w, &err);
    lakeValue row[2] = {TXT("x"), TXT("nope")};
    ok(segmentWriterAddRow(w, row, 2, &err) == LAKE_EDATA && segmentWriterRows(w) == 0,
       "a row with a bad value is not added");
    ok(segmentWriterAddRow(w, row, 1, &err) == LAKE_EDATA, "a row of the wrong width is 65");
    ok(segmentWriterCheckValue(w, 1, &row[1], &err) == LAKE_EDATA && strstr(err.msg, "column b") &&
           segmentWriterCheckValue(w, 1, &TXT("-12"), &err) == 0 &&
           segmentWriterCheckValue(w, 0, &row[0], &err) == 0 && segmentWriterRows(w) == 0,
       "a value is checked against its column without storing a row");
    /* SQL values, as an INSERT passes them */
    sqlite3 *db;
    sqlite3_stmt *q;
    sqlite3_open(":memory:", &db);
    sqlite3_prepare_v2(db, "SELECT 'hello', 41 + 1", -1, &q, NULL);
    sqlite3_step(q);
    sqlite3_value *vals[2] = {sqlite3_column_value(q, 0), sqlite3_column_value(q, 1)};
    ok(segmentWriterAddSqlRow(w, vals, 2, &err) == 0 && segmentWriterRows(w) == 1,
       "a row of SQL values is added");
    sqlite3_finalize(q);
    sqlite3_close(db);
    segmentWriterFree(w);
    ok(dirEntries(tmpParent) == 0, "a writer freed without finishing leaves no temporary files");

    ok(segmentWriterOpen(st, "../x", "[{\"name\":\"a\",\"type\":\"TEXT\"}]", &o, &w, &err) == LAKE_EUSAGE,
       "a table id with a slash is refused");
    ok(segmentWriterOpen(st, "T", "[{\"name\":\"a\",\"type\":\"TINYINT\"}]", &o, &w, &err) == LAKE_EDATA,
       "an unknown type in the schema is 65");
}

/* Only the FILE values of rows that were stored are reported. */
static void testFiles(stage *st) {
    lakeError err = {0};
    const char *data = "other", *p = data;
    lakeReader r = {strRead, &p, "other"};
    stagePutOptions po = {.content_type = "text/plain", .expect_size = -1};
    fileValue fv;
    stagePut(st, &r, &po, &fv, &err);
    char *other = fileValueToJson(&fv);
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent};
    segmentWriterOpen(st, "T06", "[{\"name\":\"f\",\"type\":\"FILE\"},{\"name\":\"n\",\"type\":\"INTEGER\"}]",
                      &o, &w, &err);
    lakeValue a[2] = {{.kind = LAKE_VALUE_TEXT, .p = fileJson, .n = strlen(fileJson)},
                      {.kind = LAKE_VALUE_INT, .i = 1}};
    lakeValue b[2] = {{.kind = LAKE_VALUE_TEXT, .p = other, .n = strlen(other)}, TXT("bad")};
    segmentWriterAddRow(w, a, 2, &err);
    ok(segmentWriterAddRow(w, b, 2, &err) == LAKE_EDATA, "a row with a FILE and a bad INTEGER fails");
    segmentWriterAddRow(w, a, 2, &err);
    cJSON *segs, *files;
    segmentWriterFinish(w, &segs, &files, &err);
    ok(cJSON_GetArraySize(files) == 1 &&
           strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(files, 0)), fv.location) != 0,
       "files lists only the locations of stored rows, once each");
    cJSON_Delete(segs);
    cJSON_Delete(files);
    segmentWriterFree(w);
    fileValueFree(&fv);
    free(other);
}

static void testKeyDir(stage *st) {
    lakeError err = {0};
    fileValue fv;
    const char *data = "x", *p = data;
    lakeReader r = {strRead, &p, "x"};
    stagePutOptions po = {.content_type = "text/plain", .expect_size = -1};
    ok(stagePutInto(st, "../escape", &r, &po, &fv, &err) == LAKE_EUSAGE, "key_dir with .. is refused");
    ok(stagePutInto(st, "tables/x/", &r, &po, &fv, &err) == LAKE_EUSAGE, "key_dir with a trailing / is refused");
    ok(stagePutInto(st, "/abs", &r, &po, &fv, &err) == LAKE_EUSAGE, "an absolute key_dir is refused");
    ok(stagePutInto(st, "a/b", &r, &po, &fv, &err) == 0 && strstr(fv.location, "/a/b/") &&
           stageContains(st, fv.location, &err) == 0,
       "a put into a/b lands inside the stage under a/b/");
    fileValueFree(&fv);
}

/* --- statistics ------------------------------------------------------------ */

static int statsAllValid = 1; /* every record's stats pass the server's check */

/* Write vals (n rows) into one column of type type; the unformatted JSON
 * of the column's statistics (caller frees), or NULL.  The record's stats
 * must also pass segmentStatsCheck, as lake-metasrv's append checks
 * them. */
static char *statsOf(stage *st, const char *type, const lakeValue *vals, int n) {
    char sch[128];
    snprintf(sch, sizeof sch, "[{\"name\":\"c\",\"type\":\"%s\"}]", type);
    lakeError err = {0};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent};
    if (segmentWriterOpen(st, "T07", sch, &o, &w, &err)) return NULL;
    char *out = NULL, *canon = NULL;
    cJSON *segs = NULL;
    for (int i = 0; i < n; i++)
        if (segmentWriterAddRow(w, &vals[i], 1, &err)) { fprintf(stderr, "%s\n", err.msg); goto out; }
    if (segmentWriterFinish(w, &segs, NULL, &err) || cJSON_GetArraySize(segs) != 1) goto out;
    const cJSON *stats = cJSON_GetObjectItem(cJSON_GetArrayItem(segs, 0), "stats");
    out = cJSON_PrintUnformatted(cJSON_GetArrayItem(stats, 0));
    if (segmentStatsCheck(stats, segmentWriterSchema(w), n, &canon, &err) || !canon) {
        fprintf(stderr, "not accepted: %s (%s)\n", out, err.msg);
        statsAllValid = 0;
    }
out:
    free(canon);
    cJSON_Delete(segs);
    segmentWriterFree(w);
    return out;
}

/* statsOf compared with want. */
static int statsAre(stage *st, const char *type, const lakeValue *vals, int n, const char *want) {
    char *got = statsOf(st, type, vals, n);
    int same = got && strcmp(got, want) == 0;
    if (!same) fprintf(stderr, "stats %s, want %s\n", got ? got : "(none)", want);
    free(got);
    return same;
}

#define INT(x) ((lakeValue){.kind = LAKE_VALUE_INT, .i = (x)})
#define REAL(x) ((lakeValue){.kind = LAKE_VALUE_REAL, .r = (x)})
#define NUL ((lakeValue){.kind = LAKE_VALUE_NULL})
#define TXTN(s, len) ((lakeValue){.kind = LAKE_VALUE_TEXT, .p = (s), .n = (len)})

/* What the writer records, for every type. */
static void testStatsWritten(stage *st) {
    lakeValue v[8];
    v[0] = NUL; v[1] = NUL; v[2] = NUL;
    ok(statsAre(st, "INTEGER", v, 3, "{\"nulls\":3}"), "a column of NULLs has only its null count");
    v[0] = INT(-5); v[1] = NUL; v[2] = INT(7); v[3] = INT(-4503599627370497LL); v[4] = NUL;
    ok(statsAre(st, "INTEGER", v, 5, "{\"nulls\":2,\"min\":-4503599627370497,\"max\":7}"),
       "INTEGER: nulls, and negative bounds");
    v[0] = INT(9007199254740990LL); v[1] = INT(-9007199254740990LL);
    ok(statsAre(st, "INTEGER", v, 2, "{\"nulls\":0,\"min\":-9.00719925474099e+15,\"max\":9.00719925474099e+15}"),
       "INTEGER: bounds near ±2^53 that print exactly are kept");
    v[0] = INT(9007199254740991LL); v[1] = INT(-9007199254740991LL);
    ok(statsAre(st, "INTEGER", v, 2, "{\"nulls\":0}"),
       "INTEGER: 2^53-1, which cJSON prints as 2^53-2, moves out of range and drops both bounds");
    v[0] = INT(9007199254740992LL);
    ok(statsAre(st, "INTEGER", v, 1, "{\"nulls\":0}"), "INTEGER: 2^53, which cJSON prints inexactly, too");
    v[0] = INT(1); v[1] = INT(9007199254740993LL);
    ok(statsAre(st, "INTEGER", v, 2, "{\"nulls\":0}"), "INTEGER: a max beyond 2^53 drops both bounds");
    v[0] = INT(INT64_MIN); v[1] = INT(0);
    ok(statsAre(st, "INTEGER", v, 2, "{\"nulls\":0}"), "INTEGER: a min below -2^53 drops both bounds");

    v[0] = REAL(2.5); v[1] = REAL(-0.0); v[2] = NUL;
    ok(statsAre(st, "REAL", v, 3, "{\"nulls\":1,\"min\":0,\"max\":2.5}"),
       "REAL: -0.0 (a segment stores it as 0) is the bound 0");
    v[0] = REAL(0.1); v[1] = REAL(-1.7976931348623157e308); v[2] = REAL(4.9e-324);
    ok(statsAre(st, "REAL", v, 3, "{\"nulls\":0}"),
       "REAL: -DBL_MAX, which cJSON prints as -Inf, drops both bounds");
    v[0] = REAL(0.1); v[1] = REAL(-1e308); v[2] = REAL(4.9e-324); v[3] = REAL(0.1 + 0.2);
    char *got = statsOf(st, "REAL", v, 4);
    cJSON *j = got ? cJSON_Parse(got) : NULL;
    double lo = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "min")), hi = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "max"));
    ok(j && lo == -1e308 && hi > 0.1 + 0.2 && hi == 0.3000000000000001,
       "REAL: 0.1+0.2, which cJSON would print as 0.3, is a max one unit in the last place up (%s)", got);
    /* printed and parsed again, the bounds do not move */
    char *again = cJSON_PrintUnformatted(j);
    ok(again && got && strcmp(again, got) == 0, "the bounds print the same after a parse (%s)", again);
    free(again);
    cJSON_Delete(j);
    free(got);

    v[0] = (lakeValue){.kind = LAKE_VALUE_BOOL, .i = 1}; v[1] = NUL; v[2] = (lakeValue){.kind = LAKE_VALUE_BOOL, .i = 0};
    ok(statsAre(st, "BOOLEAN", v, 3, "{\"nulls\":1,\"min\":0,\"max\":1}"), "BOOLEAN: 0 and 1");
    v[0] = (lakeValue){.kind = LAKE_VALUE_BLOB, .p = "\0x", .n = 2}; v[1] = NUL;
    ok(statsAre(st, "BLOB", v, 2, "{\"nulls\":1}"), "BLOB: only the null count");
    v[0] = TXT("2026-12-02T13:08:02+01:00"); v[1] = TXT("1999-01-01 00:00:00.25Z"); v[2] = NUL;
    ok(statsAre(st, "TIMESTAMP", v, 3,
                "{\"nulls\":1,\"min\":\"1999-01-01T00:00:00.25Z\",\"max\":\"2026-12-02T12:08:02Z\"}"),
       "TIMESTAMP: bounds in the stored UTC form");
    v[0] = TXTN(fileJson, strlen(fileJson));
    char want[300];
    snprintf(want, sizeof want, "{\"nulls\":0,\"min\":\"%.64s\",\"max\":\"%.64s\",\"max_cut\":true}", fileJson, fileJson);
    /* the first 64 bytes of canonical FILE JSON: quotes escaped */
    cJSON *fv = cJSON_CreateObject();
    char pre[65];
    snprintf(pre, sizeof pre, "%.64s", fileJson);
    cJSON_AddNumberToObject(fv, "nulls", 0);
    cJSON_AddStringToObject(fv, "min", pre);
    cJSON_AddStringToObject(fv, "max", pre);
    cJSON_AddTrueToObject(fv, "max_cut");
    char *wantFile = cJSON_PrintUnformatted(fv);
    ok(strlen(fileJson) > 64 && statsAre(st, "FILE", v, 1, wantFile),
       "FILE: bounds are the canonical JSON's first 64 bytes, max_cut");
    free(wantFile);
    cJSON_Delete(fv);

    /* TEXT cut at 64 bytes, at a character boundary */
    char a63[128], e62[128], w60[128], x64[128], a70[128];
    memset(a63, 'a', 63); memcpy(a63 + 63, "\xc3\xa9zz", 4);   /* é at bytes 63-64 */
    memset(e62, 'e', 62); memcpy(e62 + 62, "\xe2\x82\xac", 3); /* € at bytes 62-64 */
    memset(w60, 'w', 60); memcpy(w60 + 60, "\xf0\x9f\x98\x80x", 5); /* 😀 at 60-63 */
    memset(x64, 'x', 64);
    memset(a70, 'a', 70);
    v[0] = TXTN(a63, 67);
    ok(statsAre(st, "TEXT", v, 1, "{\"nulls\":0,\"min\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                                  "\"max\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"max_cut\":true}"),
       "TEXT: a 2-byte character across byte 64 is left out (63 bytes kept)");
    v[0] = TXTN(e62, 65);
    ok(statsAre(st, "TEXT", v, 1, "{\"nulls\":0,\"min\":\"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\","
                                  "\"max\":\"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\",\"max_cut\":true}"),
       "TEXT: a 3-byte character across byte 64 is left out (62 bytes kept)");
    v[0] = TXTN(w60, 65);
    ok(statsAre(st, "TEXT", v, 1, "{\"nulls\":0,\"min\":\"wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww\xf0\x9f\x98\x80\","
                                  "\"max\":\"wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww\xf0\x9f\x98\x80\",\"max_cut\":true}"),
       "TEXT: a 4-byte character ending at byte 64 is kept");
    v[0] = TXTN(x64, 64);
    ok(statsAre(st, "TEXT", v, 1, "{\"nulls\":0,\"min\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","
                                  "\"max\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"),
       "TEXT: 64 bytes are kept whole, no max_cut");
    v[0] = TXTN(a70, 70); v[1] = TXT("b");
    ok(statsAre(st, "TEXT", v, 2, "{\"nulls\":0,\"min\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                                  "\"max\":\"b\"}"),
       "TEXT: a cut min needs no flag");
    v[0] = TXT("a\0b"); v[1] = TXT("c");
    ok(statsAre(st, "TEXT", v, 2, "{\"nulls\":0}"), "TEXT: U+0000 in a kept prefix drops both bounds");
    memcpy(x64 + 64, "\0", 1);
    v[0] = TXTN(x64, 65); v[1] = TXT("c");
    ok(statsAre(st, "TEXT", v, 2, "{\"nulls\":0,\"min\":\"c\",\"max\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","
                                  "\"max_cut\":true}"),
       "TEXT: U+0000 past the kept prefix is cut off");
    v[0] = TXT("b"); v[1] = TXT("B"); v[2] = TXT("\xc3\xa9"); v[3] = TXT("ba");
    ok(statsAre(st, "TEXT", v, 4, "{\"nulls\":0,\"min\":\"B\",\"max\":\"\xc3\xa9\"}"),
       "TEXT: bounds in BINARY (memcmp) order");
    ok(statsAllValid, "the server's check accepts every record the writer made");
}

/* Computed over a segment the writer could not have made: infinities. */
static void testStatsCompute(void) {
    sqlite3 *db;
    lakeError err = {0};
    segmentSchema *s;
    cJSON *stats = NULL;
    sqlite3_open(":memory:", &db);
    sqlite3_exec(db, "CREATE TABLE rows(x REAL, y REAL, z REAL); INSERT INTO rows VALUES (1e999, 1, NULL), "
                     "(0, -1e999, NULL), (-2.5, 3, NULL)", NULL, NULL, NULL);
    segmentSchemaParse("[{\"name\":\"x\",\"type\":\"REAL\"},{\"name\":\"y\",\"type\":\"REAL\"},"
                       "{\"name\":\"z\",\"type\":\"REAL\"}]", &s, &err);
    char *txt = segmentStatsCompute(db, s, &stats, &err) == 0 ? cJSON_PrintUnformatted(stats) : NULL;
    ok(txt && strcmp(txt, "[{\"nulls\":0},{\"nulls\":0},{\"nulls\":3}]") == 0,
       "REAL: an infinite max or min drops both bounds (%s)", txt);
    free(txt);
    cJSON_Delete(stats);
    segmentSchemaFree(s);
    sqlite3_close(db);

    /* more columns than one SELECT returns */
    enum { WIDE = 700 };
    char *sch = malloc(WIDE * 40), *sql = malloc(WIDE * 40);
    size_t o = 0, q = 0;
    o += (size_t)sprintf(sch + o, "[");
    q += (size_t)sprintf(sql + q, "CREATE TABLE rows(");
    for (int i = 0; i < WIDE; i++) {
        o += (size_t)sprintf(sch + o, "%s{\"name\":\"c%d\",\"type\":\"INTEGER\"}", i ? "," : "", i);
        q += (size_t)sprintf(sql + q, "%sc%d INTEGER", i ? "," : "", i);
    }
    sprintf(sch + o, "]");
    sprintf(sql + q, "); INSERT INTO rows(c0, c650, c699) VALUES (1, 650, 699), (2, -650, NULL)");
    sqlite3_open(":memory:", &db);
    sqlite3_exec(db, sql, NULL, NULL, NULL);
    segmentSchemaParse(sch, &s, &err);
    char *e650 = NULL, *e699 = NULL, *e1 = NULL;
    ok(segmentStatsCompute(db, s, &stats, &err) == 0 && cJSON_GetArraySize(stats) == WIDE &&
           (e1 = cJSON_PrintUnformatted(cJSON_GetArrayItem(stats, 1))) && strcmp(e1, "{\"nulls\":2}") == 0 &&
           (e650 = cJSON_PrintUnformatted(cJSON_GetArrayItem(stats, 650))) &&
           strcmp(e650, "{\"nulls\":0,\"min\":-650,\"max\":650}") == 0 &&
           (e699 = cJSON_PrintUnformatted(cJSON_GetArrayItem(stats, 699))) &&
           strcmp(e699, "{\"nulls\":1,\"min\":699,\"max\":699}") == 0,
       "%d columns: one entry each, past the first SELECT's 600 too", WIDE);
    free(e1);
    free(e650);
    free(e699);
    cJSON_Delete(stats);
    segmentSchemaFree(s);
    sqlite3_close(db);
    free(sch);
    free(sql);
}

/* segmentStatsColumn on record j for column col of a table of ncols
 * INTEGER columns numbered 1 to ncols. */
static int columnOf(const cJSON *j, int col, int ncols, segmentColumnStats *c) {
    char json[4096] = "[";
    for (int i = 0; i < ncols; i++)
        snprintf(json + strlen(json), sizeof json - strlen(json), "%s{\"name\":\"c%d\",\"type\":\"INTEGER\"}",
                 i ? "," : "", i);
    strcat(json, "]");
    segmentSchema *s = NULL;
    lakeError e = {0};
    if (segmentSchemaParse(json, &s, &e)) return -1;
    int r = segmentStatsColumn(j, s, col, c);
    segmentSchemaFree(s);
    return r;
}

/* The same on the record text rec. */
static int column(const char *rec, int col, int ncols, segmentColumnStats *c) {
    cJSON *j = cJSON_Parse(rec);
    int r = columnOf(j, col, ncols, c);
    /* the text pointers borrow from j: copy what the tests look at */
    static char minb[80], maxb[80];
    if (r && c->min.type == SQLITE_TEXT) { snprintf(minb, sizeof minb, "%s", c->min.p); c->min.p = minb; }
    if (r && c->max.type == SQLITE_TEXT) { snprintf(maxb, sizeof maxb, "%s", c->max.p); c->max.p = maxb; }
    cJSON_Delete(j);
    return r;
}

#define REC(stats) "{\"location\":\"file:///x\",\"size\":1,\"sha256\":\"00\",\"rows\":5" stats "}"

static void testStatsRead(void) {
    segmentColumnStats c;
    const char *rec = REC(",\"stats\":[{\"nulls\":1,\"min\":-3,\"max\":9007199254740992},{\"nulls\":5},"
                          "{\"nulls\":0,\"min\":-0.5,\"max\":2},{\"nulls\":2,\"min\":\"a\\u00e9\",\"max\":\"zz\",\"max_cut\":true},"
                          "{\"nulls\":0,\"min\":1e300,\"max\":1.5e300}]");
    ok(column(rec, 0, 5, &c) == 1 && c.rows == 5 && c.nulls == 1 && c.has_bounds &&
           c.min.type == SQLITE_INTEGER && c.min.i == -3 && c.max.type == SQLITE_INTEGER &&
           c.max.i == 9007199254740992LL && !c.max_cut,
       "integer bounds read as SQLITE_INTEGER");
    ok(column(rec, 1, 5, &c) == 1 && c.nulls == 5 && !c.has_bounds, "only nulls: no bounds");
    ok(column(rec, 2, 5, &c) == 1 && c.min.type == SQLITE_FLOAT && c.min.r == -0.5 && c.max.type == SQLITE_INTEGER &&
           c.max.i == 2,
       "a fraction reads as SQLITE_FLOAT, a whole number as SQLITE_INTEGER");
    ok(column(rec, 3, 5, &c) == 1 && c.nulls == 2 && c.min.type == SQLITE_TEXT && c.min.n == 3 &&
           memcmp(c.min.p, "a\xc3\xa9", 3) == 0 && c.max.n == 2 && c.max_cut,
       "text bounds as pointer and length, max_cut");
    ok(column(rec, 4, 5, &c) == 1 && c.min.type == SQLITE_FLOAT && c.min.r == 1e300,
       "a whole number beyond 2^53 reads as SQLITE_FLOAT");
    ok(column(rec, 5, 5, &c) == 0 && column(rec, -1, 5, &c) == 0, "a column out of range is unknown");
    ok(column(rec, 0, 4, &c) == 1 && c.nulls == 1, "a segment with a column the table dropped since: the others by id");
    ok(column(rec, 5, 6, &c) == 1 && c.nulls == 5 && !c.has_bounds,
       "a column added after the segment was written: every row NULL");
    ok(column(REC(",\"columns\":[4,2,7,1,3],\"stats\":[{\"nulls\":1},{\"nulls\":2},{\"nulls\":3},{\"nulls\":4},{\"nulls\":0}]"),
              0, 4, &c) == 1 && c.nulls == 4 &&
           column(REC(",\"columns\":[4,2,7,1,3],\"stats\":[{\"nulls\":1},{\"nulls\":2},{\"nulls\":3},{\"nulls\":4},{\"nulls\":0}]"),
                  3, 4, &c) == 1 && c.nulls == 1,
       "a record's columns: each column's entry found by its id");
    ok(column(REC(",\"columns\":[1,2],\"stats\":[{\"nulls\":1}]"), 0, 2, &c) == 0,
       "columns and stats of other lengths are unknown");
    ok(column(REC(""), 0, 1, &c) == 0 && c.nulls == 0 && !c.has_bounds, "a record without stats is unknown");
    ok(column("{\"stats\":[{\"nulls\":0}]}", 0, 1, &c) == 0, "a record without rows is unknown");
    static const char *bad[] = {
        "[{\"nulls\":6}]", "[{\"nulls\":-1}]", "[{\"nulls\":1.5}]", "[{}]", "[{\"nulls\":\"1\"}]",
        "[{\"nulls\":0,\"min\":1}]", "[{\"nulls\":0,\"max\":1}]", "[{\"nulls\":0,\"min\":1,\"max\":2,\"extra\":1}]",
        "[{\"nulls\":0,\"min\":\"a\",\"max\":2}]", "[{\"nulls\":0,\"min\":[1],\"max\":[2]}]",
        "[{\"nulls\":0,\"min\":null,\"max\":null}]", "[{\"nulls\":0,\"min\":\"a\",\"max\":\"b\",\"max_cut\":1}]",
        "[{\"nulls\":0,\"min\":1,\"max\":2,\"max_cut\":true}]", "[{\"nulls\":0,\"max_cut\":false}]",
        "[{\"nulls\":0,\"min\":\"a\",\"max\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]",
        "[{\"nulls\":0,\"nulls\":0}]", "[1]", "{\"nulls\":0}", "[{\"nulls\":0,\"min\":1e999,\"max\":1e999}]",
    };
    int all = 1;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char r[300];
        snprintf(r, sizeof r, REC(",\"stats\":%s"), bad[i]);
        if (column(r, 0, 1, &c) != 0 || c.has_bounds || c.nulls) { all = 0; fprintf(stderr, "taken: %s\n", bad[i]); }
    }
    ok(all, "each of %zu malformed entries is unknown, *out zeroed", sizeof bad / sizeof *bad);
    ok(column(REC(",\"stats\":[{\"nulls\":0,\"min\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\",\"max\":\"\"}]"),
              0, 1, &c) == 1 && c.min.n == 64 && c.max.n == 0,
       "64 bytes of multibyte text is a bound; so is the empty string");
}

/* The server's check, by column type, and the canonical text. */
static void testStatsCheck(void) {
    lakeError err = {0};
    segmentSchema *s;
    segmentSchemaParse("[{\"name\":\"i\",\"type\":\"INTEGER\"},{\"name\":\"r\",\"type\":\"REAL\"},"
                       "{\"name\":\"t\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
                       "{\"name\":\"o\",\"type\":\"BOOLEAN\"},{\"name\":\"ts\",\"type\":\"TIMESTAMP\"},"
                       "{\"name\":\"f\",\"type\":\"FILE\"}]", &s, &err);
    char *canon = NULL;
    cJSON *j = cJSON_Parse("[{\"max\":3,\"min\":-1,\"nulls\":0},{\"nulls\":1,\"min\":1.0,\"max\":2.5},"
                           "{\"nulls\":0,\"min\":\"a\",\"max\":\"b\",\"max_cut\":false},{\"nulls\":4},"
                           "{\"nulls\":0,\"min\":0,\"max\":1},{\"nulls\":0,\"min\":\"1\",\"max\":\"2\",\"max_cut\":true},"
                           "{\"nulls\":4}]");
    int rc = segmentStatsCheck(j, s, 4, &canon, &err);
    ok(rc == 0 && canon &&
           strcmp(canon, "[{\"nulls\":0,\"min\":-1,\"max\":3},{\"nulls\":1,\"min\":1,\"max\":2.5},"
                         "{\"nulls\":0,\"min\":\"a\",\"max\":\"b\"},{\"nulls\":4},{\"nulls\":0,\"min\":0,\"max\":1},"
                         "{\"nulls\":0,\"min\":\"1\",\"max\":\"2\",\"max_cut\":true},{\"nulls\":4}]") == 0,
       "well-formed statistics are taken, in canonical form (%s)", canon);
    free(canon);
    cJSON_Delete(j);
    static const char *bad[][2] = {
        {"0", "{\"nulls\":0,\"min\":1.5,\"max\":2}"},
        {"0", "{\"nulls\":0,\"min\":1,\"max\":9007199254740994}"},
        {"0", "{\"nulls\":0,\"min\":\"1\",\"max\":\"2\"}"},
        {"1", "{\"nulls\":0,\"min\":\"1\",\"max\":\"2\"}"},
        {"2", "{\"nulls\":0,\"min\":1,\"max\":2}"},
        {"3", "{\"nulls\":0,\"min\":\"a\",\"max\":\"b\"}"},
        {"4", "{\"nulls\":0,\"min\":0.5,\"max\":1}"},
        {"5", "{\"nulls\":0,\"min\":1,\"max\":2}"},
        {"6", "{\"nulls\":5}"},
        {"6", "{\"nulls\":0,\"min\":\"a\",\"max\":\"b\",\"bytes\":1}"},
    };
    int all = 1;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char txt[600] = "[";
        int col = atoi(bad[i][0]);
        for (int c = 0; c < 7; c++) {
            strcat(txt, c ? "," : "");
            strcat(txt, c == col ? bad[i][1] : "{\"nulls\":0}");
        }
        strcat(txt, "]");
        j = cJSON_Parse(txt);
        rc = segmentStatsCheck(j, s, 4, &canon, &err);
        if (rc != LAKE_EDATA || canon || !strstr(err.msg, "malformed segment statistics")) {
            all = 0;
            fprintf(stderr, "taken: %s\n", txt);
        }
        free(canon);
        cJSON_Delete(j);
    }
    ok(all, "each of %zu entries of the wrong kind for its column is 65", sizeof bad / sizeof *bad);
    j = cJSON_Parse("[{\"nulls\":0,\"min\":0,\"max\":9007199254740991},{\"nulls\":0,\"min\":0.30000000000000004,"
                    "\"max\":0.30000000000000004},{\"nulls\":0},{\"nulls\":0},{\"nulls\":0},{\"nulls\":0},{\"nulls\":0}]");
    rc = segmentStatsCheck(j, s, 4, &canon, &err);
    ok(rc == 0 && canon && strncmp(canon, "[{\"nulls\":0},{\"nulls\":0,\"min\":0.3,\"max\":0.3000000000000001}", 59) == 0,
       "numbers cJSON would print inexactly are moved outward, or left out (%s)", canon);
    free(canon);
    cJSON_Delete(j);
    j = cJSON_Parse("[{\"nulls\":0},{\"nulls\":0}]");
    ok(segmentStatsCheck(j, s, 4, &canon, &err) == LAKE_EDATA && !canon, "too few entries are 65");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"nulls\":0}");
    ok(segmentStatsCheck(j, s, 4, &canon, &err) == LAKE_EDATA && !canon, "an object for the array is 65");
    cJSON_Delete(j);
    segmentSchemaFree(s);
}

/* Every record of a multi-segment write has stats matching its rows. */
static void testStatsRollover(stage *st) {
    lakeError err = {0};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent, .max_rows = 7};
    const char *sch = "[{\"name\":\"k\",\"type\":\"INTEGER\"},{\"name\":\"s\",\"type\":\"TEXT\"}]";
    segmentWriterOpen(st, "T08", sch, &o, &w, &err);
    for (int i = 0; i < 30; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "s%03d", 100 - i);
        lakeValue v[2] = {i % 4 == 1 ? NUL : INT(i * 3), TXTN(buf, strlen(buf))};
        segmentWriterAddRow(w, v, 2, &err);
    }
    cJSON *segs = NULL;
    segmentWriterFinish(w, &segs, NULL, &err);
    const cJSON *rec;
    int all = cJSON_GetArraySize(segs) == 5, seg = 0;
    cJSON_ArrayForEach(rec, segs) {
        segmentColumnStats k, t;
        int lo = seg * 7, hi = seg * 7 + (int)cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "rows")) - 1;
        int nulls = 0, kmin = -1, kmax = -1;
        for (int i = lo; i <= hi; i++) {
            if (i % 4 == 1) { nulls++; continue; }
            if (kmin < 0) kmin = i * 3;
            kmax = i * 3;
        }
        char smin[32], smax[32];
        snprintf(smin, sizeof smin, "s%03d", 100 - hi);
        snprintf(smax, sizeof smax, "s%03d", 100 - lo);
        if (columnOf(rec, 0, 2, &k) != 1 || columnOf(rec, 1, 2, &t) != 1 || k.nulls != nulls ||
            k.min.i != kmin || k.max.i != kmax || t.nulls != 0 || strcmp(t.min.p, smin) || strcmp(t.max.p, smax))
            all = 0;
        seg++;
    }
    ok(all, "every segment of a rolled-over write carries its own statistics");
    cJSON_Delete(segs);
    segmentWriterFree(w);
}

/* The statistics the writer gathers row by row are what a scan of the
 * stored segment computes (segmentStatsCompute), on random rows of every
 * kind: long texts alike in their first 64 bytes, multibyte characters,
 * NULLs, -0.0, BLOBs. */
static void testStatsSameAsScan(stage *st) {
    lakeError err = {0};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = tmpParent, .max_rows = 500};
    const char *sch = "[{\"name\":\"i\",\"type\":\"INTEGER\"},{\"name\":\"r\",\"type\":\"REAL\"},"
                      "{\"name\":\"s\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
                      "{\"name\":\"f\",\"type\":\"BOOLEAN\"}]";
    segmentWriterOpen(st, "T09", sch, &o, &w, &err);
    srand(18);
    static const char *words[] = {"", "a", "ab", "\xc3\xa9", "z", "prefix-prefix-prefix-prefix-prefix-prefix-prefix-prefix-prefix-"};
    for (int i = 0; i < 2000; i++) {
        char text[160];
        snprintf(text, sizeof text, "%s%s%d", words[rand() % 6], words[rand() % 6], rand() % 1000);
        lakeValue v[5] = {rand() % 9 ? INT((int64_t)rand() - RAND_MAX / 2) : NUL,
                          rand() % 9 ? REAL(rand() % 5 ? (rand() - RAND_MAX / 2) / 7.0 : -0.0) : NUL,
                          rand() % 9 ? TXTN(text, strlen(text)) : NUL,
                          rand() % 3 ? (lakeValue){.kind = LAKE_VALUE_BLOB, .p = text, .n = 3} : NUL,
                          rand() % 2 ? (lakeValue){.kind = LAKE_VALUE_BOOL, .i = rand() % 2} : NUL};
        segmentWriterAddRow(w, v, 5, &err);
    }
    cJSON *segs = NULL;
    segmentWriterFinish(w, &segs, NULL, &err);
    const cJSON *rec;
    int same = cJSON_GetArraySize(segs) == 4;
    cJSON_ArrayForEach(rec, segs) {
        const char *loc = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "location"));
        sqlite3 *db = NULL;
        cJSON *scan = NULL;
        char *a = NULL, *b = NULL;
        if (loc && strncmp(loc, "file://", 7) == 0 &&
            sqlite3_open_v2(loc + 7, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            segmentStatsCompute(db, segmentWriterSchema(w), &scan, &err) == 0) {
            a = cJSON_PrintUnformatted(cJSON_GetObjectItem(rec, "stats"));
            b = cJSON_PrintUnformatted(scan);
        }
        if (!a || !b || strcmp(a, b) != 0) {
            fprintf(stderr, "written %s\nscanned %s\n", a ? a : "-", b ? b : "-");
            same = 0;
        }
        free(a);
        free(b);
        cJSON_Delete(scan);
        sqlite3_close(db);
    }
    ok(same, "the statistics gathered as rows are added are those a scan of each segment computes");
    cJSON_Delete(segs);
    segmentWriterFree(w);
}

int main(void) {
    snprintf(root, sizeof root, "%s/lake-test-segment-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) return 1;
    snprintf(stageUrlBuf, sizeof stageUrlBuf, "file://%s/stage", root);
    snprintf(tmpParent, sizeof tmpParent, "%s/tmp", root);
    mkdir(tmpParent, 0700);
    stage *st;
    lakeError err = {0};
    if (stageOpen(stageUrlBuf, &st, &err)) return 1;
    const char *content = "hello", *p = content;
    lakeReader r = {strRead, &p, "hello"};
    stagePutOptions po = {.name = "h.txt", .expect_size = -1};
    fileValue fv;
    ok(stagePut(st, &r, &po, &fv, &err) == 0, "put a file to reference");
    fileJson = fileValueToJson(&fv);
    fileValueFree(&fv);

    testRoundTrip(st);
    testRowBound(st);
    testConversions(st);
    testFiles(st);
    testKeyDir(st);
    testStatsWritten(st);
    testStatsSameAsScan(st);
    testStatsCompute();
    testStatsRead();
    testStatsCheck();
    testStatsRollover(st);

    free(fileJson);
    stageClose(st);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) return 1;
    return tapDone();
}
