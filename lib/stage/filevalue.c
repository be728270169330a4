/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filevalue.c - FILE values and REFs, through cJSON.
 */
#include "stage/filevalue.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonstrict.h"
#include "core/utf8.h"

void fileValueFree(fileValue *fv) {
    if (!fv) return;
    free(fv->location);
    free(fv->content_type);
    free(fv->name);
    free(fv->last_modified);
    memset(fv, 0, sizeof *fv);
    fv->size = -1;
}

int fileValueLooksLike(const cJSON *obj) {
    return cJSON_IsObject(obj) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(obj, "location"));
}

/* Copy an optional string field; 65 if present but not a string. */
static int optString(const cJSON *obj, const char *key, char **out, lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return errSet(err, LAKE_EDATA, "FILE value: %s is not a string", key);
    *out = strdup(v->valuestring);
    return *out ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "FILE value");
}

int fileValueFromJson(const cJSON *obj, fileValue *fv, lakeError *err) {
    memset(fv, 0, sizeof *fv);
    fv->size = -1;
    if (!cJSON_IsObject(obj)) return errSet(err, LAKE_EDATA, "FILE value: not a JSON object");
    const cJSON *loc = cJSON_GetObjectItemCaseSensitive(obj, "location");
    if (!cJSON_IsString(loc) || !loc->valuestring[0])
        return errSet(err, LAKE_EDATA, "FILE value: missing location");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(obj, "size");
    int64_t n;
    if (!jsonWhole(size, 0, &n))
        return errSet(err, LAKE_EDATA, "FILE value: size is not a whole number of bytes");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(obj, "sha256");
    if (!cJSON_IsString(sha) || !sha256IsHex(sha->valuestring))
        return errSet(err, LAKE_EDATA, "FILE value: sha256 is not 64 hex digits");

    fv->location = strdup(loc->valuestring);
    if (!fv->location) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "FILE value");
    fv->size = n;
    for (int i = 0; i < SHA256_HEX_LEN; i++) {
        char c = sha->valuestring[i];
        fv->sha256[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
    }
    fv->sha256[SHA256_HEX_LEN] = '\0';
    int rc = optString(obj, "content_type", &fv->content_type, err);
    if (!rc) rc = optString(obj, "name", &fv->name, err);
    if (!rc) rc = optString(obj, "last_modified", &fv->last_modified, err);
    return rc;
}

char *fileValueToJson(const fileValue *fv) {
    cJSON *o = cJSON_CreateObject();
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)fv->size);
    /* Raw integer text: cJSON would print large sizes in exponent form. */
    if (!o || !cJSON_AddStringToObject(o, "location", fv->location) ||
        !cJSON_AddRawToObject(o, "size", num) ||
        !cJSON_AddStringToObject(o, "sha256", fv->sha256) ||
        (fv->content_type && !cJSON_AddStringToObject(o, "content_type", fv->content_type)) ||
        (fv->name && !cJSON_AddStringToObject(o, "name", fv->name)) ||
        (fv->last_modified && !cJSON_AddStringToObject(o, "last_modified", fv->last_modified))) {
        cJSON_Delete(o);
        return NULL;
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The FILE value inside one field of a row: an object, or JSON text. */
static cJSON *fieldAsFile(const cJSON *field, cJSON **owned) {
    *owned = NULL;
    if (fileValueLooksLike(field)) return (cJSON *)field;
    if (cJSON_IsString(field) && field->valuestring[0] == '{') {
        cJSON *inner = jsonStrictParse(field->valuestring, strlen(field->valuestring), NULL, NULL,
                                       &(jsonFault){0});
        if (fileValueLooksLike(inner)) return *owned = inner;
        cJSON_Delete(inner);
    }
    return NULL;
}

int refParse(const char *text, fileValue *fv, lakeError *err) {
    memset(fv, 0, sizeof *fv);
    fv->size = -1;
    while (*text == ' ' || *text == '\t') text++;
    if (strncmp(text, "null", 4) == 0 && text[4 + strspn(text + 4, " \t\r\n")] == '\0')
        return 0; /* a null FILE: nothing to get */
    if (*text != '{') {
        size_t n = strcspn(text, " \t\r\n");
        if (n == 0) return errSet(err, LAKE_EDATA, "empty reference");
        if (text[n] && text[n + strspn(text + n, " \t\r\n")])
            return errSet(err, LAKE_EDATA, "a location cannot contain white space");
        fv->location = strndup(text, n);
        return fv->location ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "reference");
    }
    cJSON *doc = jsonStrictLoad(text, strlen(text), "REF", err);
    if (!doc) return err ? err->code : LAKE_EDATA;
    int rc;
    if (fileValueLooksLike(doc)) {
        rc = fileValueFromJson(doc, fv, err);
    } else if (!cJSON_IsObject(doc)) {
        rc = errSet(err, LAKE_EDATA, "not a JSON object");
    } else {
        cJSON *found = NULL, *foundOwned = NULL, *field;
        int count = 0, nulls = 0;
        cJSON_ArrayForEach(field, doc) {
            cJSON *owned, *f = fieldAsFile(field, &owned);
            nulls += cJSON_IsNull(field);
            if (!f) continue;
            if (count++ == 0) { found = f; foundOwned = owned; }
            else cJSON_Delete(owned);
        }
        if (count == 1) rc = fileValueFromJson(found, fv, err);
        else if (count == 0 && nulls) rc = 0; /* the FILE column is NULL in this row */
        else if (count == 0) rc = errSet(err, LAKE_EDATA, "no FILE value in the row");
        else rc = errSet(err, LAKE_EDATA, "%d FILE values in the row; select one column", count);
        cJSON_Delete(foundOwned);
    }
    cJSON_Delete(doc);
    return rc;
}

int fileNameSafe(const char *name, char *out, size_t n) {
    const unsigned char *p = (const unsigned char *)name;
    size_t o = 0;
    int changed = *p == '/';
    while (*p) {
        const unsigned char *s = p;
        while (*p && *p != '/') p++;
        size_t len = (size_t)(p - s);
        if (*p == '/') p++;
        if (len == 0 || (len == 1 && s[0] == '.')) continue;
        if (len == 2 && s[0] == '.' && s[1] == '.') {
            changed = 1;
            continue;
        }
        if (o > 0) {
            if (o + 1 >= n) return -1;
            out[o++] = '/';
        }
        for (size_t i = 0; i < len;) {
            size_t k = utf8SeqLen(s + i, len - i);
            if (o + (k ? k : 1) >= n) return -1;
            if (k) {
                memcpy(out + o, s + i, k);
                o += k;
                i += k;
            } else {
                out[o++] = '?';
                i++;
                changed = 1;
            }
        }
    }
    if (o == 0) return -1;
    out[o] = '\0';
    return changed;
}
