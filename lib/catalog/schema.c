/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema.c - schemas and segment statistics (see schema.h).
 */
#include "catalog/schema.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonstrict.h"

static const char *typeNames[] = {"INTEGER", "REAL", "TEXT", "BLOB",
                                  "BOOLEAN", "TIMESTAMP", "FILE"};
static const char *typeDecls[] = {"INTEGER", "REAL", "TEXT", "BLOB",
                                  "BOOLEAN INTEGER", "TIMESTAMP TEXT", "FILE TEXT"};
#define NTYPES (int)(sizeof typeNames / sizeof typeNames[0])

const char *lakeTypeName(lakeType t) { return typeNames[t]; }
const char *lakeTypeDecl(lakeType t) { return typeDecls[t]; }

/* --- schema -------------------------------------------------------------- */

int segmentSchemaParse(const char *schema_json, segmentSchema **out, lakeError *err) {
    *out = NULL;
    cJSON *arr = cJSON_Parse(schema_json);
    segmentSchema *s = calloc(1, sizeof *s);
    int rc = 0, n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (!s || (n > 0 && !(s->cols = calloc((size_t)n, sizeof *s->cols)))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
        goto out;
    }
    if (n == 0) { rc = errSet(err, LAKE_EDATA, "schema: not a non-empty JSON array"); goto out; }
    const cJSON *c;
    cJSON_ArrayForEach(c, arr) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
        int t = 0;
        while (type && t < NTYPES && strcmp(type, typeNames[t]) != 0) t++;
        if (!name || !*name || !type || t == NTYPES) {
            rc = errSet(err, LAKE_EDATA, "schema: column %d is not {\"name\",\"type\"}",
                        s->ncols + 1);
            goto out;
        }
        for (const char *p = name; *p; p++)
            if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                  (p > name && *p >= '0' && *p <= '9'))) {
                rc = errSet(err, LAKE_EDATA, "schema: bad column name");
                goto out;
            }
        if (segmentSchemaFind(s, name) >= 0) {
            rc = errSet(err, LAKE_EDATA, "schema: column %s twice", name);
            goto out;
        }
        /* its id, or (none on the first column: none on any) its position */
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(c, "id");
        int64_t id = s->ncols + 1;
        if ((j != NULL) != (s->ncols ? s->explicit_ids : j != NULL) || (j && !jsonWhole(j, 1, &id)) ||
            segmentSchemaFindId(s, id) >= 0) {
            rc = errSet(err, LAKE_EDATA, "schema: column %d has no id of its own", s->ncols + 1);
            goto out;
        }
        s->explicit_ids = j != NULL;
        if (!(s->cols[s->ncols].name = strdup(name))) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "schema");
            goto out;
        }
        s->cols[s->ncols].id = id;
        s->cols[s->ncols++].type = (lakeType)t;
    }
out:
    cJSON_Delete(arr);
    if (rc) segmentSchemaFree(s);
    else *out = s;
    return rc;
}

int segmentSchemaFindId(const segmentSchema *s, int64_t id) {
    for (int i = 0; i < s->ncols; i++)
        if (s->cols[i].id == id) return i;
    return -1;
}

int segmentSchemaPositional(const segmentSchema *s) {
    for (int i = 0; i < s->ncols; i++)
        if (s->cols[i].id != i + 1) return 0;
    return 1;
}

int segmentRecordColumns(const cJSON *segment, int k, int64_t *ids, int cap) {
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(segment, "columns"), *c;
    int n = 0;
    if (!cols) {
        for (; n < k && n < cap; n++) ids[n] = n + 1;
        return n < k ? -1 : n;
    }
    if (!cJSON_IsArray(cols)) return -1;
    cJSON_ArrayForEach(c, cols) {
        int64_t id;
        if (n == cap || !jsonWhole(c, 1, &id)) return -1;
        for (int i = 0; i < n; i++)
            if (ids[i] == id) return -1;
        ids[n++] = id;
    }
    return n;
}

int segmentSchemaSubset(const segmentSchema *s, const int64_t *ids, int n, segmentSchema **out) {
    *out = NULL;
    segmentSchema *sub = calloc(1, sizeof *sub);
    if (!sub || !(sub->cols = calloc((size_t)n + 1, sizeof *sub->cols))) {
        free(sub);
        return -1;
    }
    sub->explicit_ids = 1;
    for (; sub->ncols < n; sub->ncols++) {
        int at = segmentSchemaFindId(s, ids[sub->ncols]);
        if (at < 0 || !(sub->cols[sub->ncols].name = strdup(s->cols[at].name))) {
            segmentSchemaFree(sub);
            return at < 0 ? 1 : -1;
        }
        sub->cols[sub->ncols].type = s->cols[at].type;
        sub->cols[sub->ncols].id = ids[sub->ncols];
    }
    *out = sub;
    return 0;
}

void segmentSchemaFree(segmentSchema *s) {
    if (!s) return;
    for (int i = 0; i < s->ncols; i++) free(s->cols[i].name);
    free(s->cols);
    free(s);
}

int segmentSchemaFind(const segmentSchema *s, const char *name) {
    for (int i = 0; i < s->ncols; i++)
        if (strcasecmp(s->cols[i].name, name) == 0) return i;
    return -1;
}

char *segmentSchemaTableSql(const segmentSchema *s, const char *table) {
    sqlite3_str *sql = sqlite3_str_new(NULL);
    sqlite3_str_appendf(sql, "CREATE TABLE %s(", table);
    for (int i = 0; i < s->ncols; i++)
        sqlite3_str_appendf(sql, "%s\"%w\" %s", i ? ", " : "", s->cols[i].name, typeDecls[s->cols[i].type]);
    sqlite3_str_appendall(sql, ")");
    return sqlite3_str_finish(sql);
}

/* --- statistics ---------------------------------------------------------- */

/* 1 when cJSON's text for x reads back as x.  cJSON prints a number with
 * 15 significant digits whenever those read back within a relative
 * DBL_EPSILON of it, so some doubles (one random double in six; 2^53;
 * -DBL_MAX, which comes back infinite) would return a unit or two in the
 * last place off from any print and parse on their way: an append's
 * request, the server's stored text and answer, the registration cache.
 * A bound that moved inward would prune rows that match. */
static int printsExactly(double x) {
    cJSON *n = cJSON_CreateNumber(x);
    char *t = n ? cJSON_PrintUnformatted(n) : NULL;
    int same = t && strtod(t, NULL) == x;
    free(t);
    cJSON_Delete(n);
    return same;
}

/* The double next to finite x upward (up) or downward: one unit in the
 * last place, by the bits (nextafter would need libm). */
static double stepOut(double x, int up) {
    if (x == 0) return up ? DBL_TRUE_MIN : -DBL_TRUE_MIN;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    if ((x > 0) == (up != 0)) u++; /* a larger magnitude: the next bit pattern */
    else u--;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Move the bounds *lo and *hi outward, by a few units in the last place at
 * most, to doubles that print exactly, within ±limit: 1, or 0 when there
 * are none (the bounds are then left out). */
int schemaWidenToExact(double *lo, double *hi, double limit) {
    for (int b = 0; b < 2; b++) {
        double *x = b ? hi : lo;
        for (int steps = 0; !printsExactly(*x); steps++) {
            if (steps == 16) return 0;
            if (!isfinite(*x)) return 0;
            *x = stepOut(*x, b);
        }
        if (!(fabs(*x) <= limit)) return 0;
    }
    return 1;
}

/* One entry parsed by the rules of the format, the column's kind aside:
 * 1 when well-formed (into *out, rows kept), 0 otherwise. */
static int statsEntry(const cJSON *e, int64_t rows, segmentColumnStats *out) {
    const cJSON *nulls = NULL, *min = NULL, *max = NULL, *cut = NULL, *k;
    memset(out, 0, sizeof *out);
    out->rows = rows;
    if (!cJSON_IsObject(e)) return 0;
    cJSON_ArrayForEach(k, e) {
        const cJSON **slot = strcmp(k->string, "nulls") == 0 ? &nulls : strcmp(k->string, "min") == 0 ? &min
                           : strcmp(k->string, "max") == 0 ? &max : strcmp(k->string, "max_cut") == 0 ? &cut : NULL;
        if (!slot || *slot) return 0; /* an unknown or repeated key */
        *slot = k;
    }
    if (!jsonWhole(nulls, 0, &out->nulls) || out->nulls > rows || !min != !max) return 0;
    if (cut && (!cJSON_IsBool(cut) || !min)) return 0;
    for (int b = 0; min && b < 2; b++) {
        const cJSON *j = b ? max : min;
        segmentStatsValue *v = b ? &out->max : &out->min;
        if (cJSON_IsString(j)) {
            v->type = SQLITE_TEXT;
            v->p = j->valuestring;
            v->n = strlen(j->valuestring);
            if (v->n > SEGMENT_STATS_TEXT_MAX) return 0;
        } else if (cut) {
            return 0; /* max_cut is for text */
        } else if (jsonWhole(j, -(int64_t)JSON_WHOLE_MAX, &v->i)) {
            v->type = SQLITE_INTEGER;
        } else if (cJSON_IsNumber(j) && isfinite(j->valuedouble)) {
            v->type = SQLITE_FLOAT;
            v->r = j->valuedouble;
        } else {
            return 0;
        }
    }
    if (min && (out->min.type == SQLITE_TEXT) != (out->max.type == SQLITE_TEXT)) return 0;
    out->has_bounds = min != NULL;
    out->max_cut = cJSON_IsTrue(cut);
    return 1;
}

int segmentStatsColumn(const cJSON *segment, const segmentSchema *s, int col, segmentColumnStats *out) {
    memset(out, 0, sizeof *out);
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(segment, "stats");
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(segment, "columns");
    int64_t rows, id;
    if (col < 0 || col >= s->ncols || !jsonWhole(cJSON_GetObjectItemCaseSensitive(segment, "rows"), 0, &rows) ||
        !cJSON_IsArray(stats))
        return 0;
    int n = cJSON_GetArraySize(stats), at = -1;
    if (cols && (!cJSON_IsArray(cols) || cJSON_GetArraySize(cols) != n)) return 0;
    /* the column's place in the segment: by id, the record's own order */
    if (cols) {
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, cols) {
            if (jsonWhole(c, 1, &id) && id == s->cols[col].id) at = i;
            i++;
        }
    } else if (s->cols[col].id <= n) { /* ids 1 to n, one entry each (append checked) */
        at = (int)s->cols[col].id - 1;
    }
    if (at < 0) { /* added after the segment was written: NULL in every row */
        out->rows = out->nulls = rows;
        return 1;
    }
    if (statsEntry(cJSON_GetArrayItem(stats, at), rows, out)) return 1;
    memset(out, 0, sizeof *out);
    return 0;
}

/* 1 when the bounds of a well-formed entry are of the kind a column of
 * type t takes. */
static int statsKind(const segmentColumnStats *c, lakeType t) {
    if (!c->has_bounds) return 1;
    switch (t) {
    case LAKE_TYPE_INTEGER:
    case LAKE_TYPE_BOOLEAN: return c->min.type == SQLITE_INTEGER && c->max.type == SQLITE_INTEGER;
    case LAKE_TYPE_REAL: return c->min.type != SQLITE_TEXT;
    case LAKE_TYPE_TEXT:
    case LAKE_TYPE_TIMESTAMP:
    case LAKE_TYPE_FILE: return c->min.type == SQLITE_TEXT;
    case LAKE_TYPE_BLOB: break;
    }
    return 0;
}

/* Add the bounds of a well-formed entry of a column of type t to o, numbers
 * moved outward to print exactly (and left out when they cannot be); 0, or
 * -1 when out of memory. */
static int statsPutBounds(cJSON *o, const segmentColumnStats *c, lakeType t) {
    if (!c->has_bounds) return 0;
    if (c->min.type == SQLITE_TEXT)
        return cJSON_AddStringToObject(o, "min", c->min.p) && cJSON_AddStringToObject(o, "max", c->max.p) &&
                       (!c->max_cut || cJSON_AddTrueToObject(o, "max_cut"))
                   ? 0 : -1;
    double lo = c->min.type == SQLITE_INTEGER ? (double)c->min.i : c->min.r;
    double hi = c->max.type == SQLITE_INTEGER ? (double)c->max.i : c->max.r;
    if (!schemaWidenToExact(&lo, &hi, t == LAKE_TYPE_REAL ? DBL_MAX : JSON_WHOLE_MAX)) return 0;
    return cJSON_AddNumberToObject(o, "min", lo) && cJSON_AddNumberToObject(o, "max", hi) ? 0 : -1;
}

int segmentStatsCheck(const cJSON *stats, const segmentSchema *s, int64_t rows, char **canonical,
                      lakeError *err) {
    *canonical = NULL;
    if (!cJSON_IsArray(stats) || cJSON_GetArraySize(stats) != s->ncols)
        return errSet(err, LAKE_EDATA, "malformed segment statistics");
    cJSON *arr = cJSON_CreateArray();
    const cJSON *e;
    int i = 0, nomem = !arr;
    cJSON_ArrayForEach(e, stats) {
        segmentColumnStats c;
        if (nomem) break;
        if (!statsEntry(e, rows, &c) || !statsKind(&c, s->cols[i++].type)) {
            cJSON_Delete(arr);
            return errSet(err, LAKE_EDATA, "malformed segment statistics");
        }
        cJSON *o = cJSON_CreateObject(); /* once in arr, arr owns it */
        nomem = !o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddNumberToObject(o, "nulls", (double)c.nulls) ||
                statsPutBounds(o, &c, s->cols[i - 1].type);
    }
    if (!nomem) nomem = !(*canonical = cJSON_PrintUnformatted(arr));
    cJSON_Delete(arr);
    return nomem ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment statistics") : 0;
}

