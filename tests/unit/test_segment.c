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
        if (segmentReaderOpen(path, schema, &r, &err)) { matches = 0; fprintf(stderr, "%s\n", err.msg); continue; }
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

    /* A segment read against another schema is refused. */
    const char *loc = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(segs, 0), "location"));
    segmentReader *r;
    ok(segmentReaderOpen(loc + 7, "[{\"name\":\"k\",\"type\":\"INTEGER\"}]", &r, &err) == LAKE_EDATA,
       "a segment of another schema is refused (65)");
    ok(segmentReaderOpen(loc + 7, "[{\"name\":\"k\",\"type\":\"TEXT\"},{\"name\":\"x\",\"type\":\"REAL\"},"
                         "{\"name\":\"s\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
                         "{\"name\":\"ok\",\"type\":\"BOOLEAN\"},{\"name\":\"t\",\"type\":\"TIMESTAMP\"},"
                         "{\"name\":\"f\",\"type\":\"FILE\"}]", &r, &err) == LAKE_EDATA,
       "a column of another type is refused (65)");
    ok(segmentReaderOpen("/nonexistent/seg", schema, &r, &err) == LAKE_ENOINPUT,
       "a missing segment file is 66");
    char junk[400];
    snprintf(junk, sizeof junk, "%s/junk", root);
    FILE *f = fopen(junk, "w");
    fputs("not a database at all, just text that is long enough to look like a header......", f);
    fclose(f);
    ok(segmentReaderOpen(junk, schema, &r, &err) == LAKE_EDATA, "a file that is no SQLite database is 65");
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
        if (!(rc = segmentReaderOpen(loc + 7, sch, &r, err))) {
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

    free(fileJson);
    stageClose(st);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) return 1;
    return tapDone();
}
