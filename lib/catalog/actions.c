/*
 * actions.c - role checks, request validation and dispatch to the registry.
 */
#include "catalog/actions.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "catalog/names.h"
#include "core/jsonstrict.h"
#include "core/utf8.h"

/* One page of `references` at most: locations, and bytes of their text. */
#define REFERENCES_MAX_LIMIT 10000
#define REFERENCES_MAX_BYTES (4LL * 1024 * 1024)

enum { R_ADMIN = 1, R_QUERY = 2, R_PEER = 4, R_USER = 8, R_ALL = 15 };

static const struct {
    const char *name;
    int roles;
    const char *fields; /* the request's allowed keys, space-separated */
} actions[] = {
    {"catalog_snapshot", R_ADMIN | R_QUERY | R_PEER, "known_generation max_entries max_bytes"},
    {"resolve", R_ALL, "namespace name version"},
    {"append", R_ADMIN | R_QUERY | R_USER, "namespace name expected_version segments files"},
    {"create_namespace", R_ADMIN, "namespace"},
    {"create_table", R_ADMIN, "namespace name schema"},
    {"drop_table", R_ADMIN, "namespace name"},
    {"whoami", R_ALL, ""},
    {"references", R_ADMIN, "after limit"},
};
#define NACTIONS (sizeof actions / sizeof actions[0])

static int roleBit(const char *role) {
    if (!role) return 0;
    if (strcmp(role, "admin") == 0) return R_ADMIN;
    if (strcmp(role, "query-service") == 0) return R_QUERY;
    if (strcmp(role, "metadata-peer") == 0) return R_PEER;
    if (strcmp(role, "user") == 0) return R_USER;
    return 0;
}

int actionsKnown(const char *action) {
    for (size_t i = 0; i < NACTIONS; i++)
        if (strcmp(actions[i].name, action) == 0) return 1;
    return 0;
}

int actionsAllowed(const char *role, const char *action) {
    for (size_t i = 0; i < NACTIONS; i++)
        if (strcmp(actions[i].name, action) == 0) return (actions[i].roles & roleBit(role)) != 0;
    return 0;
}

/* Request fields. */
static const char *str(const cJSON *req, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An integer field: *out = def when absent; invalid_argument when present
 * but not a whole number >= min. */
static int integer(const cJSON *req, const char *key, int64_t def, int64_t min, int64_t *out,
                   lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    if (!v || cJSON_IsNull(v)) { *out = def; return 0; }
    if (!jsonWhole(v, min, out))
        return errSetStatus(err, "invalid_argument", "%s: expected a whole number", key);
    return 0;
}

static int names(const cJSON *req, int table, const char **ns, const char **name, lakeError *err) {
    *ns = str(req, "namespace");
    *name = table ? str(req, "name") : NULL;
    if (!nameIsValid(*ns) || (table && !nameIsValid(*name)))
        return errSetStatus(err, "invalid_argument",
                            "names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)", NAME_MAX_LEN);
    return 0;
}

static cJSON *generationAnswer(int64_t g) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "generation", (double)g);
    return a;
}

/* invalid_argument for a key the action does not take: a misspelt
 * field silently ignored would do something other than asked. */
static int checkFields(const char *action, const cJSON *req, lakeError *err) {
    const char *fields = "";
    for (size_t i = 0; i < NACTIONS; i++)
        if (strcmp(actions[i].name, action) == 0) fields = actions[i].fields;
    const cJSON *f;
    cJSON_ArrayForEach(f, req) {
        size_t n = strlen(f->string);
        const char *p = fields;
        int known = 0;
        while (*p && !known) {
            size_t k = strcspn(p, " ");
            known = k == n && strncmp(p, f->string, n) == 0;
            p += k + (p[k] == ' ');
        }
        if (!known) return errSetStatus(err, "invalid_argument", "%s: unknown field '%.64s'", action, f->string);
    }
    return 0;
}

int actionsDispatch(const actionContext *ctx, const char *action, const cJSON *req,
                    cJSON **answer, lakeError *err) {
    *answer = NULL;
    static const cJSON empty = {0};
    if (!req) req = &empty;
    if (!actionsKnown(action)) return errSetStatus(err, "not_found", "no such action");
    if (!actionsAllowed(ctx->role, action))
        return errSetStatus(err, "permission_denied", "role %s may not run %s", ctx->role, action);
    if (!cJSON_IsObject(req) && req != &empty)
        return errSetStatus(err, "invalid_argument", "the request must be a JSON object");
    if (req != &empty && checkFields(action, req, err)) return err->code;

    const char *ns, *name;
    int64_t a, b, c;
    int rc;
    if (strcmp(action, "catalog_snapshot") == 0) {
        if ((rc = integer(req, "known_generation", -1, -1, &a, err)) ||
            (rc = integer(req, "max_entries", ctx->bounds.max_entries, 1, &b, err)) ||
            (rc = integer(req, "max_bytes", ctx->bounds.max_bytes, 1, &c, err)))
            return rc;
        /* the server's limits cap the client's */
        snapshotBounds bounds = ctx->bounds;
        if (b < bounds.max_entries) bounds.max_entries = b;
        if (c < bounds.max_bytes) bounds.max_bytes = c;
        return registrySnapshot(ctx->reg, a, &bounds, ctx->allow_unmarked, answer, err);
    }
    if (strcmp(action, "resolve") == 0) {
        if ((rc = names(req, 1, &ns, &name, err)) || (rc = integer(req, "version", -1, 0, &a, err)))
            return rc;
        return registryResolve(ctx->reg, ns, name, a, answer, err);
    }
    /* an authority without a marker answers no snapshot; it takes no
     * change either (the local development path excepted) */
    if (!ctx->allow_unmarked && strcmp(action, "resolve") && strcmp(action, "whoami") &&
        !registryHasMarker(ctx->reg))
        return errSetStatus(err, "failed_precondition", "registry has no directory marker; not authoritative");
    if (strcmp(action, "append") == 0) {
        if ((rc = names(req, 1, &ns, &name, err))) return rc;
        /* containment needs a stage: without one every location is outside */
        if (!ctx->stage)
            return errSetStatus(err, "failed_precondition", "the registry has no stage; appends are refused");
        if (!cJSON_GetObjectItemCaseSensitive(req, "expected_version"))
            return errSetStatus(err, "invalid_argument", "append: expected_version is required");
        if ((rc = integer(req, "expected_version", 0, 0, &a, err))) return rc;
        rc = registryAppend(ctx->reg, ctx->stage, ns, name, a,
                            cJSON_GetObjectItemCaseSensitive(req, "segments"),
                            cJSON_GetObjectItemCaseSensitive(req, "files"), ctx->principal, answer, err);
        if (!rc && ctx->after_append) ctx->after_append();
        return rc;
    }
    if (strcmp(action, "references") == 0) {
        const cJSON *after = cJSON_GetObjectItemCaseSensitive(req, "after");
        if (after && !cJSON_IsNull(after) && !cJSON_IsString(after))
            return errSetStatus(err, "invalid_argument", "after: expected a location");
        if ((rc = integer(req, "limit", REFERENCES_MAX_LIMIT, 1, &a, err))) return rc;
        if (a > REFERENCES_MAX_LIMIT) a = REFERENCES_MAX_LIMIT; /* the server's limit caps the client's */
        return registryReferences(ctx->reg, cJSON_IsString(after) ? after->valuestring : NULL, a,
                                  REFERENCES_MAX_BYTES, answer, err);
    }
    if (strcmp(action, "create_namespace") == 0) {
        if ((rc = names(req, 0, &ns, &name, err)) ||
            (rc = registryCreateNamespace(ctx->reg, ns, &a, err)))
            return rc;
        *answer = generationAnswer(a);
        return 0;
    }
    if (strcmp(action, "create_table") == 0) {
        if ((rc = names(req, 1, &ns, &name, err))) return rc;
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(req, "schema");
        char *text = schema ? cJSON_PrintUnformatted(schema) : NULL, *canon = NULL;
        rc = schemaCanonical(text ? text : "", &canon, err);
        cJSON_free(text);
        if (rc) {
            err->status = "invalid_argument"; /* a bad schema is the request's fault */
            return err->code;
        }
        /* a schema no snapshot could carry is refused now, not at every
         * later snapshot */
        if ((int64_t)strlen(canon) > ctx->bounds.max_schema_bytes) {
            cJSON_free(canon);
            return errSetStatus(err, "payload_too_large", "the schema exceeds %lld bytes",
                                (long long)ctx->bounds.max_schema_bytes);
        }
        rc = registryCreateTable(ctx->reg, ns, name, canon, &a, err);
        cJSON_free(canon);
        if (rc) return rc;
        *answer = generationAnswer(a);
        return 0;
    }
    if (strcmp(action, "drop_table") == 0) {
        if ((rc = names(req, 1, &ns, &name, err)) || (rc = registryDropTable(ctx->reg, ns, name, &a, err)))
            return rc;
        *answer = generationAnswer(a);
        return 0;
    }
    /* whoami */
    *answer = cJSON_CreateObject();
    cJSON_AddStringToObject(*answer, "principal", ctx->principal);
    cJSON_AddStringToObject(*answer, "role", ctx->role);
    if (ctx->stage_url) cJSON_AddStringToObject(*answer, "stage", ctx->stage_url);
    cJSON *list = cJSON_AddArrayToObject(*answer, "actions");
    for (size_t i = 0; i < NACTIONS; i++)
        if (actionsAllowed(ctx->role, actions[i].name))
            cJSON_AddItemToArray(list, cJSON_CreateString(actions[i].name));
    return 0;
}

int actionsHandle(const actionContext *ctx, const char *action, const char *body, size_t len,
                  cJSON **answer, lakeError *err) {
    *answer = NULL;
    /* strict JSON (core/jsonstrict.h): no string cut at a \u0000, no key
     * given twice for the dispatch to pick one of, nothing after it */
    jsonFault f;
    cJSON *req = len ? jsonStrictParse(body, len, NULL, NULL, &f) : cJSON_CreateObject();
    if (!req && (!len || f.nomem)) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    if (!cJSON_IsObject(req)) {
        char why[96];
        if (req) snprintf(why, sizeof why, "not an object");
        else jsonFaultText(&f, why, sizeof why);
        cJSON_Delete(req);
        return errSetStatus(err, "invalid_argument", "the request body must be one JSON object: %s", why);
    }
    int rc = actionsDispatch(ctx, action, req, answer, err);
    cJSON_Delete(req);
    return rc;
}

cJSON *actionsErrorAnswer(const lakeError *err, const char *request_id, int *http) {
    const char *code = errStatus(err);
    *http = statusHttp(code);
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", strcmp(code, "internal") == 0 ? "internal error" : err->msg);
    utf8OneLine(msg); /* it may quote what the client sent */
    cJSON *j = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(j, "error");
    if (!e || !cJSON_AddStringToObject(e, "code", code) ||
        !cJSON_AddStringToObject(e, "message", msg) ||
        !cJSON_AddStringToObject(e, "request_id", request_id)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}
