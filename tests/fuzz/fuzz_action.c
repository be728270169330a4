/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_action.c - the action protocol as lake-metasrv serves it: request
 * body decoding and dispatch (actionsHandle) over a real registry, and the
 * error answer (actionsErrorAnswer).
 *
 * Input: requests, one a line: "ROLE ACTION BODY", where ROLE is admin,
 * query-service, metadata-peer, user or anything else (no role), and BODY
 * is the rest of the line (may be empty, may hold NUL bytes).  Each input
 * starts from a new, empty registry in memory (SQLite ":memory:"), so a
 * reproducer replays the same way every time; the seeds create namespaces
 * and tables first, so later requests find something to read and change.
 *
 * Invariants: each request gets exactly one answer: on success one JSON
 * object that prints and parses back to the same text; on failure no
 * answer object, a one-line message, and an error answer with one of the
 * protocol's codes other than internal (a request, however malformed, is
 * never the server's fault); a body with a NUL before its end is refused
 * (invalid_argument), never read up to the NUL.
 */
#include <cjson/cJSON.h>

#include "catalog/actions.h"
#include "catalog/registry.h"
#include "stage/stage.h"
#include "fuzz.h"

#define STAGE_URL "file:///lake-fuzz/stage"

static stage *st;

/* The one JSON object text of j, checked to parse back to itself. */
static void checkOneObject(const cJSON *j, const char *what) {
    FUZZ_CHECK(cJSON_IsObject(j), "%s: not a JSON object", what);
    char *text = cJSON_PrintUnformatted(j);
    FUZZ_CHECK(text, "%s: does not print", what);
    const char *end = NULL;
    cJSON *back = cJSON_ParseWithOpts(text, &end, 1);
    FUZZ_CHECK(cJSON_IsObject(back), "%s: printed text is not one object: %s", what, text);
    char *again = cJSON_PrintUnformatted(back);
    FUZZ_CHECK(again && strcmp(again, text) == 0, "%s: %s reads back as %s", what, text, again);
    cJSON_free(again);
    cJSON_Delete(back);
    cJSON_free(text);
}

static void request(registry *reg, const char *line, size_t len) {
    static const char *const roles[] = {"admin", "query-service", "metadata-peer", "user"};
    const char *sp = memchr(line, ' ', len);
    size_t rl = sp ? (size_t)(sp - line) : len;
    const char *role = "none";
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (strlen(roles[i]) == rl && memcmp(roles[i], line, rl) == 0) role = roles[i];
    const char *rest = sp ? sp + 1 : line + len;
    size_t restLen = (size_t)(line + len - rest);
    const char *sp2 = memchr(rest, ' ', restLen);
    size_t al = sp2 ? (size_t)(sp2 - rest) : restLen;
    char action[64];
    snprintf(action, sizeof action, "%.*s", (int)(al < sizeof action ? al : sizeof action - 1), rest);
    /* the body as the server holds it: len bytes and a NUL after them */
    const char *b = sp2 ? sp2 + 1 : rest + restLen;
    size_t bodyLen = (size_t)(line + len - b);
    char *body = malloc(bodyLen + 1);
    FUZZ_CHECK(body, "out of memory");
    memcpy(body, b, bodyLen);
    body[bodyLen] = '\0';

    actionContext ctx = {
        .reg = reg,
        .stage = st,
        .stage_url = STAGE_URL,
        .principal = "fuzz",
        .role = role,
        .allow_unmarked = 0,
        .bounds = {1000, 1 << 20, 64 << 10},
    };
    cJSON *answer = NULL;
    lakeError err = {0};
    int rc = actionsHandle(&ctx, action, body, bodyLen, &answer, &err);
    /* bytes after a NUL are not ignored: such a body is no JSON object */
    if (memchr(body, '\0', bodyLen))
        FUZZ_CHECK(rc == LAKE_EDATA && err.status && strcmp(err.status, "invalid_argument") == 0,
                   "%s: a body with a NUL inside got %d (%s)", action, rc, err.msg);
    if (rc == 0) {
        checkOneObject(answer, action);
    } else {
        FUZZ_CHECK(!answer, "%s failed (%s) yet answered", action, err.msg);
        fuzzCheckError(rc, &err);
        int http = 0;
        cJSON *e = actionsErrorAnswer(&err, "fuzz", &http);
        checkOneObject(e, "error answer");
        FUZZ_CHECK(http >= 400 && http < 500, "%s: HTTP %d (%s): %s / %s", action, http, errStatus(&err),
                   err.msg, err.cause);
        cJSON_Delete(e);
    }
    cJSON_Delete(answer);
    free(body);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    lakeError err = {0};
    if (stageOpen(STAGE_URL, &st, &err)) {
        fprintf(stderr, "fuzz_action: %s\n", err.msg);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    registry *reg = NULL;
    lakeError err = {0};
    if (registryOpen(":memory:", 1, STAGE_URL, &reg, &err)) {
        fprintf(stderr, "fuzz_action: registry: %s / %s\n", err.msg, err.cause);
        abort();
    }
    const char *p = (const char *)data, *end = p + size;
    for (int n = 0; p < end && n < 64; n++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        request(reg, p, len);
        p += len + 1;
    }
    registryClose(reg);
    return 0;
}
