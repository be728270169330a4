/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_prune.c - unit tests of lib/query/prune: which segments a term
 * excludes, from statistics in the format of query/segment.h, with values
 * as SQLite hands them to xFilter.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "query/prune.h"
#include "query/segment.h"
#include "sqlval.h"
#include "tap.h"

static sqlite3 *db;
static segmentSchema *cols;

/* The value of the SQL expression expr (a fresh copy). */
static sqlite3_value *val(const char *expr) { return sqlval(db, expr); }

/* Does the term "column col op exprs…" prune segment record seg?  exprs
 * is a '|'-separated list (several for IN). */
static int prunes(const char *seg, int col, pruneOp op, const char *exprs) {
    cJSON *g = cJSON_Parse(seg);
    sqlite3_value *vals[8];
    int n = 0;
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", exprs ? exprs : "");
    for (char *e = strtok_r(buf, "|", &save); e && n < 8; e = strtok_r(NULL, "|", &save)) vals[n++] = val(e);
    pruneTerm term = {.op = op, .col = col, .vals = vals, .nvals = n};
    char why[256] = "";
    int r = g ? pruneSegment(g, cols, &term, 1, why, sizeof why) : -1;
    for (int i = 0; i < n; i++) sqlite3_value_free(vals[i]);
    cJSON_Delete(g);
    return r;
}

int main(void) {
    lakeError err = {0};
    sqlite3_open(":memory:", &db);
    segmentSchemaParse("[{\"name\":\"k\",\"type\":\"INTEGER\"},{\"name\":\"s\",\"type\":\"TEXT\"},"
                       "{\"name\":\"x\",\"type\":\"REAL\"},{\"name\":\"b\",\"type\":\"BOOLEAN\"},"
                       "{\"name\":\"bl\",\"type\":\"BLOB\"}]",
                       &cols, &err);
    const char *seg = "{\"location\":\"l\",\"size\":1,\"sha256\":\"0\",\"rows\":10,\"stats\":["
                      "{\"nulls\":2,\"min\":0,\"max\":99},{\"nulls\":0,\"min\":\"b\",\"max\":\"d\"},"
                      "{\"nulls\":0,\"min\":-0.0,\"max\":5.5},{\"nulls\":0,\"min\":0,\"max\":0},{\"nulls\":0}]}";

    /* INTEGER, with the column's numeric affinity applied to the value */
    ok(prunes(seg, 0, PRUNE_EQ, "100") == 1, "k = 100 prunes [0, 99]");
    ok(prunes(seg, 0, PRUNE_EQ, "50") == 0, "k = 50 keeps");
    ok(prunes(seg, 0, PRUNE_EQ, "'50'") == 0, "k = '50' keeps");
    ok(prunes(seg, 0, PRUNE_EQ, "'150'") == 1, "k = '150' prunes (numeric affinity)");
    ok(prunes(seg, 0, PRUNE_EQ, "'abc'") == 0, "k = 'abc' keeps (another storage class)");
    ok(prunes(seg, 0, PRUNE_LT, "'abc'") == 0, "k < 'abc' keeps (every integer is below text)");
    ok(prunes(seg, 0, PRUNE_EQ, "99.5") == 1, "k = 99.5 prunes");
    ok(prunes(seg, 0, PRUNE_LT, "0") == 1, "k < 0 prunes");
    ok(prunes(seg, 0, PRUNE_LE, "0") == 0, "k <= 0 keeps");
    ok(prunes(seg, 0, PRUNE_LT, "-0.5") == 1, "k < -0.5 prunes");
    ok(prunes(seg, 0, PRUNE_GT, "99") == 1, "k > 99 prunes");
    ok(prunes(seg, 0, PRUNE_GE, "99") == 0, "k >= 99 keeps");
    ok(prunes(seg, 0, PRUNE_GE, "9007199254740993") == 1, "k >= 2^53+1 prunes (exact compare)");
    ok(prunes(seg, 0, PRUNE_IN, "100|200") == 1, "k IN (100, 200) prunes");
    ok(prunes(seg, 0, PRUNE_IN, "100|50") == 0, "k IN (100, 50) keeps");
    ok(prunes(seg, 0, PRUNE_IN, "NULL") == 1, "k IN (NULL) prunes");
    ok(prunes(seg, 0, PRUNE_EQ, "NULL") == 1, "k = NULL prunes");
    ok(prunes(seg, 0, PRUNE_ISNULL, NULL) == 0, "k IS NULL keeps 2 NULLs");
    ok(prunes(seg, 1, PRUNE_ISNULL, NULL) == 1, "s IS NULL prunes no NULL");
    ok(prunes(seg, 0, PRUNE_NOTNULL, NULL) == 0, "k IS NOT NULL keeps");

    /* TEXT: memcmp order; numbers compare as text, so they keep */
    ok(prunes(seg, 1, PRUNE_EQ, "'a'") == 1, "s = 'a' prunes ['b', 'd']");
    ok(prunes(seg, 1, PRUNE_EQ, "'c'") == 0, "s = 'c' keeps");
    ok(prunes(seg, 1, PRUNE_EQ, "'d '") == 1, "s = 'd ' prunes (longer than the max)");
    ok(prunes(seg, 1, PRUNE_EQ, "5") == 0, "s = 5 keeps");
    ok(prunes(seg, 1, PRUNE_GT, "'d'") == 1, "s > 'd' prunes");
    ok(prunes(seg, 1, PRUNE_GE, "'d'") == 0, "s >= 'd' keeps");
    ok(prunes(seg, 1, PRUNE_LT, "'b'") == 1, "s < 'b' prunes");
    ok(prunes(seg, 1, PRUNE_EQ, "x'63'") == 0, "s = a BLOB keeps");

    /* REAL, BOOLEAN, BLOB */
    ok(prunes(seg, 2, PRUNE_EQ, "0") == 0, "x = 0 keeps [-0.0, 5.5]");
    ok(prunes(seg, 2, PRUNE_GT, "'5.5'") == 1, "x > '5.5' prunes");
    ok(prunes(seg, 3, PRUNE_EQ, "1") == 1, "b = 1 prunes an all-false segment");
    ok(prunes(seg, 3, PRUNE_EQ, "'true'") == 0, "b = 'true' keeps");
    ok(prunes(seg, 4, PRUNE_EQ, "x'00'") == 0, "a BLOB column keeps");
    ok(prunes(seg, 4, PRUNE_ISNULL, NULL) == 1, "bl IS NULL prunes no NULL");

    /* a cut max stands for the prefix followed by anything */
    const char *cut = "{\"rows\":3,\"stats\":[{\"nulls\":0,\"min\":0,\"max\":1},"
                      "{\"nulls\":0,\"min\":\"aaa\",\"max\":\"abc\",\"max_cut\":true},{\"nulls\":3},{\"nulls\":3},{\"nulls\":3}]}";
    ok(prunes(cut, 1, PRUNE_GT, "'abd'") == 1, "cut max 'abc…': s > 'abd' prunes");
    ok(prunes(cut, 1, PRUNE_GE, "'abd'") == 1, "cut max 'abc…': s >= 'abd' prunes");
    ok(prunes(cut, 1, PRUNE_GT, "'abcz'") == 0, "cut max 'abc…': s > 'abcz' keeps");
    ok(prunes(cut, 1, PRUNE_EQ, "'abc'") == 0, "cut max 'abc…': s = 'abc' keeps");
    ok(prunes(cut, 1, PRUNE_EQ, "'abcdef'") == 0, "cut max 'abc…': s = 'abcdef' keeps");
    ok(prunes(cut, 2, PRUNE_EQ, "1") == 1, "an all-NULL column: x = 1 prunes");
    ok(prunes(cut, 2, PRUNE_NOTNULL, NULL) == 1, "an all-NULL column: x IS NOT NULL prunes");

    /* no statistics, or not the segment's shape: kept */
    ok(prunes("{\"rows\":3}", 0, PRUNE_EQ, "1000") == 0, "no stats: kept");
    /* a segment written before the table's later columns were added
     * (issue 28): its own column by its statistics, the others all NULL */
    ok(prunes("{\"rows\":3,\"stats\":[{\"nulls\":0,\"min\":0,\"max\":1}]}", 0, PRUNE_EQ, "1000") == 1,
       "a segment of fewer columns: its column's statistics prune");
    ok(prunes("{\"rows\":3,\"stats\":[{\"nulls\":0,\"min\":0,\"max\":1}]}", 1, PRUNE_NOTNULL, NULL) == 1,
       "a segment of fewer columns: a column added after it is NULL there");
    ok(prunes("{\"rows\":3,\"columns\":[1,2],\"stats\":[{\"nulls\":0,\"min\":0,\"max\":1}]}", 0, PRUNE_EQ,
              "1000") == 0,
       "columns and stats of other lengths: kept");
    ok(prunes("{\"rows\":3,\"stats\":[{\"nulls\":9,\"min\":0,\"max\":1},{},{},{},{}]}", 0, PRUNE_EQ, "1000") == 0,
       "more NULLs than rows: kept");
    ok(prunes("{\"rows\":3,\"stats\":[{\"nulls\":0,\"min\":\"a\",\"max\":\"b\"},{},{},{},{}]}", 0, PRUNE_EQ,
              "1000") == 0,
       "text bounds on an INTEGER column: kept");
    ok(prunes("{\"rows\":0}", 0, PRUNE_EQ, "1") == 1, "no rows: pruned");

    segmentSchemaFree(cols);
    sqlite3_close(db);
    return tapDone();
}
