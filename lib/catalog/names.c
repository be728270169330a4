/*
 * names.c - name rules and schema parsing.
 */
#include "catalog/names.h"

#include "core/jsonstrict.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const types[] = {"INTEGER", "REAL", "TEXT", "BLOB",
                                    "BOOLEAN", "TIMESTAMP", "FILE"};

int nameIsValid(const char *s) {
    size_t n = 0;
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (; s[n]; n++)
        if (!(isalnum((unsigned char)s[n]) || s[n] == '_') || n >= NAME_MAX_LEN) return 0;
    return 1;
}

int nameSplitTable(const char *q, char **ns, char **table, lakeError *err) {
    *ns = *table = NULL;
    const char *dot = strchr(q, '.');
    if (!dot) return errSet(err, LAKE_EUSAGE, "%s: expected NAMESPACE.TABLE", q);
    *ns = strndup(q, (size_t)(dot - q));
    *table = strdup(dot + 1);
    if (!*ns || !*table) {
        free(*ns);
        free(*table);
        *ns = *table = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "name");
    }
    if (!nameIsValid(*ns) || !nameIsValid(*table)) {
        free(*ns);
        free(*table);
        *ns = *table = NULL;
        return errSet(err, LAKE_EUSAGE,
                      "%s: names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)", q,
                      NAME_MAX_LEN);
    }
    return 0;
}

static const char *canonicalType(const char *t) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcasecmp(t, types[i]) == 0) return types[i];
    return NULL;
}

/* Append one column to arr, refusing duplicates; code on failure. */
static int addColumn(cJSON *arr, const char *name, const char *type, lakeCode bad,
                     lakeError *err) {
    if (!nameIsValid(name))
        return errSet(err, bad, "column '%s': names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)",
                      name, NAME_MAX_LEN);
    const char *t = canonicalType(type);
    if (!t)
        return errSet(err, bad,
                      "column '%s': unknown type '%s' (INTEGER, REAL, TEXT, BLOB, BOOLEAN, "
                      "TIMESTAMP, FILE)", name, type);
    cJSON *c;
    cJSON_ArrayForEach(c, arr) {
        if (strcasecmp(cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring, name) == 0)
            return errSet(err, bad, "column '%s' appears twice", name);
    }
    if (cJSON_GetArraySize(arr) >= SCHEMA_MAX_COLUMNS)
        return errSet(err, bad, "more than %d columns", SCHEMA_MAX_COLUMNS);
    c = cJSON_CreateObject();
    if (!c || !cJSON_AddStringToObject(c, "name", name) || !cJSON_AddStringToObject(c, "type", t)) {
        cJSON_Delete(c);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
    }
    cJSON_AddItemToArray(arr, c);
    return 0;
}

static int finish(cJSON *arr, char **json, lakeCode bad, lakeError *err) {
    int rc = 0;
    if (cJSON_GetArraySize(arr) == 0) rc = errSet(err, bad, "a schema needs at least one column");
    else if (!(*json = cJSON_PrintUnformatted(arr))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
    cJSON_Delete(arr);
    return rc;
}

int schemaParse(const char *def, char **json, lakeError *err) {
    *json = NULL;
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
    int rc = 0;
    if (def[strspn(def, " \t\n")] == '\0') rc = errSet(err, LAKE_EUSAGE, "a schema needs at least one column");
    for (const char *p = def; !rc;) {
        size_t n = strcspn(p, ",");
        char col[512], name[256], type[256], extra[2];
        snprintf(col, sizeof col, "%.*s", (int)(n < sizeof col - 1 ? n : sizeof col - 1), p);
        int k = sscanf(col, "%255s %255s %1s", name, type, extra);
        if (k <= 0) rc = errSet(err, LAKE_EUSAGE, "schema: empty column definition");
        else if (k != 2 || n >= sizeof col - 1)
            rc = errSet(err, LAKE_EUSAGE, "schema: '%s' is not 'NAME TYPE'", col);
        else
            rc = addColumn(arr, name, type, LAKE_EUSAGE, err);
        if (!p[n]) break;
        p += n + 1;
    }
    if (rc) { cJSON_Delete(arr); return rc; }
    return finish(arr, json, LAKE_EUSAGE, err);
}

int schemaCanonical(const char *json, char **canonical, lakeError *err) {
    *canonical = NULL;
    cJSON *in = jsonStrictParse(json, strlen(json), NULL, NULL, &(jsonFault){0});
    cJSON *arr = cJSON_CreateArray(), *c;
    int rc = 0;
    if (!cJSON_IsArray(in)) rc = errSet(err, LAKE_EDATA, "schema: not a JSON array");
    cJSON *cols = rc ? NULL : in;
    cJSON_ArrayForEach(c, cols) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        if (!cJSON_IsString(n) || !cJSON_IsString(t)) {
            rc = errSet(err, LAKE_EDATA, "schema: each column needs a name and a type");
            break;
        }
        if ((rc = addColumn(arr, n->valuestring, t->valuestring, LAKE_EDATA, err))) break;
    }
    cJSON_Delete(in);
    if (rc) { cJSON_Delete(arr); return rc; }
    return finish(arr, canonical, LAKE_EDATA, err);
}
