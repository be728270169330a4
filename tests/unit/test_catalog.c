/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_catalog.c - the catalog below the command line: appends (no CLI for
 * them yet), segment statistics through append and resolve,
 * read-your-writes through the cache, expiry and the references gc reads,
 * the snapshot's re-check under an
 * injected mutation, and snapshot bounds; list_tables' grant scope and
 * pages at the registry.
 *
 * The source is a parameter as in the bats suites: with LAKE_TEST_SOURCE
 * unset or "local" these run on a fresh local registry.  The fault
 * injection is test-only: registrySetScanHook lets this test change the
 * registry (through a second SQLite connection, as another writer would)
 * between the scan and the generation re-check, which no real peer can be
 * made to do on cue.
 *
 * With LAKE_TEST_SOURCE=remote the appends and read-your-writes run through
 * sourceOpen(cfg) against a fresh lake-metasrv that the caller started
 * (tests/bats/metasrv-client.bats): LAKE_METASRV, LAKE_TOKEN_FILE (an admin
 * token) and LAKE_CA_FILE name it, LAKE_TEST_STAGE is the stage it
 * advertises (segment locations must lie inside it).  The scan re-check
 * needs the registry in-process, so it runs only locally; the server's own
 * fencing is tested through its fault switch (metasrv-faults.bats).
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/cache.h"
#include "catalog/registry.h"
#include "catalog/source.h"
#include "core/config.h"
#include "tap.h"

static char dir[] = "/tmp/lake-unit-catalog-XXXXXX";
static char regpath[700], stageurl[700];

static cJSON *segment(const char *key, int rows) {
    char loc[800];
    snprintf(loc, sizeof loc, "%s/tables/t/%s", stageurl, key);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "location", loc);
    cJSON_AddNumberToObject(s, "size", 100);
    cJSON_AddStringToObject(s, "sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cJSON_AddNumberToObject(s, "rows", rows);
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, s);
    return arr;
}

static int64_t versionOf(const cJSON *reg) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(reg, "version");
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static int64_t generationOf(catalogSource *src) {
    cJSON *ans = NULL;
    lakeError err = {0};
    int64_t g = -1;
    if (sourceSnapshot(src, -1, 1000, 1 << 20, &ans, &err) == 0)
        g = (int64_t)cJSON_GetObjectItemCaseSensitive(ans, "generation")->valuedouble;
    cJSON_Delete(ans);
    return g;
}

static void testAppends(catalogSource *src) {
    lakeError err = {0};
    int64_t gen, v = -1;
    ok(sourceCreateNamespace(src, "docs", &gen, &err) == 0 && gen == 1, "create_namespace: generation 1");
    ok(sourceCreateTable(src, "docs", "t", "[{\"name\":\"a\",\"type\":\"TEXT\"}]", &gen, &err) == 0 &&
           gen == 2, "create_table: generation 2");

    cJSON *s1 = segment("s1", 3), *files = cJSON_CreateArray();
    cJSON_AddItemToArray(files, cJSON_CreateString(cJSON_GetArrayItem(s1, 0)->child->valuestring));
    ok(sourceAppend(src, "docs", "t", 0, s1, files, &v, &err) == 0 && v == 1, "append at 0 gives version 1");
    ok(generationOf(src) == 2, "an append does not raise the generation");
    ok(sourceAppend(src, "docs", "t", 0, s1, files, &v, &err) == 0 && v == 1,
       "the same append again answers version 1 (idempotent retry)");

    cJSON *s2 = segment("s2", 4);
    ok(sourceAppend(src, "docs", "t", 0, s2, NULL, &v, &err) == LAKE_ETEMP &&
           strcmp(errStatus(&err), "conflict") == 0,
       "a stale expected_version is a conflict (%s)", err.msg);
    ok(sourceAppend(src, "docs", "t", 1, s2, NULL, &v, &err) == 0 && v == 2, "append at 1 gives version 2");

    cJSON *reg = NULL;
    ok(sourceResolve(src, "docs", "t", -1, &reg, &err) == 0 && versionOf(reg) == 2 &&
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(reg, "segments")) == 2,
       "resolve: version 2 has both segments");
    cJSON_Delete(reg);
    ok(sourceResolve(src, "docs", "t", 1, &reg, &err) == 0 && versionOf(reg) == 1 &&
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(reg, "segments")) == 1,
       "resolve at version 1: one segment (versions are immutable)");
    cJSON_Delete(reg);

    cJSON *outside = cJSON_Parse("[{\"location\":\"file:///etc/passwd\",\"size\":1,"
                                 "\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\","
                                 "\"rows\":1}]");
    ok(sourceAppend(src, "docs", "t", 2, outside, NULL, &v, &err) == LAKE_EDATA,
       "a segment outside the stage is refused (%s)", err.msg);
    cJSON *badfile = cJSON_Parse("[\"file:///etc/passwd\"]");
    ok(sourceAppend(src, "docs", "t", 2, s2, badfile, &v, &err) == LAKE_EDATA,
       "a referenced FILE outside the stage is refused");
    ok(sourceAppend(src, "docs", "nope", 0, s2, NULL, &v, &err) == LAKE_ENOINPUT, "append to a missing table: 66");
    ok(sourceResolve(src, "docs", "t", -1, &reg, &err) == 0 && versionOf(reg) == 2,
       "refused appends changed nothing");
    cJSON_Delete(reg);
    cJSON_Delete(outside);
    cJSON_Delete(badfile);
    cJSON_Delete(s1);
    cJSON_Delete(s2);
    cJSON_Delete(files);
}

/* A segment's stats: checked against the table's schema, stored in
 * canonical form, resolved as stored; none stays none. */
static void testStats(catalogSource *src) {
    lakeError err = {0};
    int64_t gen, v = -1;
    sourceCreateTable(src, "docs", "st", "[{\"name\":\"i\",\"type\":\"INTEGER\"},{\"name\":\"s\",\"type\":\"TEXT\"}]",
                      &gen, &err);
    cJSON *s1 = segment("st1", 3), *bad = segment("st2", 3), *reg = NULL;
    cJSON_AddItemToObject(cJSON_GetArrayItem(s1, 0), "stats",
                          cJSON_Parse("[{\"max\":9,\"min\":-1,\"nulls\":1},{\"nulls\":0,\"min\":\"a\",\"max\":\"b\",\"max_cut\":false}]"));
    cJSON_AddItemToObject(cJSON_GetArrayItem(bad, 0), "stats",
                          cJSON_Parse("[{\"nulls\":4},{\"nulls\":0}]"));
    ok(sourceAppend(src, "docs", "st", 0, bad, NULL, &v, &err) == LAKE_EDATA &&
           strcmp(err.msg, "append: malformed segment statistics") == 0,
       "more NULLs than rows: 65 (%s)", err.msg);
    ok(sourceAppend(src, "docs", "st", 0, s1, NULL, &v, &err) == 0 && v == 1, "an append with stats");
    cJSON *s2 = segment("st3", 1);
    ok(sourceAppend(src, "docs", "st", 1, s2, NULL, &v, &err) == 0 && v == 2, "an append without");
    char *got = NULL;
    if (sourceResolve(src, "docs", "st", -1, &reg, &err) == 0)
        got = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reg, "segments"));
    ok(got && strstr(got, "\"rows\":3,\"stats\":[{\"nulls\":1,\"min\":-1,\"max\":9},{\"nulls\":0,\"min\":\"a\",\"max\":\"b\"}]}") &&
           strstr(got, "\"rows\":1}]"),
       "resolve: stats in canonical form, none for the segment appended without (%s)", got);
    free(got);
    cJSON_Delete(reg);
    cJSON_Delete(s1);
    cJSON_Delete(s2);
    cJSON_Delete(bad);
}

static void testReadYourWrites(const lakeConfig *cfg, catalogSource *src) {
    lakeError err = {0};
    cacheOptions opt = {3600, 0, 0}; /* a long TTL: only the epoch can force a fresh resolve */
    catalogCache *c;
    cJSON *reg = NULL;
    int64_t v;
    ok(cacheOpen(cfg, src, &opt, &c, &err) == 0, "open the cache");
    ok(cacheResolve(c, "docs", "t", -1, &reg, &err) == 0 && versionOf(reg) == 2, "cache resolves version 2");
    cJSON_Delete(reg);
    cacheClose(c);

    /* another host appends: within the TTL this host still serves v2 */
    cJSON *s3 = segment("s3", 1);
    ok(sourceAppend(src, "docs", "t", 2, s3, NULL, &v, &err) == 0 && v == 3, "another writer appends v3");
    cacheOpen(cfg, src, &opt, &c, &err);
    ok(cacheResolve(c, "docs", "t", -1, &reg, &err) == 0 && versionOf(reg) == 2,
       "a fresh cache serves its resolved version within the TTL");
    cJSON_Delete(reg);

    /* this host appends: the epoch makes the very next read see it */
    cJSON *s4 = segment("s4", 1);
    ok(cacheAppend(c, "docs", "t", 3, s4, NULL, &v, &err) == 0 && v == 4, "this host appends v4");
    cacheClose(c);
    cacheOpen(cfg, src, &opt, &c, &err); /* as a new process would */
    ok(cacheResolve(c, "docs", "t", -1, &reg, &err) == 0 && versionOf(reg) == 4,
       "read-your-writes: the next resolve on this host sees v4");
    cJSON_Delete(reg);
    ok(cacheResolve(c, "docs", "t", 3, &reg, &err) == 0 && versionOf(reg) == 3, "an old version resolves");
    cJSON_Delete(reg);
    cacheClose(c);
    cJSON_Delete(s3);
    cJSON_Delete(s4);
}

/* The injected fault: bump the generation through a second connection. */
static int mutations;
static void mutateBetween(void *ctx, int scan) {
    (void)ctx;
    (void)scan;
    if (mutations <= 0) return;
    mutations--;
    sqlite3 *db;
    if (sqlite3_open(regpath, &db) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        sqlite3_exec(db, "UPDATE directory_marker SET generation = generation + 1", NULL, NULL, NULL);
    }
    sqlite3_close(db);
}

/* The references (sorted, as keys below the stage: "tables/t/a",
 * "files/f1") joined by commas, into out; those of other tables' keys
 * ("tables/t/" and "files/" only: the other tests' are left out by
 * prefix "x"). */
static void refsOf(catalogSource *src, char *out, size_t n) {
    cJSON *ans = NULL, *loc;
    lakeError err = {0};
    size_t len = 0, stage = strlen(stageurl) + 1;
    out[0] = '\0';
    if (sourceReferences(src, NULL, 1000, &ans, &err)) {
        snprintf(out, n, "error: %s", err.msg);
        return;
    }
    cJSON_ArrayForEach(loc, cJSON_GetObjectItemCaseSensitive(ans, "locations")) {
        const char *key = loc->valuestring + stage;
        if (strncmp(key, "tables/t/x", 10) != 0 && strncmp(key, "files/x", 7) != 0) continue;
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", len ? "," : "", key);
    }
    cJSON_Delete(ans);
}

static cJSON *fileList(const char *a, const char *b) {
    cJSON *arr = cJSON_CreateArray();
    char loc[800];
    for (const char *f = a; f; f = f == a ? b : NULL) {
        snprintf(loc, sizeof loc, "%s/files/%s", stageurl, f);
        cJSON_AddItemToArray(arr, cJSON_CreateString(loc));
    }
    return arr;
}

/* The rule gc reads (registryReferences): a segment while live in an
 * unexpired version; a FILE location while the version that recorded it
 * is unexpired or added a segment that is referenced.  And expire's own:
 * never the current version, a prefix of the others, refused reads. */
static void testExpiry(catalogSource *src) {
    lakeError err = {0};
    int64_t gen, v = -1, n = -1;
    char refs[4096], loc[800];
    ok(sourceCreateTable(src, "docs", "e", "[{\"name\":\"a\",\"type\":\"TEXT\"}]", &gen, &err) == 0,
       "expiry: a table");
    cJSON *a = segment("xa", 2), *b = segment("xb", 1), *a2 = segment("xa2", 1);
    cJSON *fa = fileList("x1", "x2"), *fb = fileList("x3", NULL), *fa2 = fileList("x2", NULL);
    ok(sourceAppend(src, "docs", "e", 0, a, fa, &v, &err) == 0 && v == 1, "expiry: version 1 adds xa (x1, x2)");
    ok(sourceAppend(src, "docs", "e", 1, b, fb, &v, &err) == 0 && v == 2, "expiry: version 2 adds xb (x3)");
    cJSON *replace = cJSON_CreateArray();
    snprintf(loc, sizeof loc, "%s/tables/t/xa", stageurl);
    cJSON_AddItemToArray(replace, cJSON_CreateString(loc));
    ok(sourceRewrite(src, "docs", "e", 2, "delete", replace, a2, fa2, &v, &err) == 0 && v == 3,
       "expiry: version 3 deletes x1's row: xa becomes xa2 (x2)");
    refsOf(src, refs, sizeof refs);
    ok(strcmp(refs, "files/x1,files/x2,files/x3,tables/t/xa,tables/t/xa2,tables/t/xb") == 0,
       "expiry: before any expires, every version's objects are references" ": %s", refs);

    ok(sourceExpire(src, "docs", "e", 86400, &n, &err) == 0 && n == 0, "expiry: nothing is a day old");
    ok(sourceRollback(src, "docs", "e", 3, 2, &v, &err) == 0 && v == 4, "expiry: version 4 rolls back to 2");
    ok(sourceExpire(src, "docs", "e", 0, &n, &err) == 0 && n == 4, "expiry: older than 0: versions 0 to 3");
    ok(sourceExpire(src, "docs", "e", 0, &n, &err) == 0 && n == 0, "expiry: marks are made once");
    refsOf(src, refs, sizeof refs);
    ok(strcmp(refs, "files/x1,files/x2,files/x3,tables/t/xa,tables/t/xb") == 0,
       "expiry: the rollback's version holds xa and xb again, with x1 to x3; xa2 is no reference" ": %s", refs);

    cJSON *reg = NULL;
    int rc = sourceResolve(src, "docs", "e", 3, &reg, &err);
    ok(rc == LAKE_EEXPIRED && err.status && strcmp(err.status, "expired") == 0 && !reg,
       "expiry: resolve of version 3 is 67 expired: %s", err.msg);
    ok(sourceRollback(src, "docs", "e", 4, 1, &v, &err) == LAKE_EEXPIRED, "expiry: rollback to 1 is 67");
    rc = sourceResolve(src, "docs", "e", 4, &reg, &err);
    ok(rc == 0 && versionOf(reg) == 4, "expiry: the current version reads");
    cJSON_Delete(reg);

    /* the same delete again, now from version 4: once 0 to 4 expire, x1
     * and xa go (x3 stays: version 2, expired, added xb, still live) */
    cJSON *a3 = segment("xa3", 1);
    ok(sourceRewrite(src, "docs", "e", 4, "delete", replace, a3, fa2, &v, &err) == 0 && v == 5,
       "expiry: version 5 deletes x1's row again");
    cJSON_Delete(a3);
    ok(sourceExpire(src, NULL, NULL, 0, &n, &err) == 0 && n >= 1, "expiry: every table's, version 4 among them");
    refsOf(src, refs, sizeof refs);
    ok(strcmp(refs, "files/x2,files/x3,tables/t/xa3,tables/t/xb") == 0, "expiry: x1 and xa are no references any more" ": %s", refs);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(a2);
    cJSON_Delete(fa);
    cJSON_Delete(fb);
    cJSON_Delete(fa2);
    cJSON_Delete(replace);
}

static void testScanRecheck(catalogSource *src) {
    lakeError err = {0};
    registry *reg;
    cJSON *ans = NULL;
    ok(sourceLocalRegistry(src, &reg, &err) == 0, "the local source's registry");
    registrySetScanHook(reg, mutateBetween, NULL);
    int64_t before = generationOf(src);

    mutations = 1;
    int rc = sourceSnapshot(src, -1, 1000, 1 << 20, &ans, &err);
    ok(rc == 0 && (int64_t)cJSON_GetObjectItemCaseSensitive(ans, "generation")->valuedouble == before + 1,
       "one mutation between scan and re-check: the second scan answers the new generation");
    cJSON_Delete(ans);

    mutations = REGISTRY_SNAPSHOT_SCANS;
    rc = sourceSnapshot(src, -1, 1000, 1 << 20, &ans, &err);
    ok(rc == LAKE_ETEMP && strcmp(errStatus(&err), "unavailable") == 0,
       "a mutation during every one of %d scans: unavailable (%s)", REGISTRY_SNAPSHOT_SCANS, err.msg);
    ok(mutations == 0, "exactly %d scans were made", REGISTRY_SNAPSHOT_SCANS);
    registrySetScanHook(reg, NULL, NULL);

    rc = sourceSnapshot(src, -1, 1, 1 << 20, &ans, &err);
    ok(rc != 0 && strcmp(errStatus(&err), "payload_too_large") == 0,
       "over max_entries the answer is an error, never a truncated list");
    rc = sourceSnapshot(src, -1, 1000, 40, &ans, &err);
    ok(rc != 0 && strcmp(errStatus(&err), "payload_too_large") == 0, "over max_bytes likewise");
}

/* The names of a list_tables answer's tables, "ns.t ns.t…", and its more. */
static const char *listed(const cJSON *ans, char *buf, size_t n) {
    const cJSON *t;
    size_t len = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(ans, "tables")) {
        len += (size_t)snprintf(buf + len, n - len, "%s%s.%s", len ? " " : "",
                                cJSON_GetObjectItemCaseSensitive(t, "namespace")->valuestring,
                                cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring);
        if (len >= n) break;
    }
    if (len < n) snprintf(buf + len, n - len, "%s", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "more")) ? " +" : "");
    return buf;
}

/* list_tables (issue 29) at the registry: a user's tables are those a read
 * grant on '*', the namespace or the table gives it, its role or PUBLIC;
 * pages by after, limit and bytes; the conditional form. */
static void testListTables(void) {
    char path[800], got[400];
    snprintf(path, sizeof path, "%s/list.db", dir);
    registry *r = NULL;
    lakeError err = {0};
    cJSON *ans = NULL;
    int64_t g = 0;
    int changed;
    int rc = registryOpen(path, REGISTRY_CREATE, stageurl, &r, &err);
    static const char *const tables[][2] = {{"n1", "a"}, {"n1", "b"}, {"n2", "a"}, {"n2", "b"}, {"n2", "c"}, {"n3", "a"}};
    for (size_t i = 0; !rc && i < sizeof tables / sizeof tables[0]; i++) {
        if (i == 0 || strcmp(tables[i][0], tables[i - 1][0]) != 0) rc = registryCreateNamespace(r, tables[i][0], &g, &err);
        if (!rc) rc = registryCreateTable(r, tables[i][0], tables[i][1], "[{\"name\":\"x\",\"type\":\"TEXT\"}]", &g, &err);
    }
    if (!rc) rc = registryAddPrincipal(r, "alice", "user", "00", NULL, &err);
    if (!rc) rc = registryAddPrincipal(r, "bob", "user", "01", NULL, &err);
    if (!rc) rc = registryGrant(r, 0, "read", "n1", "alice", "test", &g, &changed, &err);
    if (!rc) rc = registryGrant(r, 0, "read", "n2.b", "role:user", "test", &g, &changed, &err);
    if (!rc) rc = registryGrant(r, 0, "write", "n2.c", "alice", "test", &g, &changed, &err);
    if (!rc) rc = registryGrant(r, 0, "read", "n3.a", "bob", "test", &g, &changed, &err);
    if (!ok(rc == 0, "list_tables: a registry with grants (%s)", err.msg)) {
        registryClose(r);
        return;
    }

    rc = registryListTables(r, "alice", "user", NULL, NULL, NULL, -1, 1000, 1 << 20, 0, &ans, &err);
    ok(rc == 0 && strcmp(listed(ans, got, sizeof got), "n1.a n1.b n2.b") == 0,
       "a user: the tables its read grants name, to it and its role, sorted (%s)", rc ? err.msg : got);
    ok(rc == 0 && (int64_t)cJSON_GetObjectItemCaseSensitive(ans, "generation")->valuedouble == g,
       "with the current generation");
    cJSON_Delete(ans);
    rc = registryListTables(r, "carol", "user", NULL, NULL, NULL, -1, 1000, 1 << 20, 0, &ans, &err);
    ok(rc == 0 && strcmp(listed(ans, got, sizeof got), "n2.b") == 0, "another user: its role's only (%s)", got);
    cJSON_Delete(ans);
    rc = registryListTables(r, NULL, "admin", NULL, NULL, NULL, -1, 1000, 1 << 20, 0, &ans, &err);
    ok(rc == 0 && strcmp(listed(ans, got, sizeof got), "n1.a n1.b n2.a n2.b n2.c n3.a") == 0, "unscoped: every table (%s)",
       got);
    cJSON_Delete(ans);
    rc = registryListTables(r, "alice", "user", NULL, "n1", "a", -1, 1, 1 << 20, 0, &ans, &err);
    ok(rc == 0 && strcmp(listed(ans, got, sizeof got), "n1.b +") == 0, "after is exclusive; limit 1: more (%s)", got);
    cJSON_Delete(ans);
    rc = registryListTables(r, "alice", "user", NULL, "n1", "b", -1, 1, 1 << 20, 0, &ans, &err);
    ok(rc == 0 && strcmp(listed(ans, got, sizeof got), "n2.b") == 0, "the last page: no more (%s)", got);
    cJSON_Delete(ans);
    rc = registryListTables(r, NULL, "admin", "n2", NULL, NULL, -1, 1000, 10, 0, &ans, &err);
    ok(rc == 0 && strcmp(listed(ans, got, sizeof got), "n2.a +") == 0, "a byte cap below one table: one table (%s)", got);
    cJSON_Delete(ans);
    rc = registryListTables(r, "alice", "user", NULL, NULL, NULL, g, 1000, 1 << 20, 0, &ans, &err);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(ans, "status");
    ok(rc == 0 && cJSON_IsString(status) && strcmp(status->valuestring, "not_modified") == 0 &&
           !cJSON_GetObjectItemCaseSensitive(ans, "tables"),
       "known_generation current: not_modified");
    cJSON_Delete(ans);
    int64_t g2;
    rc = registryGrant(r, 1, "read", "n2.b", "role:user", "test", &g2, &changed, &err);
    if (!rc) rc = registryListTables(r, "alice", "user", NULL, NULL, NULL, g, 1000, 1 << 20, 0, &ans, &err);
    ok(rc == 0 && g2 == g + 1 && strcmp(listed(ans, got, sizeof got), "n1.a n1.b") == 0,
       "a revocation raises the generation: the conditional call answers the new listing (%s)", got);
    cJSON_Delete(ans);
    registryClose(r);
}

/* The registry URL's password never reaches a message. */
static void testRedact(void) {
    static const char *const cases[][2] = {
        {"postgresql://lake:s3cret@db/lake", "postgresql://lake:***@db/lake"},
        {"postgres://lake:s3cret@db:5432/lake?sslmode=require", "postgres://lake:***@db:5432/lake?sslmode=require"},
        {"postgresql://lake@db/lake", "postgresql://lake@db/lake"},
        {"postgresql://db/lake?user=lake&password=s3cret&sslmode=require",
         "postgresql://db/lake?user=lake&password=***&sslmode=require"},
        {"postgresql://a:b:c@h/d?password=x", "postgresql://a:***@h/d?password=***"},
        {"postgresql:///lake?host=/run/pg", "postgresql:///lake?host=/run/pg"},
        {"sqlite:/var/lib/lake/registry.db", "sqlite:/var/lib/lake/registry.db"},
    };
    char out[200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        registryRedact(cases[i][0], out, sizeof out);
        ok(strcmp(out, cases[i][1]) == 0, "redact %s -> %s (got %s)", cases[i][0], cases[i][1], out);
    }
    registryRedact("postgresql://lake:s3cret@db/lake", out, 12);
    ok(strcmp(out, "postgresql:") == 0, "a short buffer truncates (got %s)", out);
    ok(registryUrlKind("sqlite:/x") == 1 && registryUrlKind("postgresql://h/d") == 2 &&
           registryUrlKind("postgres://h/d") == 2 && registryUrlKind("sqlite:") < 0 &&
           registryUrlKind("mysql://h/d") < 0 && registryUrlKind("/path") < 0,
       "registry URL kinds");
}

/* A registry in memory (":memory:", as the fuzz harness opens one) is
 * created in memory only: no file of that name in the working directory
 * (the 0600 pre-create of a new registry file made one). */
static void testMemoryRegistry(void) {
    char cwd[600], tmp[] = "/tmp/lake-unit-mem-XXXXXX";
    registry *r = NULL;
    lakeError err = {0};
    if (!getcwd(cwd, sizeof cwd) || !mkdtemp(tmp) || chdir(tmp) != 0) {
        ok(0, "memory registry: set-up");
        return;
    }
    int rc = registryOpen(":memory:", REGISTRY_CREATE, "file:///nonexistent/stage", &r, &err);
    int made = access(":memory:", F_OK) == 0;
    registryClose(r);
    ok(rc == 0 && !made, "a :memory: registry opens (%s) and leaves no file named ':memory:' (%s)",
       rc ? err.msg : "ok", made ? "one was made" : "none");
    unlink(":memory:");
    if (chdir(cwd) != 0) ok(0, "memory registry: back to the working directory");
    rmdir(tmp);
}

int main(void) {
    const char *which = getenv("LAKE_TEST_SOURCE");
    int remote = which && strcmp(which, "remote") == 0;
    if (which && *which && strcmp(which, "local") != 0 && !remote) {
        printf("ok 1 # skip unknown LAKE_TEST_SOURCE=%s\n1..1\n", which);
        return 0;
    }
    const char *metasrv = getenv("LAKE_METASRV"), *stage = getenv("LAKE_TEST_STAGE");
    if (remote && (!metasrv || !*metasrv || !stage || !*stage)) {
        printf("ok 1 # skip LAKE_TEST_SOURCE=remote needs a running lake-metasrv: "
               "LAKE_METASRV, LAKE_TOKEN_FILE, LAKE_CA_FILE and LAKE_TEST_STAGE "
               "(tests/bats/metasrv-client.bats sets them)\n1..1\n");
        return 0;
    }
    testRedact();
    testMemoryRegistry();
    if (!mkdtemp(dir)) return 1;
    char home[600], cache[600];
    snprintf(home, sizeof home, "%s/lake", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(regpath, sizeof regpath, "%s/registry.db", home);
    if (remote) snprintf(stageurl, sizeof stageurl, "%s", stage);
    else snprintf(stageurl, sizeof stageurl, "file://%s/stage", home);
    setenv("LAKE_HOME", home, 1);
    setenv("LAKE_CACHE_DIR", cache, 1);
    setenv("LAKE_CONFIG", "/dev/null", 1);
    unsetenv("LAKE_STAGE");
    if (!remote) unsetenv("LAKE_METASRV");

    lakeConfig cfg;
    lakeError err = {0};
    catalogSource *src = NULL;
    if (configLoad(&cfg, NULL, 0, &err) || sourceOpen(&cfg, &src, &err)) {
        printf("not ok 1 - set-up: %s\n", err.msg);
        return 1;
    }
    testAppends(src);
    testReadYourWrites(&cfg, src);
    testStats(src);
    testExpiry(src);
    if (!remote) testScanRecheck(src);
    if (!remote) testListTables();
    sourceClose(src);
    configFree(&cfg);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) ok(0, "cleanup");
    return tapDone();
}
