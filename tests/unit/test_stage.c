/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_stage.c - unit tests of lib/stage: containment, FILE values, REFs.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "stage/filevalue.h"
#include "stage/stage.h"
#include "tap.h"

static void testContainment(void) {
    stage *st;
    lakeError err = {0};
    ok(stageOpen("file:///srv/lake-stage/", &st, &err) == 0, "open a file:// stage");
    ok(strcmp(stageUrl(st), "file:///srv/lake-stage") == 0, "a trailing slash is normalised away");
    static const struct { const char *loc; int inside; } cases[] = {
        {"file:///srv/lake-stage/files/2026/12/01ABC", 1},
        {"file:///srv/lake-stage/tables/t1/seg", 1},
        {"file:///srv/lake-stage/a%20b", 1},
        {"file:///srv/lake-stage", 0},
        {"file:///srv/lake-stage/", 0},
        {"file:///srv/lake-stage2/x", 0},
        {"file:///srv/lake-stage/../etc/passwd", 0},
        {"file:///srv/lake-stage/files/../../x", 0},
        {"file:///srv/lake-stage/%2e%2e/x", 0},
        {"file:///srv/lake-stage/files/%2E%2E/%2E%2E/x", 0},
        {"file:///srv/lake-stage/./files/x", 0},
        {"file:///srv/lake-stage//files/x", 0},
        {"file:///srv/lake-stage/files/x/", 0},
        {"file:///srv/lake-stage/x%00y", 0},
        {"file:///srv/lake-stage/x%zz", 0},
        {"file:///srv/lake-stage%2fx", 0},
        {"file://host/srv/lake-stage/x", 0},
        {"file:///etc/passwd", 0},
        {"s3://srv/lake-stage/x", 0},
        {"/srv/lake-stage/x", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = stageContains(st, cases[i].loc, &err);
        ok((rc == 0) == cases[i].inside && (rc == 0 || rc == LAKE_EDATA), "%s is %s",
           cases[i].loc, cases[i].inside ? "inside" : "outside");
    }
    char *rel = stageRelativePath(st, "file:///srv/lake-stage/files/2026/12/X");
    ok(rel && strcmp(rel, "files/2026/12/X") == 0, "relative path below the root");
    free(rel);
    stageClose(st);

    ok(stageOpen("file:///", &st, &err) == LAKE_ECONFIG, "the root directory is no stage");
    ok(stageOpen("file:///a/../b", &st, &err) == LAKE_ECONFIG, "a stage URL with .. is refused");
    ok(stageOpen("file://relative/x", &st, &err) == LAKE_ECONFIG, "a host in a file URL is refused");
    ok(stageOpen("ftp://x/y", &st, &err) == LAKE_ECONFIG, "an unknown scheme is refused");
}

static const char *good =
    "{\"location\":\"file:///s/files/2026/12/A\",\"size\":5242881,"
    "\"sha256\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\","
    "\"content_type\":\"text/plain\",\"name\":\"a \\\"b\\\".txt\","
    "\"last_modified\":\"2026-12-02T13:08:02Z\"}";

static void testFileValues(void) {
    fileValue fv;
    lakeError err = {0};
    cJSON *j = cJSON_Parse(good);
    ok(fileValueFromJson(j, &fv, &err) == 0 && fv.size == 5242881, "parse a FILE value");
    char *text = fileValueToJson(&fv);
    ok(text && strcmp(text, good) == 0, "canonical text round-trips byte for byte");
    free(text);
    fileValueFree(&fv);
    cJSON_Delete(j);

    fv = (fileValue){.location = "file:///s/x", .size = 9007199254740991LL};
    text = fileValueToJson(&fv);
    ok(text && strstr(text, "\"size\":9007199254740991"), "large sizes print as integers");
    free(text);

    static const char *bad[] = {
        "{\"size\":1,\"sha256\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"}",
        "{\"location\":\"file:///s/x\",\"size\":-1,\"sha256\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"}",
        "{\"location\":\"file:///s/x\",\"size\":1.5,\"sha256\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"}",
        "{\"location\":\"file:///s/x\",\"size\":1,\"sha256\":\"abc\"}",
        "{\"location\":\"file:///s/x\",\"size\":1,\"sha256\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\",\"name\":7}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = cJSON_Parse(bad[i]);
        ok(fileValueFromJson(j, &fv, &err) == LAKE_EDATA, "invalid FILE value %zu refused (%s)", i,
           err.msg);
        fileValueFree(&fv);
        cJSON_Delete(j);
    }
}

static void testRefs(void) {
    fileValue fv;
    lakeError err = {0};
    ok(refParse("file:///s/x", &fv, &err) == 0 && fv.size == -1 && !fv.sha256[0],
       "a bare location is a REF without digest");
    fileValueFree(&fv);
    ok(refParse(good, &fv, &err) == 0 && fv.size == 5242881, "a FILE value is a REF");
    fileValueFree(&fv);

    char row[2048];
    snprintf(row, sizeof row, "{\"title\":\"x\",\"year\":2026,\"pdf\":%s}", good);
    ok(refParse(row, &fv, &err) == 0 && strcmp(fv.location, "file:///s/files/2026/12/A") == 0,
       "a row with one FILE object is a REF");
    fileValueFree(&fv);

    cJSON *s = cJSON_CreateString(good);
    char *quoted = cJSON_PrintUnformatted(s);
    snprintf(row, sizeof row, "{\"title\":\"x\",\"pdf\":%s}", quoted);
    ok(refParse(row, &fv, &err) == 0 && fv.size == 5242881, "a row with FILE JSON text is a REF");
    fileValueFree(&fv);
    free(quoted);
    cJSON_Delete(s);

    snprintf(row, sizeof row, "{\"a\":%s,\"b\":%s}", good, good);
    ok(refParse(row, &fv, &err) == LAKE_EDATA, "two FILE values in a row are refused");
    fileValueFree(&fv);
    ok(refParse("{\"title\":\"x\"}", &fv, &err) == LAKE_EDATA, "a row without FILE is refused");
    fileValueFree(&fv);
    ok(refParse("{\"pdf\":null}", &fv, &err) == 0 && !fv.location, "a NULL FILE column is no FILE");
    fileValueFree(&fv);
    ok(refParse(" null ", &fv, &err) == 0 && !fv.location, "null is no FILE");
    fileValueFree(&fv);
    ok(refParse("{\"location\": ", &fv, &err) == LAKE_EDATA && strstr(err.msg, "malformed"),
       "malformed JSON is refused");
    fileValueFree(&fv);
    ok(refParse("file:///a b", &fv, &err) == LAKE_EDATA, "a location with a space is refused");
    fileValueFree(&fv);
}

int main(void) {
    testContainment();
    testFileValues();
    testRefs();
    return tapDone();
}
