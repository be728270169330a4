/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_aggregate.c - unit tests of lib/query/aggregate's planner: which
 * statements are split by segment, and the SQL each part runs.
 */
#include <stdio.h>
#include <string.h>

#include "query/aggregate.h"
#include "tap.h"

static segmentSchema *cols;

static const segmentSchema *schemaOf(void *arg, const char *ns, const char *name) {
    (void)arg;
    return strcmp(ns, "a") == 0 && strcmp(name, "t") == 0 ? cols : NULL;
}

/* Plan sql; 1 when split (the plan is then in *p, to free), 0 when not. */
static int plan(const char *sql, aggregatePlan *p) { return aggregatePlanMake(sql, schemaOf, NULL, p); }

/* sql is split, each segment runs seg, the items merge as items (joined
 * with " | ") and the merging statement ends with tail. */
static void split(const char *sql, const char *seg, const char *items, const char *tail) {
    aggregatePlan p;
    if (!ok(plan(sql, &p) == 1, "split: %s", sql)) return;
    ok(strcmp(p.segment, seg) == 0, "  each segment runs %s (got %s)", seg, p.segment);
    char got[1024] = "";
    for (int i = 0; i < p.nitems; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " | " : "", p.items[i]);
    ok(strcmp(got, items) == 0, "  items merge as %s (got %s)", items, got);
    ok(strcmp(p.tail, tail) == 0, "  the merge ends '%s' (got '%s')", tail, p.tail);
    aggregatePlanFree(&p);
}

static void notSplit(const char *sql, const char *why) {
    aggregatePlan p;
    int r = plan(sql, &p);
    ok(r == 0, "not split (%s): %s", why, sql);
    if (r == 1) aggregatePlanFree(&p);
}

int main(void) {
    lakeError err = {0};
    if (segmentSchemaParse("[{\"name\":\"k\",\"type\":\"INTEGER\"},{\"name\":\"x\",\"type\":\"REAL\"},"
                           "{\"name\":\"s\",\"type\":\"TEXT\"}]",
                           &cols, &err))
        return 1;

    split("SELECT k % 100, count(*), sum(x), avg(length(s)) FROM a.t GROUP BY 1",
          "SELECT k % 100, count(*), sum(x), total(length(s)), count(length(s)) FROM rows AS \"t\" GROUP BY 1",
          "g0 | coalesce(sum(p0), 0) | sum(p1) | (total(p2) / sum(p3))", " GROUP BY g0");
    split("SELECT count(*), min(s), max(s) FROM a.t WHERE k BETWEEN 1 AND 9",
          "SELECT count(*), min(s), max(s) FROM rows AS \"t\" WHERE (k BETWEEN 1 AND 9) AND \"t\".rowid BETWEEN :lake_lo "
          "AND :lake_hi",
          "coalesce(sum(p0), 0) | min(p1) | max(p2)", "");
    /* equal partials are shared; an alias names the group key */
    split("select s AS name, count(k), avg(k), sum(k) from a.t t where t.k > 0 group by name having count(k) > 1 "
          "order by 3 desc, name limit 5 offset 1;",
          "SELECT s, count(k), total(k), sum(k) FROM rows AS \"t\" WHERE (t.k > 0) AND \"t\".rowid BETWEEN :lake_lo AND "
          ":lake_hi GROUP BY 1",
          "g0 | coalesce(sum(p0), 0) | (total(p1) / sum(p0)) | sum(p2)",
          " GROUP BY g0 HAVING coalesce(sum(p0), 0) > 1 ORDER BY 3 desc, name LIMIT 5 offset 1");
    split("SELECT k, x, count(*) FROM \"a\".\"t\" GROUP BY x, k ORDER BY k",
          "SELECT x, k, count(*) FROM rows AS \"t\" GROUP BY 1, 2", "g1 | g0 | coalesce(sum(p0), 0)",
          " GROUP BY g0, g1 ORDER BY g1");
    /* constants and scalar functions around aggregates; min(a, b) is not an aggregate */
    split("SELECT 7, round(avg(x), 2) AS r, max(k, 3) FROM a.t GROUP BY max(k, 3)",
          "SELECT max(k, 3), total(x), count(x) FROM rows AS \"t\" GROUP BY 1",
          "7 | round ( (total(p0) / sum(p1)) , 2 ) | g0", " GROUP BY g0");
    /* a string is an alias too; a name after IS is an operand (both found by fuzz_aggregate) */
    split("SELECT 8'00', count(*) FROM a.t GROUP BY x", "SELECT x, count(*) FROM rows AS \"t\" GROUP BY 1",
          "8 | coalesce(sum(p0), 0)", " GROUP BY g0");
    split("SELECT k IS s, count(*) FROM a.t GROUP BY 1", "SELECT k IS s, count(*) FROM rows AS \"t\" GROUP BY 1",
          "g0 | coalesce(sum(p0), 0)", " GROUP BY g0");
    /* a hex number ends at its last hex digit: a name after it is an alias (found by fuzz_aggregate) */
    split("SELECT 0x1fg, count(*), 1.5e-3 FROM a.t", "SELECT count(*) FROM rows AS \"t\"",
          "0x1f | coalesce(sum(p0), 0) | 1.5e-3", "");
    /* TRUE, FALSE, CAST, CURRENT_DATE … and an END that closes no CASE are names
     * to SQLite's parser: after an expression, an alias (found by fuzz_aggregate) */
    split("SELECT max(k==6)false, count(*) true, min(k) current_date, sum(k) cast FROM a.t",
          "SELECT max(k==6), count(*), min(k), sum(k) FROM rows AS \"t\"",
          "max(p0) | coalesce(sum(p1), 0) | min(p2) | sum(p3)", "");
    split("SELECT CASE WHEN max(k) > 1 THEN 1 END end, CASE count(*) WHEN 0 THEN 'none' END FROM a.t",
          "SELECT max(k), count(*) FROM rows AS \"t\"",
          "CASE WHEN max(p0) > 1 THEN 1 END | CASE coalesce(sum(p1), 0) WHEN 0 THEN 'none' END", "");
    /* the statement ends at its ';': the rest is the next one */
    aggregatePlan p;
    const char *two = "SELECT count(*) FROM a.t WHERE s = 'a;b'; SELECT 1";
    if (ok(plan(two, &p) == 1, "a statement followed by another is split"))
        ok(strcmp(p.end, " SELECT 1") == 0, "  the rest is the next statement (%s)", p.end);
    aggregatePlanFree(&p);

    notSplit("SELECT k, x FROM a.t", "no aggregate");
    notSplit("SELECT count(*) FROM b.t", "not a lake table");
    notSplit("SELECT count(DISTINCT k) FROM a.t", "DISTINCT");
    notSplit("SELECT DISTINCT k FROM a.t GROUP BY k", "DISTINCT");
    notSplit("SELECT group_concat(s) FROM a.t", "an aggregate that does not split");
    notSplit("SELECT k, count(*) OVER () FROM a.t", "a window function");
    notSplit("SELECT count(*) FILTER (WHERE k > 1) FROM a.t", "FILTER");
    notSplit("SELECT count(*) FROM a.t, a.t AS u", "a join");
    notSplit("SELECT count(*) FROM a.t JOIN a.t u USING (k)", "a join");
    notSplit("SELECT count(*) FROM a.t WHERE k IN (SELECT k FROM a.t)", "a subquery");
    notSplit("SELECT count(*) FROM a.t WHERE k = ?", "a parameter");
    notSplit("SELECT k % 100,#count(*) FROM a.t GROUP BY 1", "a #parameter (found by fuzz_aggregate)");
    notSplit("SELECT x, count(*) FROM a.t GROUP BY k", "a column outside the group keys");
    notSplit("SELECT k + 1, count(*) FROM a.t GROUP BY k", "part of a group key");
    notSplit("SELECT s, count(*) FROM a.t GROUP BY s COLLATE NOCASE", "COLLATE in a group key");
    notSplit("SELECT max(s COLLATE NOCASE) FROM a.t", "COLLATE in an aggregate");
    notSplit("SELECT k AS x, count(*) FROM a.t GROUP BY x", "an alias that is also a column");
    notSplit("SELECT sum(count(*)) FROM a.t", "an aggregate of an aggregate");
    notSplit("SELECT * FROM a.t GROUP BY k", "*");
    notSplit("SELECT k, count(*) FROM a.t GROUP BY 3", "a position beyond the items");
    notSplit("SELECT count(*) FROM a.t WHERE s = 'unterminated", "an unterminated string");
    notSplit("SELECT count(*) FROM a.t WHERE rowid > 2", "the rowid (a segment's is not the table's)");
    notSplit("SELECT max(\"_ROWID_\") FROM a.t", "the rowid");
    notSplit("INSERT INTO a.t SELECT count(*), 0, '' FROM a.t", "not a SELECT");

    segmentSchemaFree(cols);
    return tapDone();
}
