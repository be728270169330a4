/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup.c - the rows a join looks up, in memory (see lookup.h).
 *
 * Rows are arrays: a rowid each, ncol values each (numbers inline, text
 * and BLOBs as offsets into one byte arena), and a key each; a chained
 * hash of row numbers indexes the keys.
 */
#include "query/lookup.h"

#include <stdlib.h>
#include <string.h>

/* A value as stored: numbers inline, bytes at an offset of the arena. */
typedef struct memValue {
    union {
        int64_t i;
        double r;
        size_t off;
    } u;
    int n;    /* bytes, for text and BLOBs */
    int type; /* SQLITE_INTEGER, …, SQLITE_NULL */
} memValue;

struct lookupMem {
    int ncol, key_col;
    size_t max, used;   /* bytes: the cap, and what the arrays and arena take */
    int64_t rows, cap;  /* rows added; rows the arrays hold */
    int64_t *rowid;     /* [cap] */
    memValue *vals;     /* [cap * ncol] */
    memValue *keys;     /* [cap]: each row's key (type SQLITE_NULL: none) */
    char *bytes;        /* the arena */
    size_t nbytes, capbytes;
    uint32_t *head;     /* [mask + 1]: the first row of each chain */
    uint32_t *chain;    /* [rows]: the next row of its chain */
    uint32_t mask;
};

/* SQLite's white space, which numeric text may start with. */
static int isSpace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int lookupKeyOf(sqlite3_value *v, lookupKey *k) {
    memset(k, 0, sizeof *k);
    switch (sqlite3_value_type(v)) {
    case SQLITE_NULL: return 0;
    case SQLITE_INTEGER:
    case SQLITE_FLOAT: k->type = SQLITE_FLOAT; k->num = sqlite3_value_double(v); break;
    case SQLITE_BLOB:
        k->type = SQLITE_BLOB;
        k->bytes = sqlite3_value_blob(v);
        k->n = sqlite3_value_bytes(v);
        break;
    default: {
        const unsigned char *s = sqlite3_value_text(v);
        if (!s) return -1;
        k->type = SQLITE_TEXT;
        k->bytes = s;
        k->n = sqlite3_value_bytes(v);
        int i = 0;
        while (i < k->n && isSpace(s[i])) i++;
        /* a number can only start so; else it is text whatever follows */
        if (i == k->n || !(strchr("0123456789+-.", s[i]) && s[i])) break;
        /* SQLite's own reading, on a copy (numeric_type converts it) */
        sqlite3_value *d = sqlite3_value_dup(v);
        if (!d) return -1;
        int type = sqlite3_value_numeric_type(d);
        if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
            k->type = SQLITE_FLOAT;
            k->num = sqlite3_value_double(d);
            k->bytes = NULL;
            k->n = 0;
        }
        sqlite3_value_free(d);
        break;
    }
    }
    if (k->type == SQLITE_FLOAT && k->num == 0) k->num = 0; /* -0.0 keys as 0.0 */
    return 1;
}

void lookupKeyFunction(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    switch (sqlite3_value_numeric_type(argv[0])) {
    case SQLITE_INTEGER:
    case SQLITE_FLOAT: sqlite3_result_double(ctx, sqlite3_value_double(argv[0])); break;
    case SQLITE_NULL: sqlite3_result_null(ctx); break;
    default: sqlite3_result_value(ctx, argv[0]); break;
    }
}

static uint64_t hashKey(const lookupKey *k) {
    uint64_t h;
    if (k->type == SQLITE_FLOAT) {
        memcpy(&h, &k->num, sizeof h);
    } else { /* FNV-1a */
        h = 1469598103934665603ULL ^ (uint64_t)k->type;
        const unsigned char *p = k->bytes;
        for (int i = 0; i < k->n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    }
    h ^= h >> 33; /* spread the high bits (a double's) into the low */
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

lookupMem *lookupMemNew(int ncol, int key_col, size_t max_bytes) {
    lookupMem *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->ncol = ncol;
    m->key_col = key_col;
    m->max = max_bytes;
    return m;
}

/* Room for n more bytes in the arena: its offset; -1 out of memory, -2
 * past the cap. */
static int64_t arenaTake(lookupMem *m, size_t n) {
    if (m->nbytes + n > m->capbytes) {
        size_t want = m->capbytes ? m->capbytes : 4096;
        while (want < m->nbytes + n) want *= 2;
        if (m->used - m->capbytes + want > m->max) return -2;
        char *b = realloc(m->bytes, want);
        if (!b) return -1;
        m->used += want - m->capbytes;
        m->bytes = b;
        m->capbytes = want;
    }
    int64_t off = (int64_t)m->nbytes;
    m->nbytes += n;
    return off;
}

/* Grow the row arrays to twice their rows: 0, 1 past the cap, -1. */
static int growRows(lookupMem *m) {
    int64_t cap = m->cap ? m->cap * 2 : 256;
    size_t per = sizeof(int64_t) + sizeof(memValue) * ((size_t)m->ncol + 1) + sizeof(uint32_t) * 3;
    if (cap >= (int64_t)LOOKUP_NONE || m->used + per * (size_t)(cap - m->cap) > m->max) return 1;
    int64_t *rowid = realloc(m->rowid, sizeof *rowid * (size_t)cap);
    if (rowid) m->rowid = rowid;
    memValue *vals = rowid ? realloc(m->vals, sizeof *vals * (size_t)cap * (size_t)(m->ncol ? m->ncol : 1)) : NULL;
    if (vals) m->vals = vals;
    memValue *keys = vals ? realloc(m->keys, sizeof *keys * (size_t)cap) : NULL;
    if (!keys) return -1;
    m->keys = keys;
    /* the hash (head and chain, made by lookupMemIndex) is counted now */
    m->used += per * (size_t)(cap - m->cap);
    m->cap = cap;
    return 0;
}

int lookupMemAdd(lookupMem *m, int64_t rowid, sqlite3_stmt *st, int first) {
    if (m->rows == m->cap) {
        int rc = growRows(m);
        if (rc) return rc;
    }
    memValue *row = &m->vals[m->rows * m->ncol];
    for (int j = 0; j < m->ncol; j++) {
        sqlite3_value *v = sqlite3_column_value(st, first + j);
        memValue *o = &row[j];
        o->type = sqlite3_value_type(v);
        o->n = 0;
        if (o->type == SQLITE_INTEGER) o->u.i = sqlite3_value_int64(v);
        else if (o->type == SQLITE_FLOAT) o->u.r = sqlite3_value_double(v);
        else if (o->type == SQLITE_TEXT || o->type == SQLITE_BLOB) {
            const void *p = o->type == SQLITE_TEXT ? (const void *)sqlite3_value_text(v) : sqlite3_value_blob(v);
            o->n = sqlite3_value_bytes(v);
            if (!p && o->n) return -1;
            int64_t off = arenaTake(m, (size_t)o->n);
            if (off < 0) return off == -2 ? 1 : -1;
            if (o->n) memcpy(m->bytes + off, p, (size_t)o->n);
            o->u.off = (size_t)off;
        }
    }
    lookupKey k;
    int has = lookupKeyOf(sqlite3_column_value(st, first + m->key_col), &k);
    if (has < 0) return -1;
    memValue *key = &m->keys[m->rows];
    key->type = has ? k.type : SQLITE_NULL;
    key->u.r = k.num;
    key->n = 0;
    /* a text or BLOB key is the key column's own bytes */
    if (has && k.type != SQLITE_FLOAT) *key = row[m->key_col];
    m->rowid[m->rows++] = rowid;
    return 0;
}

/* The arena's bytes at off ("" when it is empty: no NULL pointer). */
static const char *arenaAt(const lookupMem *m, size_t off) { return m->bytes ? m->bytes + off : ""; }

/* A row's key as a lookupKey. */
static void rowKey(const lookupMem *m, uint32_t row, lookupKey *k) {
    const memValue *v = &m->keys[row];
    k->type = v->type;
    k->num = v->type == SQLITE_FLOAT ? v->u.r : 0;
    k->bytes = v->type == SQLITE_FLOAT ? NULL : arenaAt(m, v->u.off);
    k->n = v->n;
}

int lookupMemIndex(lookupMem *m) {
    uint64_t nb = 16;
    while (nb < (uint64_t)m->rows) nb *= 2;
    /* (counted by growRows: at most 2 * cap) */
    if (!(m->head = malloc(sizeof *m->head * nb)) || !(m->chain = malloc(sizeof *m->chain * (size_t)(m->rows + 1))))
        return -1;
    memset(m->head, 0xff, sizeof *m->head * nb);
    m->mask = (uint32_t)(nb - 1);
    /* pushed on the front, last row first: each chain in the order added */
    for (int64_t r = m->rows - 1; r >= 0; r--) {
        if (m->keys[r].type == SQLITE_NULL) continue;
        lookupKey k;
        rowKey(m, (uint32_t)r, &k);
        uint32_t b = (uint32_t)hashKey(&k) & m->mask;
        m->chain[r] = m->head[b];
        m->head[b] = (uint32_t)r;
    }
    return 0;
}

int64_t lookupMemRows(const lookupMem *m) { return m->rows; }

static int sameKey(const lookupMem *m, uint32_t row, const lookupKey *k) {
    const memValue *v = &m->keys[row];
    if (v->type != k->type) return 0;
    if (k->type == SQLITE_FLOAT) return v->u.r == k->num;
    return v->n == k->n && (k->n == 0 || memcmp(arenaAt(m, v->u.off), k->bytes, (size_t)k->n) == 0);
}

/* From row on along its chain: the first row whose key is k. */
static uint32_t findFrom(const lookupMem *m, const lookupKey *k, uint32_t row) {
    while (row != LOOKUP_NONE && !sameKey(m, row, k)) row = m->chain[row];
    return row;
}

uint32_t lookupMemFirst(const lookupMem *m, const lookupKey *k) {
    return findFrom(m, k, m->head[hashKey(k) & m->mask]);
}

uint32_t lookupMemNext(const lookupMem *m, const lookupKey *k, uint32_t row) {
    return findFrom(m, k, m->chain[row]);
}

int64_t lookupMemRowid(const lookupMem *m, uint32_t row) { return m->rowid[row]; }

void lookupResult(sqlite3_context *ctx, int type, int64_t i, double r, const void *p, int n) {
    switch (type) {
    case SQLITE_INTEGER: sqlite3_result_int64(ctx, i); break;
    case SQLITE_FLOAT: sqlite3_result_double(ctx, r); break;
    case SQLITE_TEXT: sqlite3_result_text(ctx, p, n, SQLITE_TRANSIENT); break;
    case SQLITE_BLOB:
        /* the empty BLOB: result_blob takes a NULL pointer for SQL NULL */
        if (n) sqlite3_result_blob(ctx, p, n, SQLITE_TRANSIENT);
        else sqlite3_result_zeroblob(ctx, 0);
        break;
    default: sqlite3_result_null(ctx); break;
    }
}

void lookupMemResult(const lookupMem *m, uint32_t row, int col, sqlite3_context *ctx) {
    const memValue *v = &m->vals[(int64_t)row * m->ncol + col];
    int bytes = v->type == SQLITE_TEXT || v->type == SQLITE_BLOB;
    lookupResult(ctx, v->type, v->type == SQLITE_INTEGER ? v->u.i : 0, v->type == SQLITE_FLOAT ? v->u.r : 0,
                 bytes ? arenaAt(m, v->u.off) : NULL, bytes ? (int)v->n : 0);
}

void lookupMemFree(lookupMem *m) {
    if (!m) return;
    free(m->rowid);
    free(m->vals);
    free(m->keys);
    free(m->bytes);
    free(m->head);
    free(m->chain);
    free(m);
}
