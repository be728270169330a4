/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_regindex.c - a registration index (catalog/regindex.h) answers
 * what the registration's JSON answers: for records of every shape a
 * registration may hold (statistics by position or by column id after
 * schema changes, text bounds cut or not, NULL-only columns, malformed
 * entries, no statistics at all, a malformed row count), regIndexStats
 * equals segmentStatsColumn for every column id, regIndexRows the record's
 * "rows", regIndexRecord the record itself; and an index that is torn,
 * changed, of another format or of another JSON file is refused.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "catalog/regindex.h"
#include "catalog/schema.h"
#include "core/jsonstrict.h"
#include "tap.h"

static char dir[] = "/tmp/lake-unit-regindex-XXXXXX";
static char jpath[600], ipath[600];

/* The record shapes, one per segment in turn. */
static const char *const shapes[] = {
    "{\"location\":\"file:///s/a\",\"rows\":3,\"stats\":[{\"nulls\":0,\"min\":1,\"max\":9},"
    "{\"nulls\":1,\"min\":-1.5,\"max\":2.25},{\"nulls\":0,\"min\":\"abc\",\"max\":\"abd\"}]}",
    "{\"location\":\"file:///s/b\",\"rows\":2,\"stats\":[{\"nulls\":2},{\"nulls\":0,\"min\":0,\"max\":0},"
    "{\"nulls\":0,\"min\":\"a\",\"max\":\"zz\",\"max_cut\":true}]}",
    /* written before column 3 existed */
    "{\"location\":\"file:///s/c\",\"rows\":5,\"stats\":[{\"nulls\":0,\"min\":10,\"max\":20},{\"nulls\":5}]}",
    /* after a drop and an add: by id, in the file's order */
    "{\"location\":\"file:///s/d\",\"rows\":4,\"columns\":[3,1,4],\"stats\":[{\"nulls\":0,\"min\":\"q\","
    "\"max\":\"r\"},{\"nulls\":1,\"min\":7,\"max\":8},{\"nulls\":4}]}",
    /* a repeated id: the last entry counts */
    "{\"location\":\"file:///s/e\",\"rows\":4,\"columns\":[2,2],\"stats\":[{\"nulls\":0,\"min\":1,\"max\":1},"
    "{\"nulls\":0,\"min\":5,\"max\":6}]}",
    /* ids that are no ids */
    "{\"location\":\"file:///s/f\",\"rows\":1,\"columns\":[1.5,\"x\",0,2],\"stats\":[{\"nulls\":0},{\"nulls\":0},"
    "{\"nulls\":0},{\"nulls\":1}]}",
    /* columns and stats of different lengths: nothing known */
    "{\"location\":\"file:///s/g\",\"rows\":1,\"columns\":[1,2],\"stats\":[{\"nulls\":0}]}",
    /* malformed entries */
    "{\"location\":\"file:///s/h\",\"rows\":3,\"stats\":[{\"nulls\":4},{\"min\":1,\"max\":2},"
    "{\"nulls\":0,\"min\":1},{\"nulls\":0,\"what\":1}]}",
    "{\"location\":\"file:///s/i\",\"rows\":3,\"stats\":[{\"nulls\":0,\"min\":1,\"max\":2,\"max_cut\":true},"
    "{\"nulls\":0,\"min\":\"a\",\"max\":2},{\"nulls\":0,\"min\":1e300,\"max\":1.7976931348623157e308}]}",
    /* no statistics, or none usable */
    "{\"location\":\"file:///s/j\",\"rows\":7}",
    "{\"location\":\"file:///s/k\",\"rows\":7,\"stats\":{\"nulls\":0}}",
    /* a row count that is no count */
    "{\"location\":\"file:///s/l\",\"rows\":2.5,\"stats\":[{\"nulls\":0,\"min\":1,\"max\":2}]}",
    "{\"location\":\"file:///s/m\",\"stats\":[{\"nulls\":0,\"min\":1,\"max\":2}]}",
    "{\"location\":\"file:///s/n\",\"rows\":0,\"stats\":[{\"nulls\":0}]}",
    /* text that needs escapes, and a string with a quote in the location */
    "{\"location\":\"file:///s/o\\\"p\",\"rows\":2,\"stats\":[{\"nulls\":0,\"min\":\"a\\\"b\\\\\",\"max\":"
    "\"\\u00e9t\\u00e9\"},{\"nulls\":0,\"min\":\"[{\",\"max\":\"}]\"}]}",
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static int sameValue(const segmentStatsValue *a, const segmentStatsValue *b) {
    if (a->type != b->type) return 0;
    if (a->type == SQLITE_INTEGER) return a->i == b->i;
    if (a->type == SQLITE_FLOAT) return a->r == b->r;
    if (a->type == SQLITE_TEXT) return a->n == b->n && memcmp(a->p, b->p, a->n) == 0 && a->p[a->n] == '\0';
    return 1;
}

static int sameStats(int ra, const segmentColumnStats *a, int rb, const segmentColumnStats *b) {
    if (ra != rb) return 0;
    if (!ra) return 1;
    return a->rows == b->rows && a->nulls == b->nulls && a->has_bounds == b->has_bounds &&
           a->max_cut == b->max_cut && (!a->has_bounds || (sameValue(&a->min, &b->min) && sameValue(&a->max, &b->max)));
}

/* The registration of nseg segments, its text, and the cache's JSON file
 * of it at jpath: *crc, *size. */
static cJSON *registration(int nseg, char **text, uint32_t *crc, uint64_t *size) {
    cJSON *reg = cJSON_Parse("{\"id\":\"01TEST\",\"namespace\":\"n\",\"name\":\"t\",\"version\":9,"
                             "\"schema\":[{\"name\":\"a\",\"type\":\"INTEGER\"}],\"segments\":[]}");
    cJSON *segs = cJSON_GetObjectItemCaseSensitive(reg, "segments");
    for (int i = 0; i < nseg; i++) cJSON_AddItemToArray(segs, cJSON_Parse(shapes[i % NSHAPES]));
    *text = cJSON_PrintUnformatted(reg);
    *crc = (uint32_t)crc32(0, (const Bytef *)*text, (uInt)strlen(*text));
    FILE *f = fopen(jpath, "w");
    fprintf(f, "%s\ncrc32 %08lx\n", *text, (unsigned long)*crc);
    fclose(f);
    struct stat st;
    stat(jpath, &st);
    *size = (uint64_t)st.st_size;
    return reg;
}

static void testAnswers(void) {
    char *text;
    uint32_t crc;
    uint64_t size;
    int n = 3 * NSHAPES + 20;
    cJSON *reg = registration(n, &text, &crc, &size);
    /* what a reader of the JSON file has: the text parsed (a number cJSON
     * prints may read back as another), which the index is made of */
    cJSON *file = jsonStrictParse(text, strlen(text), NULL, NULL, &(jsonFault){0});
    ok(regIndexWrite(dir, "9.rix", file, text, strlen(text), crc, size) == 0, "an index of %d segments is written", n);
    regIndex *x = regIndexOpen(ipath, jpath);
    if (!ok(x != NULL, "and opened")) return;
    ok(regIndexCount(x) == n, "it counts the segments");
    cJSON *head = regIndexHead(x);
    ok(head && !cJSON_GetObjectItemCaseSensitive(head, "segments") &&
           cJSON_GetObjectItemCaseSensitive(head, "version")->valuedouble == 9,
       "its head is the registration without its segments");
    cJSON_Delete(head);
    int bad = 0, badRows = 0, badRecords = 0;
    const cJSON *g;
    int i = 0;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(file, "segments")) {
        int64_t rows;
        if (regIndexRows(x, i) != (jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows) ? rows : -1))
            badRows++;
        for (int64_t id = -1; id <= 6; id++) {
            segmentColumn col = {.name = "c", .type = LAKE_TYPE_INTEGER, .id = id};
            segmentSchema one = {.ncols = 1, .cols = &col};
            segmentColumnStats a, b;
            int ra = segmentStatsColumn(g, &one, 0, &a), rb = regIndexStats(x, i, id, &b);
            if (!sameStats(ra, &a, rb, &b)) {
                bad++;
                printf("# segment %d (shape %d), column id %lld: json %d, index %d\n", i, i % NSHAPES,
                       (long long)id, ra, rb);
            }
        }
        cJSON *r = regIndexRecord(x, i);
        char *want = cJSON_PrintUnformatted(g), *got = r ? cJSON_PrintUnformatted(r) : NULL;
        if (!got || strcmp(want, got) != 0) {
            badRecords++;
            printf("# record %d: %s\n#   read back %s\n", i, want, got ? got : "(none)");
        }
        free(want);
        free(got);
        cJSON_Delete(r);
        i++;
    }
    ok(bad == 0, "every segment's statistics for every column id are segmentStatsColumn's (%d differ)", bad);
    ok(badRows == 0, "every segment's row count is its record's (%d differ)", badRows);
    ok(badRecords == 0, "every record reads back as it is in the registration (%d differ)", badRecords);
    regIndexClose(x);
    cJSON_Delete(file);
    cJSON_Delete(reg);
    free(text);
}

/* Damage the index (or its JSON) by one of several means, then open it. */
static void testRefused(void) {
    char *text;
    uint32_t crc;
    uint64_t size;
    cJSON *reg = registration(REGINDEX_MIN_SEGMENTS - 1, &text, &crc, &size);
    unlink(ipath);
    ok(regIndexWrite(dir, "9.rix", reg, text, strlen(text), crc, size) != 0 && access(ipath, F_OK) != 0,
       "no index of fewer than %d segments", REGINDEX_MIN_SEGMENTS);
    cJSON_Delete(reg);
    free(text);
    reg = registration(REGINDEX_MIN_SEGMENTS, &text, &crc, &size);
    regIndexWrite(dir, "9.rix", reg, text, strlen(text), crc, size);
    struct stat st;
    stat(ipath, &st);
    static const struct { const char *what; off_t at; int trunc; } damage[] = {
        {"torn", 0, 1}, {"a byte changed in its statistics", -200, 0},
        {"of another format", 8, 0}, {"a byte changed in its header", 20, 0},
    };
    char *orig = malloc((size_t)st.st_size);
    int fd = open(ipath, O_RDONLY);
    ok(read(fd, orig, (size_t)st.st_size) == st.st_size, "the index is read");
    close(fd);
    for (size_t d = 0; d < sizeof damage / sizeof damage[0]; d++) {
        fd = open(ipath, O_WRONLY | O_TRUNC);
        if (damage[d].trunc) {
            ok(write(fd, orig, (size_t)st.st_size / 2) > 0, "(written)");
        } else {
            off_t at = damage[d].at < 0 ? st.st_size + damage[d].at : damage[d].at;
            orig[at] ^= 0x10;
            ok(write(fd, orig, (size_t)st.st_size) == st.st_size, "(written)");
            orig[at] ^= 0x10;
        }
        close(fd);
        regIndex *x = regIndexOpen(ipath, jpath);
        ok(x == NULL, "an index %s is refused", damage[d].what);
        regIndexClose(x);
    }
    fd = open(ipath, O_WRONLY | O_TRUNC);
    ok(write(fd, orig, (size_t)st.st_size) == st.st_size, "the index restored");
    close(fd);
    regIndex *x = regIndexOpen(ipath, jpath);
    ok(x != NULL, "is taken again");
    regIndexClose(x);
    /* another JSON file (the same registration, another version of it) */
    cJSON_Delete(reg);
    free(text);
    reg = registration(REGINDEX_MIN_SEGMENTS + 1, &text, &crc, &size);
    ok((x = regIndexOpen(ipath, jpath)) == NULL, "an index of another JSON file is refused");
    regIndexClose(x);
    unlink(jpath);
    ok((x = regIndexOpen(ipath, jpath)) == NULL, "an index without its JSON file is refused");
    regIndexClose(x);
    unlink(ipath);
    ok((x = regIndexOpen(ipath, jpath)) == NULL, "no index, none opened");
    cJSON_Delete(reg);
    free(text);
    free(orig);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    snprintf(jpath, sizeof jpath, "%s/9.json", dir);
    snprintf(ipath, sizeof ipath, "%s/9.rix", dir);
    testAnswers();
    testRefused();
    unlink(jpath);
    unlink(ipath);
    rmdir(dir);
    return tapDone();
}
