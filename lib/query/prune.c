/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prune.c - pruning segments by their statistics (see prune.h).
 */
#include "query/prune.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonstrict.h"

/* A value as pruning compares it: a number (every integer and double is
 * exact as a long double) or bytes in memcmp order. */
typedef struct pval {
    enum { PV_NONE, PV_NUM, PV_TEXT } kind;
    long double num;
    const char *s;
    size_t len;
} pval;

/* What a segment's statistics say of one column. */
typedef struct colStats {
    int64_t rows, nulls;
    int bounds; /* lo and hi are set */
    pval lo, hi;
    int hiCut;  /* hi is a prefix of the true max */
} colStats;

static int numericColumn(lakeType t) {
    return t == LAKE_TYPE_INTEGER || t == LAKE_TYPE_REAL || t == LAKE_TYPE_BOOLEAN;
}

static int textColumn(lakeType t) {
    return t == LAKE_TYPE_TEXT || t == LAKE_TYPE_TIMESTAMP || t == LAKE_TYPE_FILE;
}

/* A bound of a column of type t, if it is of the column's kind. */
static int bound(const segmentStatsValue *v, lakeType t, pval *out) {
    if (numericColumn(t) && v->type == SQLITE_INTEGER) *out = (pval){.kind = PV_NUM, .num = (long double)v->i};
    else if (numericColumn(t) && v->type == SQLITE_FLOAT) *out = (pval){.kind = PV_NUM, .num = (long double)v->r};
    else if (textColumn(t) && v->type == SQLITE_TEXT) *out = (pval){.kind = PV_TEXT, .s = v->p, .len = v->n};
    else return 0;
    return 1;
}

/* The statistics of column col of a segment (fn, as segmentStatsColumn
 * answers): 0 when there are none, or their bounds are not of the
 * column's kind. */
static int readStats(pruneStatsFn fn, void *arg, int col, const segmentSchema *cols, colStats *out) {
    segmentColumnStats st;
    memset(out, 0, sizeof *out);
    if (!fn(arg, col, &st)) return 0;
    out->rows = st.rows;
    out->nulls = st.nulls;
    if (st.has_bounds) {
        lakeType t = cols->cols[col].type;
        if (!bound(&st.min, t, &out->lo) || !bound(&st.max, t, &out->hi)) return 0;
        out->bounds = 1;
        out->hiCut = st.max_cut;
    }
    return 1;
}

/* v as column type t compares it: SQLite applies the column's affinity
 * to a constant; a value of another storage class is PV_NONE (it
 * compares by class, which the statistics do not cover). */
static pval asColumn(sqlite3_value *v, lakeType t) {
    if (numericColumn(t)) {
        int type = sqlite3_value_numeric_type(v);
        if (type == SQLITE_INTEGER) return (pval){.kind = PV_NUM, .num = (long double)sqlite3_value_int64(v)};
        if (type == SQLITE_FLOAT) return (pval){.kind = PV_NUM, .num = (long double)sqlite3_value_double(v)};
    } else if (textColumn(t) && sqlite3_value_type(v) == SQLITE_TEXT) {
        const char *s = (const char *)sqlite3_value_text(v);
        if (s) return (pval){.kind = PV_TEXT, .s = s, .len = (size_t)sqlite3_value_bytes(v)};
    }
    return (pval){.kind = PV_NONE};
}

/* a <=> b (same kind). */
static int cmp(const pval *a, const pval *b) {
    if (a->kind == PV_NUM) return a->num < b->num ? -1 : a->num > b->num;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    if (c) return c < 0 ? -1 : 1;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* Is every value of the column < v (strict) or <= v?  A cut max P
 * stands for P followed by anything, which is below v only when P < v
 * and v does not start with P. */
static int allBelow(const colStats *s, const pval *v, int strict) {
    if (s->hiCut) return cmp(&s->hi, v) < 0 && !(v->len >= s->hi.len && memcmp(v->s, s->hi.s, s->hi.len) == 0);
    int c = cmp(&s->hi, v);
    return strict ? c < 0 : c <= 0;
}

/* Is every value > v (strict) or >= v?  lo is at most the true min. */
static int allAbove(const colStats *s, const pval *v, int strict) {
    int c = cmp(&s->lo, v);
    return strict ? c > 0 : c >= 0;
}

/* Can no value of the column pass "col op v"? */
static int excludes(const colStats *s, pruneOp op, const pval *v) {
    switch (op) {
    case PRUNE_EQ: return allBelow(s, v, 1) || allAbove(s, v, 1);
    case PRUNE_LT: return allAbove(s, v, 0);
    case PRUNE_LE: return allAbove(s, v, 1);
    case PRUNE_GT: return allBelow(s, v, 0);
    case PRUNE_GE: return allBelow(s, v, 1);
    default: return 0;
    }
}

const char *pruneOpSql(pruneOp op) {
    switch (op) {
    case PRUNE_EQ: return "=";
    case PRUNE_LT: return "<";
    case PRUNE_LE: return "<=";
    case PRUNE_GT: return ">";
    case PRUNE_GE: return ">=";
    case PRUNE_IN: return "IN";
    case PRUNE_ISNULL: return "IS NULL";
    case PRUNE_NOTNULL: return "IS NOT NULL";
    }
    return "?";
}

/* A bound or value for a reason, cut short. */
static void show(char *buf, size_t n, const pval *v) {
    if (v->kind == PV_NUM) snprintf(buf, n, "%.17Lg", v->num);
    else snprintf(buf, n, "'%.*s%s'", (int)(v->len > 40 ? 40 : v->len), v->s, v->len > 40 ? "…" : "");
}

/* Does term exclude every row of a segment with statistics s?  Why, into
 * why when it is not NULL. */
static int termPrunes(const pruneTerm *term, const colStats *s, const char *name, lakeType t, char *why,
                      size_t n) {
    const char *op = pruneOpSql(term->op);
    if (term->op == PRUNE_ISNULL || term->op == PRUNE_NOTNULL) {
        if (term->op == PRUNE_ISNULL ? s->nulls == 0 : s->nulls == s->rows) {
            if (why) snprintf(why, n, "%s %s: %lld NULL of %lld rows", name, op, (long long)s->nulls, (long long)s->rows);
            return 1;
        }
        return 0;
    }
    if (s->nulls == s->rows) { /* a comparison with NULL is never true */
        if (why) snprintf(why, n, "%s %s …: every value is NULL", name, op);
        return 1;
    }
    if (!s->bounds) return 0;
    int all = 1, any = 0; /* every value of the term is excluded; one was non-NULL */
    pval shown = {.kind = PV_NONE};
    for (int i = 0; i < term->nvals && all; i++) {
        if (sqlite3_value_type(term->vals[i]) == SQLITE_NULL) continue; /* never equal */
        pval v = asColumn(term->vals[i], t);
        if (v.kind == PV_NONE || !excludes(s, term->op == PRUNE_IN ? PRUNE_EQ : term->op, &v)) all = 0;
        if (!any) shown = v;
        any = 1;
    }
    if (!all) return 0;
    if (!why) return 1; /* (formatting the reason costs more than the proof) */
    char lo[64], hi[64], val[64] = "NULL";
    show(lo, sizeof lo, &s->lo);
    show(hi, sizeof hi, &s->hi);
    if (shown.kind != PV_NONE) show(val, sizeof val, &shown);
    snprintf(why, n, "%s %s %s%s%s: min %s, max %s%s", name, op, term->op == PRUNE_IN ? "(" : "", val,
             term->op == PRUNE_IN ? (term->nvals > 1 ? ", …)" : ")") : "", lo, hi, s->hiCut ? "…" : "");
    return 1;
}

int pruneWith(int64_t rows, pruneStatsFn fn, void *arg, const segmentSchema *cols, const pruneTerm *terms,
              int nterms, char *why, size_t n) {
    if (rows == 0) {
        if (why) snprintf(why, n, "no rows");
        return 1;
    }
    for (int i = 0; i < nterms; i++) {
        const pruneTerm *term = &terms[i];
        colStats s;
        if (term->col < 0 || term->col >= cols->ncols || !readStats(fn, arg, term->col, cols, &s)) continue;
        if (termPrunes(term, &s, cols->cols[term->col].name, cols->cols[term->col].type, why, n)) return 1;
    }
    return 0;
}

typedef struct recordArg {
    const cJSON *g;
    const segmentSchema *cols;
} recordArg;

static int recordStats(void *arg, int col, segmentColumnStats *out) {
    const recordArg *r = arg;
    return segmentStatsColumn(r->g, r->cols, col, out);
}

int pruneSegment(const cJSON *g, const segmentSchema *cols, const pruneTerm *terms, int nterms, char *why,
                 size_t n) {
    int64_t rows;
    if (!jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows)) rows = -1;
    recordArg arg = {g, cols};
    return pruneWith(rows, recordStats, &arg, cols, terms, nterms, why, n);
}

int pruneRanges(const cJSON *ranges, const segmentSchema *cols, const pruneTerm *terms, int nterms, pruneSpan **spans,
                int *nspans, int *kept) {
    *spans = NULL;
    *nspans = *kept = 0;
    int n = cJSON_GetArraySize(ranges);
    if (n == 0) return 0;
    pruneSpan *v = malloc(sizeof *v * (size_t)n);
    if (!v) return -1;
    const cJSON *r;
    cJSON_ArrayForEach(r, ranges) {
        int64_t first, last;
        if (!jsonWhole(cJSON_GetObjectItemCaseSensitive(r, "first"), 0, &first) ||
            !jsonWhole(cJSON_GetObjectItemCaseSensitive(r, "last"), 0, &last)) {
            /* (segmentRangesRead made them): read the segment whole */
            v[0] = (pruneSpan){INT64_MIN, INT64_MAX};
            *nspans = 1;
            *kept = n;
            break;
        }
        if (pruneSegment(r, cols, terms, nterms, NULL, 0)) continue;
        (*kept)++;
        if (*nspans && v[*nspans - 1].last + 1 == first) v[*nspans - 1].last = last;
        else v[(*nspans)++] = (pruneSpan){first, last};
    }
    if (*nspans) *spans = v;
    else free(v);
    return 0;
}

void pruneTermsFree(pruneTerm *terms, int n) {
    for (int i = 0; terms && i < n; i++) {
        for (int j = 0; j < terms[i].nvals; j++) sqlite3_value_free(terms[i].vals[j]);
        free(terms[i].vals);
    }
    free(terms);
}

int pruneTermsCopy(const pruneTerm *terms, int n, pruneTerm **out) {
    *out = NULL;
    if (n <= 0) return 0;
    pruneTerm *v = calloc((size_t)n, sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++) {
        v[i] = (pruneTerm){.op = terms[i].op, .col = terms[i].col};
        if (terms[i].nvals && !(v[i].vals = calloc((size_t)terms[i].nvals, sizeof *v[i].vals))) goto oom;
        for (int j = 0; j < terms[i].nvals; j++, v[i].nvals++)
            if (!(v[i].vals[j] = sqlite3_value_dup(terms[i].vals[j]))) goto oom;
    }
    *out = v;
    return 0;
oom:
    pruneTermsFree(v, n);
    return -1;
}
