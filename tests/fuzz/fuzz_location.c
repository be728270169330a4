/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_location.c - stage URLs (stageOpen: file:// and s3://) and the
 * containment of locations (stageRelativePath, stageContains).
 *
 * Input: a stage URL, a newline, a location.  Both are also tried against
 * fixed stages of each backend, so most inputs reach the containment
 * check even when their stage URL does not parse.
 *
 * Invariants:
 *  - a stage URL that opens normalises to a URL that opens to itself;
 *  - a location accepted as inside a stage decodes to the decoded stage
 *    URL, '/', and the relative path, which is clean (no empty, "." or
 *    ".." component), and stageContains agrees; the location built from
 *    the stage URL and that path is inside too, at the same path;
 *  - a location refused is a 65 with a one-line message.
 */
#include "stage/backend.h"
#include "stage/stage.h"
#include "fuzz.h"

static stage *fixedLocal, *fixedS3;

static void checkLocation(const stage *st, const char *loc) {
    lakeError err = {0};
    char *rel = stageRelativePath(st, loc);
    int rc = stageContains(st, loc, &err);
    if (!rel) {
        FUZZ_CHECK(rc == LAKE_EDATA, "outside, yet stageContains says %d", rc);
        fuzzCheckError(rc, &err);
        return;
    }
    FUZZ_CHECK(rc == 0, "inside (%s), yet stageContains says %d: %s", rel, rc, err.msg);
    FUZZ_CHECK(rel[0] && stageCleanRelative(rel), "unclean relative path '%s' of '%s'", rel, loc);

    /* containment: the location is the stage's prefix, '/', rel */
    char *dloc = stagePercentDecode(loc), *droot = stagePercentDecode(stageUrl(st));
    FUZZ_CHECK(dloc && droot, "an accepted location or stage URL does not decode: %s", loc);
    size_t n = strlen(droot);
    FUZZ_CHECK(strncmp(dloc, droot, n) == 0 && dloc[n] == '/' && strcmp(dloc + n + 1, rel) == 0,
               "'%s' accepted inside '%s' as '%s'", loc, stageUrl(st), rel);

    /* the location a put would write for rel is inside, at rel */
    char *enc = stagePercentEncode(rel), *again = NULL;
    FUZZ_CHECK(enc, "out of memory");
    size_t len = strlen(stageUrl(st)) + strlen(enc) + 2;
    char *built = malloc(len);
    FUZZ_CHECK(built, "out of memory");
    snprintf(built, len, "%s/%s", stageUrl(st), enc);
    again = stageRelativePath(st, built);
    FUZZ_CHECK(again && strcmp(again, rel) == 0, "'%s' is at '%s', not '%s'", built,
               again ? again : "(outside)", rel);
    free(again);
    free(built);
    free(enc);
    free(dloc);
    free(droot);
    free(rel);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    lakeError err = {0};
    /* opening touches nothing: the directory need not exist */
    if (stageOpen("file:///lake-fuzz/stage", &fixedLocal, &err) ||
        stageOpen("s3://lake-bucket/lake/stage", &fixedS3, &err)) {
        fprintf(stderr, "fuzz_location: %s\n", err.msg);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzzString(data, size);
    char *nl = strchr(text, '\n');
    const char *url = text, *loc = nl ? nl + 1 : "";
    if (nl) *nl = '\0';

    stage *st = NULL;
    lakeError err = {0};
    int rc = stageOpen(url, &st, &err);
    if (rc) {
        FUZZ_CHECK(rc == LAKE_ECONFIG || rc == LAKE_EFAIL, "stageOpen: %d", rc);
        fuzzCheckError(rc, &err);
    } else {
        stage *st2 = NULL;
        rc = stageOpen(stageUrl(st), &st2, &err);
        FUZZ_CHECK(rc == 0, "normalised URL '%s' of '%s' does not open: %s", stageUrl(st), url, err.msg);
        FUZZ_CHECK(strcmp(stageUrl(st2), stageUrl(st)) == 0, "'%s' normalises to '%s', then '%s'", url,
                   stageUrl(st), stageUrl(st2));
        stageClose(st2);
        checkLocation(st, loc);
        checkLocation(st, url);
        stageClose(st);
    }
    checkLocation(fixedLocal, loc);
    checkLocation(fixedS3, loc);
    checkLocation(fixedLocal, url);
    checkLocation(fixedS3, url);
    free(text);
    return 0;
}
