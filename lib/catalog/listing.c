/*
 * listing.c - list_tables: request checks, the caller's scope, then one
 * page from the registry (registryListTables).
 */
#include "catalog/listing.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "catalog/names.h"
#include "core/jsonstrict.h"

/* An optional whole-number field >= min; def when absent or null. */
static int whole(const cJSON *req, const char *key, int64_t def, int64_t min, int64_t *out, lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    return jsonWhole(v, min, out) ? 0 : errSetStatus(err, "invalid_argument", "%s: expected a whole number", key);
}

/* An optional string field; NULL when absent or null. */
static int string(const cJSON *req, const char *key, const char **out, lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    *out = cJSON_IsString(v) ? v->valuestring : NULL;
    if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
        return errSetStatus(err, "invalid_argument", "%s: expected a string", key);
    return 0;
}

int listingTables(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    const char *ns, *after;
    int64_t limit, known;
    char after_ns[NAME_MAX_LEN + 1] = "", after_name[NAME_MAX_LEN + 1] = "";
    if (string(req, "namespace", &ns, err) || string(req, "after", &after, err) ||
        whole(req, "limit", LIST_TABLES_MAX_LIMIT, 1, &limit, err) ||
        whole(req, "known_generation", -1, -1, &known, err))
        return err->code;
    if (ns && !nameIsValid(ns))
        return errSetStatus(err, "invalid_argument", "namespace: names must match [A-Za-z_][A-Za-z0-9_]*");
    if (after) {
        const char *dot = strchr(after, '.');
        if (!dot || (size_t)(dot - after) > NAME_MAX_LEN || strlen(dot + 1) > NAME_MAX_LEN)
            return errSetStatus(err, "invalid_argument", "after: expected a table name NS.T");
        snprintf(after_ns, sizeof after_ns, "%.*s", (int)(dot - after), after);
        snprintf(after_name, sizeof after_name, "%s", dot + 1);
        if (!nameIsValid(after_ns) || !nameIsValid(after_name))
            return errSetStatus(err, "invalid_argument", "after: expected a table name NS.T");
    }
    if (limit > LIST_TABLES_MAX_LIMIT) limit = LIST_TABLES_MAX_LIMIT; /* the server's limit caps the client's */
    /* only a user is scoped by grants; the other roles see every table */
    int scoped = !ctx->role || strcmp(ctx->role, "user") == 0;
    if (scoped && (!ctx->principal || !*ctx->principal)) /* "" would mean every table */
        return errSetStatus(err, "permission_denied", "list_tables: no principal");
    return registryListTables(ctx->reg, scoped ? ctx->principal : NULL, ctx->role, ns, after ? after_ns : NULL,
                              after ? after_name : NULL, known, limit, LIST_TABLES_MAX_BYTES, ctx->allow_unmarked,
                              answer, err);
}
