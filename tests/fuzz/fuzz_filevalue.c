/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_filevalue.c - FILE values (fileValueFromJson), REFs (refParse) and
 * the safe relative name of a FILE (fileNameSafe).
 *
 * Invariants: a value that parses prints canonical text that parses back
 * to the same canonical text; a REF that parses has a non-empty location;
 * a safe name is non-empty, relative, has no empty, "." or ".." component,
 * and is its own safe name.
 */
#include <cjson/cJSON.h>

#include "stage/filevalue.h"
#include "fuzz.h"

static void checkCanonical(const fileValue *fv) {
    char *text = fileValueToJson(fv);
    FUZZ_CHECK(text, "fileValueToJson failed");
    FUZZ_CHECK(!strchr(text, '\n'), "canonical text has a newline: %s", text);
    cJSON *again = cJSON_Parse(text);
    FUZZ_CHECK(again, "canonical text does not parse: %s", text);
    fileValue fv2;
    lakeError err = {0};
    int rc = fileValueFromJson(again, &fv2, &err);
    FUZZ_CHECK(rc == 0, "canonical text is no FILE value: %s: %s", text, err.msg);
    char *text2 = fileValueToJson(&fv2);
    FUZZ_CHECK(text2 && strcmp(text, text2) == 0, "canonical text changed: %s -> %s", text, text2);
    cJSON_free(text2);
    fileValueFree(&fv2);
    cJSON_Delete(again);
    cJSON_free(text);
}

static void checkSafeName(const char *name) {
    char out[256], out2[256];
    int rc = fileNameSafe(name, out, sizeof out);
    FUZZ_CHECK(rc >= -1 && rc <= 1, "fileNameSafe returned %d", rc);
    if (rc < 0) return;
    FUZZ_CHECK(out[0] && out[0] != '/', "not relative: '%s'", out);
    for (const char *p = out; *p;) {
        size_t n = strcspn(p, "/");
        FUZZ_CHECK(n > 0 && !(n == 1 && p[0] == '.') && !(n == 2 && p[0] == '.' && p[1] == '.'),
                   "bad component in '%s'", out);
        p += n + (p[n] == '/');
        FUZZ_CHECK(p[-1] != '/' || *p, "trailing '/' in '%s'", out);
    }
    FUZZ_CHECK(fileNameSafe(out, out2, sizeof out2) == 0 && strcmp(out, out2) == 0,
               "not its own safe name: '%s' -> '%s'", out, out2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzzString(data, size);
    fileValue fv;
    lakeError err = {0};

    int rc = refParse(text, &fv, &err);
    if (rc) {
        fuzzCheckError(rc, &err);
    } else {
        /* a null FILE succeeds without a location */
        FUZZ_CHECK(!fv.location || fv.location[0], "a REF with an empty location");
        if (fv.location && fv.size >= 0) checkCanonical(&fv);
    }
    fileValueFree(&fv);

    cJSON *doc = cJSON_Parse(text);
    memset(&err, 0, sizeof err);
    rc = fileValueFromJson(doc, &fv, &err);
    if (rc) fuzzCheckError(rc, &err);
    else checkCanonical(&fv);
    fileValueFree(&fv);
    cJSON_Delete(doc);

    checkSafeName(text);
    free(text);
    return 0;
}
