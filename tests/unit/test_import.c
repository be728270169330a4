/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_import.c - unit tests of lib/query/import: CSV and JSON Lines edge
 * cases, line numbers in errors, auto-detection, the record cap on an
 * endless input, and a generated import streamed into rolling segments.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "query/import.h"
#include "query/segment.h"
#include "stage/stage.h"
#include "memreader.h"
#include "tap.h"

static const char *schemaJson =
    "[{\"name\":\"id\",\"type\":\"INTEGER\"},{\"name\":\"name\",\"type\":\"TEXT\"},"
    "{\"name\":\"score\",\"type\":\"REAL\"},{\"name\":\"ok\",\"type\":\"BOOLEAN\"},"
    "{\"name\":\"f\",\"type\":\"FILE\"}]";
static segmentSchema *schema;
static stage *st;
static char root[256];

/* Read every record of input; dump them as "v|v|…\n" lines into out. */
static int collect(const char *input, size_t len, importFormat fmt, int64_t max, char *out,
                   size_t cap, importFormat *used, lakeError *err) {
    memReader src = {input, len, 0, 3};
    lakeReader in = {memRead, &src, "stdin"};
    importReader *r;
    out[0] = '\0';
    int rc = importOpen(&in, fmt, schema, max, &r, err);
    if (rc) return rc;
    if (used) *used = importFormatOf(r);
    const lakeValue *v;
    size_t k = 0;
    while ((rc = importNext(r, &v, err)) == 1) {
        for (int c = 0; c < schema->ncols; c++) {
            const char *sep = c ? "|" : "";
            switch (v[c].kind) {
            case LAKE_VALUE_NULL: k += (size_t)snprintf(out + k, cap - k, "%sNULL", sep); break;
            case LAKE_VALUE_INT: k += (size_t)snprintf(out + k, cap - k, "%s%lld", sep, (long long)v[c].i); break;
            case LAKE_VALUE_REAL: k += (size_t)snprintf(out + k, cap - k, "%s%g", sep, v[c].r); break;
            case LAKE_VALUE_BOOL: k += (size_t)snprintf(out + k, cap - k, "%sb%lld", sep, (long long)v[c].i); break;
            default: k += (size_t)snprintf(out + k, cap - k, "%s[%.*s]", sep, (int)v[c].n, v[c].p); break;
            }
        }
        k += (size_t)snprintf(out + k, cap - k, "\n");
    }
    importClose(r);
    return rc;
}

#define CSV(s, out, err) collect(s, sizeof(s) - 1, IMPORT_CSV, 0, out, sizeof out, NULL, err)
#define JSONL(s, out, err) collect(s, sizeof(s) - 1, IMPORT_JSONL, 0, out, sizeof out, NULL, err)

/* importRun of input into a fresh writer (discarded). */
static int run(const char *input, importFormat fmt, int64_t *rows, lakeError *err) {
    memReader src = {input, strlen(input), 0, 0};
    lakeReader in = {memRead, &src, "stdin"};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = root};
    if (segmentWriterOpen(st, "TI", schemaJson, &o, &w, err)) return -1;
    int rc = importRun(&in, fmt, w, rows, NULL, err);
    segmentWriterFree(w);
    return rc;
}

static void testCsv(void) {
    char out[4096];
    lakeError err = {0};
    ok(CSV("id,name\n1,alice\n2,bob\n", out, &err) == 0 &&
           strcmp(out, "[1]|[alice]|NULL|NULL|NULL\n[2]|[bob]|NULL|NULL|NULL\n") == 0,
       "CSV: a header and two records; columns not named are NULL");
    ok(CSV("Name,ID\nx,7\n", out, &err) == 0 && strcmp(out, "[7]|[x]|NULL|NULL|NULL\n") == 0,
       "CSV: header names match columns ignoring case, in any order");
    ok(CSV("id,name\n1,\"a,b\"\n2,\"say \"\"hi\"\"\"\n", out, &err) == 0 &&
           strcmp(out, "[1]|[a,b]|NULL|NULL|NULL\n[2]|[say \"hi\"]|NULL|NULL|NULL\n") == 0,
       "CSV: quoted commas and doubled quotes");
    ok(CSV("id,name\n1,\"line1\nline2\r\nline3\"\n2,x\n", out, &err) == 0 &&
           strcmp(out, "[1]|[line1\nline2\r\nline3]|NULL|NULL|NULL\n[2]|[x]|NULL|NULL|NULL\n") == 0,
       "CSV: embedded newlines (LF and CRLF) inside quotes are data");
    ok(CSV("id,name\r\n1,a\r\n2,b\r\n", out, &err) == 0 &&
           strcmp(out, "[1]|[a]|NULL|NULL|NULL\n[2]|[b]|NULL|NULL|NULL\n") == 0,
       "CSV: CRLF line ends");
    ok(CSV("id,name\n1,a\rb\n", out, &err) == 0 && strcmp(out, "[1]|[a\rb]|NULL|NULL|NULL\n") == 0,
       "CSV: a lone CR is data");
    ok(CSV("id,name,score\n1,,\n2,\"\",\n", out, &err) == 0 &&
           strcmp(out, "[1]|NULL|NULL|NULL|NULL\n[2]|[]|NULL|NULL|NULL\n") == 0,
       "CSV: an empty field is NULL, a quoted empty field is the empty string");
    ok(CSV("id,name\n1,a", out, &err) == 0 && strcmp(out, "[1]|[a]|NULL|NULL|NULL\n") == 0,
       "CSV: the last record needs no newline");
    ok(CSV("\xEF\xBB\xBFid,name\n1,a\n", out, &err) == 0 && strcmp(out, "[1]|[a]|NULL|NULL|NULL\n") == 0,
       "CSV: a UTF-8 BOM is skipped");
    ok(CSV("id,name\n\n1,a\n\r\n\n", out, &err) == 0 && strcmp(out, "[1]|[a]|NULL|NULL|NULL\n") == 0,
       "CSV: blank lines are skipped");
    ok(CSV("", out, &err) == 0 && !out[0], "CSV: empty input has no records");
    ok(CSV("id,nope\n1,2\n", out, &err) == LAKE_EDATA && strstr(err.msg, "line 1") &&
           strstr(err.msg, "'nope'"),
       "CSV: an unknown header column is 65 naming it (%s)", err.msg);
    ok(CSV("id,ID\n", out, &err) == LAKE_EDATA && strstr(err.msg, "twice"),
       "CSV: a column named twice is 65");
    ok(CSV("id,name\0x\n1,a\n", out, &err) == LAKE_EDATA &&
           strcmp(err.msg, "stdin: line 1: header: a NUL byte in the name 'name\\0x'") == 0,
       "CSV: a NUL byte in a header name is 65, never a shorter name (%s)", err.msg);
    ok(CSV("id,\"name\0\"\n1,a\n", out, &err) == LAKE_EDATA && strstr(err.msg, "'name\\0'"),
       "CSV: a NUL byte in a quoted header name is 65 (%s)", err.msg);
    ok(CSV("id,name\n1,a\n2,b,c\n", out, &err) == LAKE_EDATA && strstr(err.msg, "line 3") &&
           strstr(err.msg, "3 fields"),
       "CSV: a record with another number of fields is 65 naming the line (%s)", err.msg);
    ok(CSV("id,name\n1,\"two\nlines\"\n2,\"oops\n3,c\n", out, &err) == LAKE_EDATA &&
           strstr(err.msg, "line 4") && strstr(err.msg, "unterminated"),
       "CSV: an unterminated quote is 65 naming the line it opened on (%s)", err.msg);
    ok(CSV("id,name\n1,5\" a\"b\"\n", out, &err) == 0 && strcmp(out, "[1]|[5\" a\"b\"]|NULL|NULL|NULL\n") == 0,
       "CSV: a quote inside an unquoted field is data");
    ok(collect("id,name\n1,a\n2,a\"b\n", 18, IMPORT_CSV | IMPORT_STRICT, 0, out, sizeof out, NULL, &err) ==
               LAKE_EDATA && strstr(err.msg, "line 3: a quote inside an unquoted field"),
       "CSV strict: a quote inside an unquoted field is 65 naming the line (%s)", err.msg);
    ok(collect("id,name\n1,a\rb\n", 14, IMPORT_CSV | IMPORT_STRICT, 0, out, sizeof out, NULL, &err) ==
               LAKE_EDATA && strstr(err.msg, "line 2: a carriage return"),
       "CSV strict: a lone CR outside quotes is 65 (%s)", err.msg);
    ok(collect("id,name\n\"a\rb\",\"x\"\"y\"\n", 21, IMPORT_CSV | IMPORT_STRICT, 0, out, sizeof out, NULL,
               &err) == 0 && strcmp(out, "[a\rb]|[x\"y]|NULL|NULL|NULL\n") == 0,
       "CSV strict: quotes and CRs inside quotes are data");
    ok(CSV("id,name\r1,a\r", out, &err) == LAKE_EDATA && strstr(err.msg, "line 1") &&
           strstr(err.msg, "CR-only"),
       "CSV: CR-only line ends are 65 at the header, saying so (%s)", err.msg);
    ok(CSV("name\n\nx\n\r\n\"\"\n", out, &err) == 0 &&
           strcmp(out, "NULL|NULL|NULL|NULL|NULL\nNULL|[x]|NULL|NULL|NULL\nNULL|NULL|NULL|NULL|NULL\n"
                       "NULL|[]|NULL|NULL|NULL\n") == 0,
       "CSV: in a file of one column an empty line is a record of one NULL");
    ok(CSV("id,name", out, &err) == 0 && !out[0], "CSV: a header without its newline has no records");
    ok(CSV("id,name\n1,\"a\"b\n", out, &err) == LAKE_EDATA && strstr(err.msg, "after a closing quote"),
       "CSV: text after a closing quote is 65");
    ok(collect("id,name\n1,abcdefghijklmnopqrstuvwxyz\n", 35, IMPORT_CSV, 16, out, sizeof out, NULL,
               &err) == LAKE_EDATA && strstr(err.msg, "longer than 16"),
       "CSV: a record over the cap is 65");

    int64_t rows = -1;
    ok(run("id,name\n1,a\nabc,b\n", IMPORT_CSV, &rows, &err) == LAKE_EDATA &&
           strstr(err.msg, "line 3") && strstr(err.msg, "column id") && strstr(err.msg, "'abc'") &&
           rows == 1,
       "CSV: 'abc' for an INTEGER is 65 naming line and column (%s)", err.msg);
    ok(run("id,score,ok\n1,2.5,true\n2,,0\n", IMPORT_CSV, &rows, &err) == 0 && rows == 2,
       "CSV: typed columns convert from text");
    ok(run("id,name\n1,caf\xc3\n", IMPORT_CSV, &rows, &err) == LAKE_EDATA && strstr(err.msg, "UTF-8") &&
           strstr(err.msg, "line 2"),
       "CSV: invalid UTF-8 is 65 naming the line");
}

static void testJsonl(void) {
    char out[4096];
    lakeError err = {0};
    ok(JSONL("{\"id\":1,\"name\":\"a\",\"score\":2.5,\"ok\":true}\n{\"id\":2,\"name\":null,\"ok\":false}\n",
             out, &err) == 0 &&
           strcmp(out, "1|[a]|2.5|b1|NULL\n2|NULL|NULL|b0|NULL\n") == 0,
       "JSONL: numbers, strings, booleans, nulls and absent keys");
    ok(JSONL("{\"id\":1}\r\n\r\n  \n{\"ID\":2}\r\n", out, &err) == 0 &&
           strcmp(out, "1|NULL|NULL|NULL|NULL\n2|NULL|NULL|NULL|NULL\n") == 0,
       "JSONL: CRLF and blank lines; keys match ignoring case");
    ok(JSONL("{\"id\":1}\n{\"id\":\n{\"id\":3}\n", out, &err) == LAKE_EDATA &&
           strstr(err.msg, "line 2") && strstr(err.msg, "malformed JSON"),
       "JSONL: a malformed line is 65 naming it (%s)", err.msg);
    ok(JSONL("{\"id\":1} x\n", out, &err) == LAKE_EDATA, "JSONL: text after the object is 65");
    ok(JSONL("[1,2]\n", out, &err) == LAKE_EDATA && strstr(err.msg, "not a JSON object"),
       "JSONL: a line that is not an object is 65");
    ok(JSONL("{\"id\":1,\"nope\":2}\n", out, &err) == LAKE_EDATA && strstr(err.msg, "'nope'"),
       "JSONL: an unknown key is 65 naming it");
    ok(JSONL("{\"id\":1,\"id\":2}\n", out, &err) == LAKE_EDATA && strstr(err.msg, "a key repeated"),
       "JSONL: a repeated key is 65 (%s)", err.msg);
    ok(JSONL("{\"id\":1,\"ID\":2}\n", out, &err) == LAKE_EDATA && strstr(err.msg, "twice"),
       "JSONL: a key repeated in another case is 65 (%s)", err.msg);
    ok(JSONL("{\"name\":{\"a\":1}}\n", out, &err) == LAKE_EDATA && strstr(err.msg, "nested"),
       "JSONL: a nested object in a TEXT column is 65");
    ok(JSONL("{\"name\":[1]}\n", out, &err) == LAKE_EDATA && strstr(err.msg, "nested arrays"),
       "JSONL: an array is 65");
    ok(JSONL("{\"f\":{\"location\":\"x\"}}\n", out, &err) == 0 && strstr(out, "[{\"location\":\"x\"}]"),
       "JSONL: an object in a FILE column is passed on as its JSON text");
    ok(collect("{\"name\":\"0123456789012345678901234567890123456789\"}\n", 51, IMPORT_JSONL, 32, out,
               sizeof out, NULL, &err) == LAKE_EDATA && strstr(err.msg, "line 1") &&
           strstr(err.msg, "longer than 32"),
       "JSONL: a line over the cap is 65");

    int64_t rows;
    ok(run("{\"id\":1}\n{\"id\":\"abc\"}\n", IMPORT_JSONL, &rows, &err) == LAKE_EDATA &&
           strstr(err.msg, "line 2") && strstr(err.msg, "column id"),
       "JSONL: 'abc' for an INTEGER is 65 naming line and column (%s)", err.msg);
    ok(run("{\"id\":12345678901234567890}\n", IMPORT_JSONL, &rows, &err) == LAKE_EDATA,
       "JSONL: an integer beyond 2^53 as a number is 65 (it would lose digits)");
    ok(run("{\"id\":\"9223372036854775807\",\"ok\":true,\"score\":1}\n", IMPORT_JSONL, &rows, &err) == 0 &&
           rows == 1,
       "JSONL: a large integer as a string is exact");
    ok(run("{\"f\":{\"location\":\"file:///elsewhere/x\",\"size\":1,\"sha256\":"
           "\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"}}\n",
           IMPORT_JSONL, &rows, &err) == LAKE_EDATA && strstr(err.msg, "outside"),
       "JSONL: a FILE value outside the stage is 65");
}

/* The values of the one JSON Lines record in input, into v (text copied
 * into buf); the importNext result. */
static int oneJsonl(const char *input, lakeValue *v, char *buf, size_t cap) {
    memReader src = {input, strlen(input), 0, 0};
    lakeReader in = {memRead, &src, "stdin"};
    importReader *r;
    lakeError err = {0};
    const lakeValue *got;
    int rc = importOpen(&in, IMPORT_JSONL, schema, 0, &r, &err);
    if (rc) return rc;
    rc = importNext(r, &got, &err);
    size_t k = 0;
    for (int c = 0; rc == 1 && c < schema->ncols; c++) {
        v[c] = got[c];
        if ((got[c].kind == LAKE_VALUE_TEXT) && k + got[c].n <= cap) {
            memcpy(buf + k, got[c].p, got[c].n);
            v[c].p = buf + k;
            k += got[c].n;
        }
    }
    importClose(r);
    return rc;
}

/* What cJSON does not keep: an integer's digits, a REAL's form; U+0000,
 * which no TEXT from JSON may hold (issue 15). */
static void testJsonlExact(void) {
    lakeValue v[5];
    char buf[256];
    lakeError err = {0};
    ok(oneJsonl("{\"id\":9223372036854775807,\"score\":-0.0,\"name\":\"a\"}\n", v, buf, sizeof buf) == 1 &&
           v[0].kind == LAKE_VALUE_INT && v[0].i == INT64_MAX && v[2].kind == LAKE_VALUE_REAL &&
           v[2].r == 0 && signbit(v[2].r),
       "JSONL: an integer exact to 2^63-1, -0.0 a REAL");
    ok(JSONL("{\"id\":1,\"name\":\"a\\u0000b\"}\n", buf, &err) == LAKE_EDATA && strstr(err.msg, "line 1") &&
           strstr(err.msg, "\\u0000"),
       "JSONL: \\u0000 in a value is 65, not a shorter value (%s)", err.msg);
    ok(JSONL("{\"id\":1,\"na\\u0000me\":\"a\"}\n", buf, &err) == LAKE_EDATA && strstr(err.msg, "\\u0000"),
       "JSONL: \\u0000 in a key is 65, not a shorter key (%s)", err.msg);
    ok(oneJsonl("{\"id\":-9223372036854775808,\"score\":2.0}\n", v, buf, sizeof buf) == 1 &&
           v[0].kind == LAKE_VALUE_INT && v[0].i == INT64_MIN && v[2].kind == LAKE_VALUE_REAL && v[2].r == 2.0,
       "JSONL: -2^63 exact, 2.0 stays a REAL");
    ok(oneJsonl("{\"name\":\"\\\\u0000\",\"id\":-0}\n", v, buf, sizeof buf) == 1 && v[1].n == 6 &&
           memcmp(v[1].p, "\\u0000", 6) == 0 && v[0].kind == LAKE_VALUE_INT && v[0].i == 0,
       "JSONL: an escaped backslash before u0000 is text; -0 is the integer 0");
    ok(oneJsonl("{\"name\":\"\\ue000\xee\x80\x81\"}\n", v, buf, sizeof buf) == 1 && v[1].n == 6 &&
           memcmp(v[1].p, "\xee\x80\x80\xee\x80\x81", 6) == 0,
       "JSONL: private-use characters are kept");
    ok(oneJsonl("{\"f\":{\"location\":\"x\",\"size\":5,\"n\":[1,2]},\"id\":7,\"score\":1e3}\n", v, buf, sizeof buf) == 1 &&
           v[0].kind == LAKE_VALUE_INT && v[0].i == 7 && v[2].kind == LAKE_VALUE_REAL && v[2].r == 1000,
       "JSONL: numbers inside a FILE object keep the count in step");
}

static void testDetect(void) {
    char out[1024];
    lakeError err = {0};
    importFormat used;
    ok(collect("  \n\t{\"id\":5}\n", 13, IMPORT_AUTO, 0, out, sizeof out, &used, &err) == 0 &&
           used == IMPORT_JSONL && strcmp(out, "5|NULL|NULL|NULL|NULL\n") == 0,
       "auto: '{' after blanks means JSON Lines");
    ok(collect("\xEF\xBB\xBFid\n5\n", 8, IMPORT_AUTO, 0, out, sizeof out, &used, &err) == 0 &&
           used == IMPORT_CSV && strcmp(out, "[5]|NULL|NULL|NULL|NULL\n") == 0,
       "auto: anything else is CSV");
    ok(collect("\xEF\xBBid\n", 5, IMPORT_AUTO, 0, out, sizeof out, &used, &err) == LAKE_EDATA,
       "a broken BOM is 65");
    ok(collect("", 0, IMPORT_AUTO, 0, out, sizeof out, &used, &err) == 0 && !out[0],
       "auto: empty input has no records");
    ok(collect("{\"id\":1}\n", 9, IMPORT_CSV, 0, out, sizeof out, &used, &err) == LAKE_EDATA,
       "--csv is obeyed even when the data looks like JSON");
}

/* An endless input of one byte repeated (after a prefix): a reader that
 * buffered whole records without a cap would never return. */
typedef struct endless {
    const char *prefix;
    char fill;
    size_t given;
} endless;

static ssize_t endlessRead(void *ctx, void *buf, size_t len) {
    endless *e = ctx;
    size_t pl = strlen(e->prefix), n = 0;
    char *b = buf;
    while (n < len && e->given < pl) b[n++] = e->prefix[e->given++];
    memset(b + n, e->fill, len - n);
    e->given += len - n;
    return (ssize_t)len;
}

static void testBounded(void) {
    lakeError err = {0};
    importReader *r;
    const lakeValue *v;
    endless e = {"id,name\n1,\"", 'a', 0};
    lakeReader in = {endlessRead, &e, "stdin"};
    int64_t cap = 1 << 20;
    int rc = importOpen(&in, IMPORT_AUTO, schema, cap, &r, &err);
    if (!rc) rc = importNext(r, &v, &err);
    importClose(r);
    ok(rc == LAKE_EDATA && e.given <= (size_t)cap + 2 * 65536,
       "an endless CSV field stops at the cap (%zu bytes read)", e.given);
    endless j = {"{\"name\":\"", 'b', 0};
    in.ctx = &j;
    rc = importOpen(&in, IMPORT_AUTO, schema, cap, &r, &err);
    if (!rc) rc = importNext(r, &v, &err);
    importClose(r);
    ok(rc == LAKE_EDATA && j.given <= (size_t)cap + 2 * 65536,
       "an endless JSON line stops at the cap (%zu bytes read)", j.given);
}

/* A generated CSV of n rows, produced as it is read. */
typedef struct gen {
    long n, i;
    char line[96];
    size_t pos, len;
} gen;

static ssize_t genRead(void *ctx, void *buf, size_t len) {
    gen *g = ctx;
    size_t k = 0;
    while (k < len) {
        if (g->pos == g->len) {
            if (g->i > g->n) break;
            g->len = g->i == 0 ? (size_t)snprintf(g->line, sizeof g->line, "id,name,score\n")
                               : (size_t)snprintf(g->line, sizeof g->line, "%ld,\"name %ld\",%ld.5\n",
                                                  g->i, g->i, g->i % 1000);
            g->i++;
            g->pos = 0;
        }
        size_t m = g->len - g->pos < len - k ? g->len - g->pos : len - k;
        memcpy((char *)buf + k, g->line + g->pos, m);
        g->pos += m;
        k += m;
    }
    return (ssize_t)k;
}

static void testStreaming(void) {
    lakeError err = {0};
    gen g = {100000, 0, "", 0, 0};
    lakeReader in = {genRead, &g, "stdin"};
    segmentWriter *w;
    segmentWriterOptions o = {.tmp_dir = root, .max_bytes = 512 * 1024};
    segmentWriterOpen(st, "TS", schemaJson, &o, &w, &err);
    int64_t rows = 0;
    int rc = importRun(&in, IMPORT_AUTO, w, &rows, NULL, &err);
    cJSON *segs = NULL;
    if (!rc) rc = segmentWriterFinish(w, &segs, NULL, &err);
    int64_t total = 0;
    cJSON *s;
    cJSON_ArrayForEach(s, segs) total += (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "rows"));
    ok(rc == 0 && rows == 100000 && total == rows && cJSON_GetArraySize(segs) > 2,
       "100000 generated CSV rows stream into %d segments of at most 512 KiB",
       cJSON_GetArraySize(segs));
    int small = 1;
    cJSON_ArrayForEach(s, segs) if (cJSON_GetNumberValue(cJSON_GetObjectItem(s, "size")) > 600 * 1024) small = 0;
    ok(small, "no segment is much over its bound");
    cJSON_Delete(segs);
    segmentWriterFree(w);
}

int main(void) {
    lakeError err = {0};
    snprintf(root, sizeof root, "%s/lake-test-import-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) return 1;
    char url[400];
    snprintf(url, sizeof url, "file://%s/stage", root);
    if (stageOpen(url, &st, &err) || segmentSchemaParse(schemaJson, &schema, &err)) return 1;
    testCsv();
    testJsonl();
    testJsonlExact();
    testDetect();
    testBounded();
    testStreaming();
    segmentSchemaFree(schema);
    stageClose(st);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) return 1;
    return tapDone();
}
