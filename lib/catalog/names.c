/* SPDX-License-Identifier: BSD-2-Clause */
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

int nameTarget(const char *s, int star, char ns[NAME_MAX_LEN + 1], char name[NAME_MAX_LEN + 1]) {
    ns[0] = name[0] = '\0';
    if (star && strcmp(s, "*") == 0) return 0;
    const char *dot = strchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n > NAME_MAX_LEN || (dot && strlen(dot + 1) > NAME_MAX_LEN)) return -1;
    memcpy(ns, s, n);
    ns[n] = '\0';
    if (dot) strcpy(name, dot + 1);
    return nameIsValid(ns) && (!dot || nameIsValid(name)) ? 0 : -1;
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

/* Give column c of arr the stable id `id`. */
static int setId(cJSON *c, int64_t id) {
    cJSON_DeleteItemFromObjectCaseSensitive(c, "id");
    return cJSON_AddNumberToObject(c, "id", (double)id) ? 0 : -1;
}

/* Leave the ids out when they are 1 to n: a schema never altered reads as
 * it did before ids existed (old clients and caches see no change). */
static void dropPositionalIds(cJSON *arr) {
    cJSON *c;
    int64_t i = 0, id;
    cJSON_ArrayForEach(c, arr) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (j && (!jsonWhole(j, 1, &id) || id != ++i)) return;
    }
    cJSON_ArrayForEach(c, arr) cJSON_DeleteItemFromObjectCaseSensitive(c, "id");
}

static int finish(cJSON *arr, char **json, lakeCode bad, lakeError *err) {
    int rc = 0;
    dropPositionalIds(arr);
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
    int withIds = -1; /* all columns have an id, or none */
    cJSON_ArrayForEach(c, cols) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(c, "id");
        int64_t id = 0;
        if (!cJSON_IsString(n) || !cJSON_IsString(t)) {
            rc = errSet(err, LAKE_EDATA, "schema: each column needs a name and a type");
            break;
        }
        if (withIds < 0) withIds = j != NULL;
        if ((j != NULL) != withIds || (j && (!jsonWhole(j, 1, &id) || id > SCHEMA_MAX_ID))) {
            rc = errSet(err, LAKE_EDATA, "schema: ids are whole numbers from 1, on every column or none");
            break;
        }
        const cJSON *o;
        cJSON_ArrayForEach(o, arr) {
            int64_t other;
            if (id && jsonWhole(cJSON_GetObjectItemCaseSensitive(o, "id"), 1, &other) && other == id) {
                rc = errSet(err, LAKE_EDATA, "schema: id %lld appears twice", (long long)id);
                break;
            }
        }
        if (rc || (rc = addColumn(arr, n->valuestring, t->valuestring, LAKE_EDATA, err))) break;
        if (id && setId(cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), id)) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
            break;
        }
    }
    cJSON_Delete(in);
    if (rc) { cJSON_Delete(arr); return rc; }
    return finish(arr, canonical, LAKE_EDATA, err);
}

/* The column of arr named name (ignoring case), or NULL. */
static cJSON *columnNamed(cJSON *arr, const char *name) {
    cJSON *c;
    cJSON_ArrayForEach(c, arr) {
        if (strcasecmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")), name) == 0) return c;
    }
    return NULL;
}

int schemaAlter(const char *json, const char *op, const char *a, const char *b, int64_t next_id, char **out,
                lakeError *err) {
    *out = NULL;
    char *canon = NULL;
    int rc = schemaCanonical(json, &canon, err);
    if (rc) return rc;
    cJSON *arr = cJSON_Parse(canon), *c;
    free(canon);
    if (!arr) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
    /* every column its id, explicit: the positions change */
    int64_t i = 0;
    cJSON_ArrayForEach(c, arr) {
        i++;
        if (!cJSON_GetObjectItemCaseSensitive(c, "id") && setId(c, i)) {
            cJSON_Delete(arr);
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
        }
    }
    if (strcmp(op, "add-column") == 0) {
        /* "NAME TYPE", as a column of a schema definition */
        char *one = NULL;
        cJSON *def = NULL;
        if (!(rc = schemaParse(a, &one, err)) && !(def = cJSON_Parse(one)))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
        if (!rc && cJSON_GetArraySize(def) != 1)
            rc = errSet(err, LAKE_EUSAGE, "add-column takes one 'NAME TYPE'");
        const char *name = rc ? NULL : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(def->child, "name"));
        if (!rc && columnNamed(arr, name)) rc = errSet(err, LAKE_EUSAGE, "column '%s' exists", name);
        if (!rc && !(rc = addColumn(arr, name, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(def->child, "type")),
                                    LAKE_EUSAGE, err)) &&
            setId(cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), next_id))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
        free(one);
        cJSON_Delete(def);
    } else if (strcmp(op, "rename-column") == 0) {
        c = columnNamed(arr, a);
        cJSON *clash = b ? columnNamed(arr, b) : NULL;
        if (!c) rc = errSet(err, LAKE_ENOINPUT, "no column '%s'", a);
        else if (!b || !nameIsValid(b))
            rc = errSet(err, LAKE_EUSAGE, "column '%s': names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)",
                        b ? b : "", NAME_MAX_LEN);
        else if (clash && clash != c) rc = errSet(err, LAKE_EUSAGE, "column '%s' exists", b);
        else if (!cJSON_ReplaceItemInObjectCaseSensitive(c, "name", cJSON_CreateString(b)))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
    } else if (strcmp(op, "drop-column") == 0) {
        c = columnNamed(arr, a);
        if (!c) rc = errSet(err, LAKE_ENOINPUT, "no column '%s'", a);
        else if (cJSON_GetArraySize(arr) == 1) rc = errSet(err, LAKE_EUSAGE, "column '%s' is the last one: a table keeps one", a);
        else cJSON_Delete(cJSON_DetachItemViaPointer(arr, c));
    } else {
        rc = errSet(err, LAKE_EUSAGE, "%s: not add-column, rename-column or drop-column", op);
    }
    if (rc) {
        cJSON_Delete(arr);
        return rc;
    }
    return finish(arr, out, LAKE_EUSAGE, err);
}

int schemaAlterCheck(const char *table, const char *op, const char *column, const char *to, char **ns, char **name,
                     lakeError *err) {
    char *def = NULL;
    *ns = *name = NULL;
    if (!op || (strcmp(op, "add-column") && strcmp(op, "rename-column") && strcmp(op, "drop-column")))
        return errSet(err, LAKE_EUSAGE, "alter: %s: not add-column, rename-column or drop-column",
                      op ? op : "(null)");
    int rename = strcmp(op, "rename-column") == 0;
    if (!column || (rename ? !to : to != NULL))
        return errSet(err, LAKE_EUSAGE, "alter %s takes %s", op,
                      rename ? "COL NEW" : op[0] == 'a' ? "'COL TYPE'" : "COL");
    if (!table) return errSet(err, LAKE_EUSAGE, "alter: no table");
    if (nameSplitTable(table, ns, name, err)) return err->code = LAKE_EUSAGE;
    int rc = 0;
    /* the new column as a schema would take it: refused here, before a call */
    if (op[0] == 'a' && schemaParse(column, &def, err)) rc = err->code = LAKE_EUSAGE;
    if (!rc && def && strchr(def, '}') != strrchr(def, '}'))
        rc = errSet(err, LAKE_EUSAGE, "alter add-column takes one 'COL TYPE'");
    cJSON_free(def);
    if (!rc && op[0] != 'a' && !nameIsValid(column))
        rc = errSet(err, LAKE_EUSAGE, "%s: names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)", column,
                    NAME_MAX_LEN);
    if (rc) {
        free(*ns);
        free(*name);
        *ns = *name = NULL;
    }
    return rc;
}
