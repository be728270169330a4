/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jsonstrict.c - RFC 8259 strictness in front of cJSON (see jsonstrict.h).
 *
 * The validator is a recursive descent over bytes that builds nothing: it
 * only says where a text leaves the grammar.  The happy path is still
 * cJSON's parse.
 */
#include "core/jsonstrict.h"

#include "core/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scan {
    const unsigned char *p;
    size_t n, i;
    int depth;
    jsonNumberFn on_number;
    void *arg;
    jsonFault *f;
} scan;

static int fail(scan *s, size_t at, const char *why) {
    s->f->off = at;
    s->f->why = why;
    return 0;
}

static void skipSpace(scan *s) {
    while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\n' ||
                           s->p[s->i] == '\r'))
        s->i++;
}

static int isDigit(scan *s) { return s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9'; }

static int hex4(scan *s, size_t at, unsigned *u) {
    *u = 0;
    for (size_t k = 0; k < 4; k++) {
        unsigned char c = at + k < s->n ? s->p[at + k] : 0;
        unsigned d = c >= '0' && c <= '9' ? c - '0' + 0u : c >= 'a' && c <= 'f' ? c - 'a' + 10u
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10u : 16u;
        if (d == 16) return 0;
        *u = *u << 4 | d;
    }
    return 1;
}

/* A string, s->i at its opening quote. */
static int string(scan *s) {
    size_t start = s->i++;
    while (s->i < s->n) {
        unsigned char c = s->p[s->i];
        if (c == '"') { s->i++; return 1; }
        if (c < 0x20) return fail(s, s->i, "a raw control character in a string");
        if (c == '\\') {
            size_t at = s->i;
            unsigned char e = s->i + 1 < s->n ? s->p[s->i + 1] : 0;
            if (e && strchr("\"\\/bfnrt", e)) { s->i += 2; continue; }
            if (e != 'u') return fail(s, at, "an invalid escape in a string");
            unsigned u, lo;
            if (!hex4(s, at + 2, &u)) return fail(s, at, "an invalid \\u escape in a string");
            if (u == 0) return fail(s, at, "\\u0000 in a string");
            s->i = at + 6;
            if (u >= 0xDC00 && u <= 0xDFFF) return fail(s, at, "a lone surrogate escape in a string");
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (!(s->i + 1 < s->n && s->p[s->i] == '\\' && s->p[s->i + 1] == 'u' &&
                      hex4(s, s->i + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF))
                    return fail(s, at, "a lone surrogate escape in a string");
                s->i += 6;
            }
            continue;
        }
        if (c < 0x80) { s->i++; continue; }
        size_t k = utf8SeqLen(s->p + s->i, s->n - s->i);
        if (!k) return fail(s, s->i, "a string that is not UTF-8");
        s->i += k;
    }
    return fail(s, start, "an unterminated string");
}

/* A number, s->i at its first byte: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)? */
static int number(scan *s) {
    size_t start = s->i;
    if (s->p[s->i] == '-') s->i++;
    if (!isDigit(s)) return fail(s, start, "a malformed number");
    if (s->p[s->i++] == '0' && isDigit(s)) return fail(s, start, "a leading zero in a number");
    while (isDigit(s)) s->i++;
    if (s->i < s->n && s->p[s->i] == '.') {
        s->i++;
        if (!isDigit(s)) return fail(s, start, "a number without digits after its '.'");
        while (isDigit(s)) s->i++;
    }
    if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
        s->i++;
        if (s->i < s->n && (s->p[s->i] == '+' || s->p[s->i] == '-')) s->i++;
        if (!isDigit(s)) return fail(s, start, "a number without digits in its exponent");
        while (isDigit(s)) s->i++;
    }
    if (s->on_number && s->on_number(s->arg, start)) {
        s->f->nomem = 1;
        return fail(s, start, "out of memory");
    }
    return 1;
}

static int literal(scan *s, const char *word) {
    size_t len = strlen(word);
    if (s->n - s->i < len || memcmp(s->p + s->i, word, len) != 0)
        return fail(s, s->i, "not a JSON value");
    s->i += len;
    return 1;
}

static int value(scan *s);

/* An array or object, s->i at its opening bracket. */
static int container(scan *s) {
    unsigned char close = s->p[s->i] == '{' ? '}' : ']';
    if (++s->depth > CJSON_NESTING_LIMIT) return fail(s, s->i, "nesting too deep");
    s->i++;
    skipSpace(s);
    if (s->i < s->n && s->p[s->i] == close) { s->i++; s->depth--; return 1; }
    for (;;) {
        if (close == '}') {
            if (s->i >= s->n || s->p[s->i] != '"') return fail(s, s->i, "an object key that is not a string");
            if (!string(s)) return 0;
            skipSpace(s);
            if (s->i >= s->n || s->p[s->i] != ':') return fail(s, s->i, "a key without ':'");
            s->i++;
        }
        if (!value(s)) return 0;
        skipSpace(s);
        if (s->i < s->n && s->p[s->i] == ',') {
            s->i++;
            skipSpace(s);
            continue;
        }
        if (s->i < s->n && s->p[s->i] == close) { s->i++; s->depth--; return 1; }
        return fail(s, s->i, close == '}' ? "an object without ',' or '}'" : "an array without ',' or ']'");
    }
}

/* Any value, white space before it allowed. */
static int value(scan *s) {
    skipSpace(s);
    if (s->i >= s->n) return fail(s, s->i, "a value missing");
    switch (s->p[s->i]) {
    case '{': case '[': return container(s);
    case '"': return string(s);
    case 't': return literal(s, "true");
    case 'f': return literal(s, "false");
    case 'n': return literal(s, "null");
    default:
        if (s->p[s->i] == '-' || (s->p[s->i] >= '0' && s->p[s->i] <= '9')) return number(s);
        return fail(s, s->i, "not a JSON value");
    }
}

int jsonStrictValid(const char *p, size_t n, jsonNumberFn on_number, void *arg, jsonFault *f) {
    *f = (jsonFault){0};
    scan s = {.p = (const unsigned char *)p, .n = n, .on_number = on_number, .arg = arg, .f = f};
    if (!value(&s)) return 0;
    skipSpace(&s);
    if (s.i != n) return fail(&s, s.i, "text after the value");
    return 1;
}

static int keyCmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when no object inside j repeats a key; 0 with *f set otherwise.  The
 * keys hold no NUL (the validator saw to it), so strcmp compares them
 * whole. */
static int uniqueKeys(const cJSON *j, jsonFault *f) {
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        if (!uniqueKeys(c, f)) return 0;
        k++;
    }
    if (!cJSON_IsObject(j) || k < 2) return 1;
    const char **keys = malloc(k * sizeof *keys);
    if (!keys) {
        *f = (jsonFault){.why = "out of memory", .nomem = 1};
        return 0;
    }
    k = 0;
    for (const cJSON *c = j->child; c; c = c->next) keys[k++] = c->string;
    qsort(keys, k, sizeof *keys, keyCmp);
    int ok = 1;
    for (size_t i = 1; i < k && ok; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0) ok = 0;
    free(keys);
    if (!ok) *f = (jsonFault){.off = JSON_NO_OFFSET, .why = "a key repeated in an object"};
    return ok;
}

cJSON *jsonStrictParse(const char *p, size_t n, jsonNumberFn on_number, void *arg, jsonFault *f) {
    if (!jsonStrictValid(p, n, on_number, arg, f)) return NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(p, n, &end, 0);
    if (!j) { /* valid text cJSON refuses: out of memory, or past its limits */
        const char *at = cJSON_GetErrorPtr();
        *f = (jsonFault){.off = at && at >= p && at <= p + n ? (size_t)(at - p) : JSON_NO_OFFSET,
                         .why = "a value the JSON parser cannot hold"};
        return NULL;
    }
    if (!uniqueKeys(j, f)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

void jsonFaultText(const jsonFault *f, char *buf, size_t n) {
    if (f->off == JSON_NO_OFFSET) snprintf(buf, n, "%s", f->why);
    else snprintf(buf, n, "%s at byte %zu", f->why, f->off + 1);
}

cJSON *jsonStrictLoad(const char *p, size_t n, const char *what, lakeError *err) {
    jsonFault f;
    cJSON *j = jsonStrictParse(p, n, NULL, NULL, &f);
    if (j) return j;
    char why[96];
    jsonFaultText(&f, why, sizeof why);
    if (f.nomem) errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", what);
    else errSet(err, LAKE_EDATA, "%s: malformed JSON: %s", what, why);
    return NULL;
}

int jsonWhole(const cJSON *v, int64_t min, int64_t *out) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)min) || !(v->valuedouble <= JSON_WHOLE_MAX) ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (int64_t)v->valuedouble;
    return 1;
}
