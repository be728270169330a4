/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_aggregate.c - the planner of aggregates split by segment
 * (aggregatePlanMake) on arbitrary SQL text.
 *
 * Invariants: a statement is split or not without a memory error; a split
 * one names the table it was given and ends inside the text; and when
 * SQLite compiles the statement (over a.t) and the segment's statement
 * (over `rows`), as lake-query checks before it splits, the partials'
 * table and the merging statement lake-query would run compile too.
 */
#include <sqlite3.h>

#include "query/aggregate.h"
#include "fuzz.h"

static segmentSchema *cols;
static sqlite3 *db;

static const segmentSchema *schemaOf(void *arg, const char *ns, const char *name) {
    (void)arg;
    return sqlite3_stricmp(ns, "a") == 0 && sqlite3_stricmp(name, "t") == 0 ? cols : NULL;
}

/* Does SQLite compile sql on db? */
static int compiles(const char *sql) {
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!cols) {
        lakeError err = {0};
        if (segmentSchemaParse("[{\"name\":\"k\",\"type\":\"INTEGER\"},{\"name\":\"x\",\"type\":\"REAL\"},"
                               "{\"name\":\"s\",\"type\":\"TEXT\"}]", &cols, &err) ||
            sqlite3_open(":memory:", &db) != SQLITE_OK ||
            sqlite3_exec(db, "CREATE TABLE rows(k INTEGER, x REAL, s TEXT); ATTACH ':memory:' AS a; "
                             "CREATE TABLE a.t(k INTEGER, x REAL, s TEXT)", NULL, NULL, NULL) != SQLITE_OK)
            abort();
    }
    char *text = fuzzString(data, size);
    aggregatePlan plan;
    int r = aggregatePlanMake(text, schemaOf, NULL, &plan);
    FUZZ_CHECK(r == 0 || r == 1, "aggregatePlanMake returned %d", r);
    if (r == 1) {
        FUZZ_CHECK(plan.end >= text && plan.end <= text + strlen(text), "the end is outside the text");
        FUZZ_CHECK(sqlite3_stricmp(plan.ns, "a") == 0 && sqlite3_stricmp(plan.name, "t") == 0, "another table: %s.%s",
                   plan.ns, plan.name);
        FUZZ_CHECK(plan.nitems > 0 && plan.ngroups + plan.npartials > 0, "an empty plan");
        sqlite3_stmt *whole = NULL;
        if (sqlite3_prepare_v2(db, text, (int)(plan.end - text), &whole, NULL) == SQLITE_OK && whole &&
            sqlite3_column_count(whole) == plan.nitems && compiles(plan.segment)) {
            char *create = aggregatePartialsTable(&plan, whole);
            FUZZ_CHECK(create && sqlite3_exec(db, create, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", create,
                       sqlite3_errmsg(db));
            char *sql = aggregateMergeSql(&plan, whole);
            FUZZ_CHECK(sql && compiles(sql), "the merge does not compile: %s (for %s): %s", sql, text, sqlite3_errmsg(db));
            sqlite3_exec(db, "DROP TABLE temp.\"" QUERY_PARTIALS "\"", NULL, NULL, NULL);
            sqlite3_free(sql);
            sqlite3_free(create);
        }
        sqlite3_finalize(whole);
        aggregatePlanFree(&plan);
    }
    free(text);
    return 0;
}
