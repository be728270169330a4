/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * regindex.c - a cached registration's segments, pre-parsed (see
 * regindex.h).
 *
 * The file, in this machine's byte order (a marker says which):
 *   ixHeader
 *   the registration without "segments", unformatted JSON (head_len
 *   bytes, padded to 8)
 *   ixSeg[nseg]      one per segment, in the registration's order
 *   ixStat[nstat]    each segment's entries, by column id
 *   pool             the text bounds, each NUL-terminated
 * The header's crc is the CRC-32 of every byte of the file, taken with
 * the crc field zero.
 */
#include "catalog/regindex.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <sqlite3.h>

#include "core/fsutil.h"
#include "core/jsonstrict.h"

#define IX_MAGIC "LAKERIX\n"
#define IX_ENDIAN 0x01020304u
#define IX_UNKNOWN UINT32_MAX /* ixSeg.nstats: nothing known of any column */

typedef struct ixHeader {
    char magic[8];
    uint32_t format;
    uint32_t endian;
    uint64_t json_size; /* the JSON file's bytes */
    uint32_t json_crc;  /* the value of its checksum line */
    uint32_t nseg;
    uint32_t nstat;
    uint32_t head_len;
    uint64_t pool_len;
    uint32_t crc;
    uint32_t pad;
} ixHeader;

typedef struct ixSeg {
    int64_t rows;   /* -1: not a whole number */
    uint64_t off;   /* its record in the JSON file */
    uint32_t len;
    uint32_t crc;   /* of those bytes */
    uint32_t first; /* its first ixStat */
    uint32_t nstats; /* or IX_UNKNOWN */
} ixSeg;

typedef struct ixStat {
    int64_t id;    /* 0 matches no column */
    int64_t nulls;
    uint64_t min, max; /* by type: INTEGER its value, FLOAT its bits, TEXT its offset in the pool */
    uint32_t min_len, max_len; /* TEXT: its bytes */
    uint8_t known, has_bounds, max_cut, min_type, max_type, pad[3];
} ixStat;

struct regIndex {
    char *buf; /* the file, mapped */
    size_t len;
    const ixHeader *h;
    const char *head;
    const ixSeg *segs;
    const ixStat *stats;
    const char *pool;
    int json_fd;
};

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* crc32 of c and n more bytes at p (zlib's answers its initial value for
 * a NULL p, which an empty array may be) */
static uLong crcAdd(uLong c, const void *p, size_t n) { return n ? crc32(c, (const Bytef *)p, (uInt)n) : c; }

/* --- the records' places in the JSON text ---------------------------------
 * The text was validated (jsonStrictParse), so a scan that only tracks
 * strings and nesting finds each value's end. */

static size_t skipWs(const char *p, size_t n, size_t i) {
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    return i;
}

static size_t skipString(const char *p, size_t n, size_t i) {
    for (i++; i < n && p[i] != '"'; i++)
        if (p[i] == '\\') i++;
    return i + 1;
}

static size_t skipValue(const char *p, size_t n, size_t i) {
    if (i >= n) return n;
    if (p[i] == '"') return skipString(p, n, i);
    if (p[i] == '{' || p[i] == '[') {
        int depth = 0;
        while (i < n) {
            if (p[i] == '"') {
                i = skipString(p, n, i);
                continue;
            }
            if (p[i] == '{' || p[i] == '[') depth++;
            else if ((p[i] == '}' || p[i] == ']') && --depth == 0) return i + 1;
            i++;
        }
        return n;
    }
    while (i < n && !strchr(",}] \t\n\r", p[i])) i++;
    return i;
}

/* The spans of the top-level "segments" array's nseg elements of text
 * p[0..n): 0, or -1 when they are not found so. */
static int recordSpans(const char *p, size_t n, ixSeg *segs, uint32_t nseg) {
    size_t i = skipWs(p, n, 0);
    if (i >= n || p[i] != '{') return -1;
    for (i++;;) {
        i = skipWs(p, n, i);
        if (i >= n || p[i] != '"') return -1;
        size_t k = i;
        i = skipString(p, n, i);
        int found = i - k == 10 && memcmp(p + k, "\"segments\"", 10) == 0;
        i = skipWs(p, n, i);
        if (i >= n || p[i] != ':') return -1;
        i = skipWs(p, n, i + 1);
        if (!found) {
            i = skipWs(p, n, skipValue(p, n, i));
            if (i < n && p[i] == ',') { i++; continue; }
            return -1;
        }
        if (i >= n || p[i] != '[') return -1;
        uint32_t m = 0;
        i = skipWs(p, n, i + 1);
        if (i < n && p[i] == ']') return nseg == 0 ? 0 : -1;
        for (;;) {
            size_t start = i;
            i = skipValue(p, n, i);
            if (m == nseg || start >= n || i > n || p[start] != '{' || i - start > UINT32_MAX) return -1;
            segs[m].off = start;
            segs[m].len = (uint32_t)(i - start);
            segs[m].crc = (uint32_t)crc32(0, (const Bytef *)p + start, (uInt)(i - start));
            m++;
            i = skipWs(p, n, i);
            if (i < n && p[i] == ',') { i = skipWs(p, n, i + 1); continue; }
            return i < n && p[i] == ']' && m == nseg ? 0 : -1;
        }
    }
}

/* --- building ------------------------------------------------------------- */

typedef struct builder {
    ixStat *stats;
    size_t nstat, cap;
    char *pool;
    size_t pool_len, pool_cap;
} builder;

static int poolAdd(builder *b, const char *s, size_t n, uint64_t *off) {
    if (b->pool_len + n + 1 > b->pool_cap) {
        size_t cap = b->pool_cap ? b->pool_cap : 4096;
        while (cap < b->pool_len + n + 1) cap *= 2;
        char *p = realloc(b->pool, cap);
        if (!p) return -1;
        b->pool = p;
        b->pool_cap = cap;
    }
    *off = b->pool_len;
    memcpy(b->pool + b->pool_len, s, n);
    b->pool[b->pool_len + n] = '\0';
    b->pool_len += n + 1;
    return 0;
}

/* segmentStatsColumn's answer for the column of id id, appended. */
static int statAdd(builder *b, const cJSON *g, int64_t id) {
    if (b->nstat == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        ixStat *s = realloc(b->stats, cap * sizeof *s);
        if (!s) return -1;
        b->stats = s;
        b->cap = cap;
    }
    segmentColumn col = {.name = "", .type = LAKE_TYPE_BLOB, .id = id};
    segmentSchema one = {.ncols = 1, .cols = &col};
    segmentColumnStats st;
    ixStat *x = &b->stats[b->nstat];
    memset(x, 0, sizeof *x);
    x->id = id;
    if ((x->known = (uint8_t)segmentStatsColumn(g, &one, 0, &st))) {
        x->nulls = st.nulls;
        x->has_bounds = (uint8_t)st.has_bounds;
        x->max_cut = (uint8_t)st.max_cut;
        for (int k = 0; k < 2 && st.has_bounds; k++) {
            const segmentStatsValue *v = k ? &st.max : &st.min;
            uint64_t *slot = k ? &x->max : &x->min;
            if (k) x->max_type = (uint8_t)v->type;
            else x->min_type = (uint8_t)v->type;
            if (v->type == SQLITE_INTEGER) *slot = (uint64_t)v->i;
            else if (v->type == SQLITE_FLOAT) memcpy(slot, &v->r, sizeof *slot);
            else if (v->type == SQLITE_TEXT) {
                if (poolAdd(b, v->p, v->n, slot)) return -1;
                if (k) x->max_len = (uint32_t)v->n;
                else x->min_len = (uint32_t)v->n;
            }
        }
    }
    b->nstat++;
    return 0;
}

/* The entries of segment g into b, s->first and s->nstats set. */
static int segmentAdd(builder *b, const cJSON *g, ixSeg *s) {
    int64_t rows;
    s->rows = jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows) ? rows : -1;
    s->first = (uint32_t)b->nstat;
    /* id 0 is no column's: it answers whether anything is known at all */
    segmentColumn col = {.name = "", .type = LAKE_TYPE_BLOB, .id = 0};
    segmentSchema one = {.ncols = 1, .cols = &col};
    segmentColumnStats st;
    if (!segmentStatsColumn(g, &one, 0, &st)) {
        s->nstats = IX_UNKNOWN;
        return 0;
    }
    /* the ids segmentStatsColumn finds an entry for; any other id is a
     * column added after the segment (every row NULL) */
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(g, "columns");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "stats"));
    if (cols) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cols) {
            int64_t id;
            if (jsonWhole(c, 1, &id) && statAdd(b, g, id)) return -1;
        }
    } else {
        for (int i = 1; i <= n; i++)
            if (statAdd(b, g, i)) return -1;
    }
    if (b->nstat - s->first > UINT32_MAX - 1 || b->nstat > UINT32_MAX) return -1;
    s->nstats = (uint32_t)(b->nstat - s->first);
    return 0;
}

int regIndexWrite(const char *dir, const char *name, const cJSON *reg, const char *text, size_t len, uint32_t crc,
                  uint64_t file_size) {
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(reg, "segments"), *g;
    int n = cJSON_GetArraySize(segs), rc = -1;
    builder b = {0};
    ixSeg *sv = NULL;
    char *head = NULL;
    cJSON *copy = NULL;
    atomicFile af = {.fd = -1, .dirfd = -1};
    lakeError err = {0};
    if (!cJSON_IsArray(segs) || n < REGINDEX_MIN_SEGMENTS || !(sv = calloc((size_t)n + 1, sizeof *sv))) goto out;
    if (recordSpans(text, len, sv, (uint32_t)n)) goto out;
    int i = 0;
    cJSON_ArrayForEach(g, segs) {
        if (segmentAdd(&b, g, &sv[i++])) goto out;
    }
    /* the head: the registration without its segments (a shallow copy
     * would share them: copy the members but "segments") */
    if (!(copy = cJSON_CreateObject())) goto out;
    const cJSON *m;
    cJSON_ArrayForEach(m, reg) {
        if (strcmp(m->string, "segments") == 0) continue;
        cJSON *d = cJSON_Duplicate(m, 1);
        if (!d || !cJSON_AddItemToObject(copy, m->string, d)) {
            cJSON_Delete(d);
            goto out;
        }
    }
    if (!(head = cJSON_PrintUnformatted(copy))) goto out;
    ixHeader h = {.format = REGINDEX_FORMAT, .endian = IX_ENDIAN, .json_size = file_size, .json_crc = crc,
                  .nseg = (uint32_t)n, .nstat = (uint32_t)b.nstat, .head_len = (uint32_t)strlen(head),
                  .pool_len = b.pool_len};
    memcpy(h.magic, IX_MAGIC, sizeof h.magic);
    static const char zeros[8];
    size_t hpad = pad8(h.head_len) - h.head_len;
    uLong c = crcAdd(crc32(0, NULL, 0), &h, sizeof h);
    c = crcAdd(c, head, h.head_len);
    c = crcAdd(c, zeros, hpad);
    c = crcAdd(c, sv, sizeof *sv * (size_t)n);
    c = crcAdd(c, b.stats, sizeof *b.stats * b.nstat);
    c = crcAdd(c, b.pool, b.pool_len);
    h.crc = (uint32_t)c;
    if (sizeof h + pad8(h.head_len) + sizeof *sv * (size_t)n + sizeof *b.stats * b.nstat + b.pool_len >
        (size_t)REGINDEX_MAX_BYTES)
        goto out;
    if (atomicOpen(&af, dir, name, 1, 0600, &err)) goto out;
    af.nosync = 1; /* rebuildable: a torn one is ignored */
    if (writeAll(af.fd, &h, sizeof h) || writeAll(af.fd, head, h.head_len) || writeAll(af.fd, zeros, hpad) ||
        writeAll(af.fd, sv, sizeof *sv * (size_t)n) || writeAll(af.fd, b.stats, sizeof *b.stats * b.nstat) ||
        writeAll(af.fd, b.pool, b.pool_len) || atomicCommit(&af, &err))
        goto out;
    rc = 0;
out:
    atomicAbort(&af);
    cJSON_free(head);
    cJSON_Delete(copy);
    free(sv);
    free(b.stats);
    free(b.pool);
    return rc;
}

/* --- reading -------------------------------------------------------------- */

/* 1 when the file open as fd is size bytes ending in the checksum line of crc. */
static int sameJson(int fd, uint64_t size, uint32_t crc) {
    struct stat st;
    char want[32], tail[32];
    int n = snprintf(want, sizeof want, "\ncrc32 %08lx\n", (unsigned long)crc);
    return fstat(fd, &st) == 0 && (uint64_t)st.st_size == size && size >= (uint64_t)n &&
           pread(fd, tail, (size_t)n, (off_t)(size - (uint64_t)n)) == n && memcmp(tail, want, (size_t)n) == 0;
}

regIndex *regIndexOpen(const char *path, const char *json_path) {
    regIndex *x = calloc(1, sizeof *x);
    int fd = x ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (x) x->json_fd = -1;
    /* mapped, not read: the pages are the page cache's (the file is only
     * ever replaced whole, by a rename) */
    if (!x || fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(ixHeader) ||
        st.st_size > REGINDEX_MAX_BYTES)
        goto bad;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) goto bad;
    x->buf = map;
    x->len = (size_t)st.st_size;
    close(fd);
    fd = -1;
    ixHeader h;
    memcpy(&h, x->buf, sizeof h);
    if (memcmp(h.magic, IX_MAGIC, sizeof h.magic) != 0 || h.format != REGINDEX_FORMAT || h.endian != IX_ENDIAN)
        goto bad;
    uint64_t need = sizeof h + pad8(h.head_len) + sizeof(ixSeg) * (uint64_t)h.nseg +
                    sizeof(ixStat) * (uint64_t)h.nstat + h.pool_len;
    if (need != x->len || h.nseg > INT32_MAX) goto bad;
    /* the CRC of the file with its crc field zero */
    static const char zeros[sizeof h.crc];
    size_t at = offsetof(ixHeader, crc);
    uLong c = crcAdd(crc32(0, NULL, 0), x->buf, at);
    c = crcAdd(c, zeros, sizeof zeros);
    c = crcAdd(c, x->buf + at + sizeof h.crc, x->len - at - sizeof h.crc);
    if ((uint32_t)c != h.crc) goto bad;
    x->h = (const ixHeader *)(const void *)x->buf;
    x->head = x->buf + sizeof h;
    x->segs = (const ixSeg *)(const void *)(x->head + pad8(h.head_len));
    x->stats = (const ixStat *)(const void *)(x->segs + h.nseg);
    x->pool = (const char *)(x->stats + h.nstat);
    /* every entry within the file, so that reads need no checks */
    for (uint32_t i = 0; i < h.nseg; i++) {
        const ixSeg *s = &x->segs[i];
        if (s->nstats != IX_UNKNOWN && ((uint64_t)s->first + s->nstats > h.nstat)) goto bad;
        if (s->off + s->len > h.json_size) goto bad;
    }
    for (uint32_t i = 0; i < h.nstat; i++) {
        const ixStat *s = &x->stats[i];
        if ((s->min_type == SQLITE_TEXT && s->min + s->min_len >= h.pool_len) ||
            (s->max_type == SQLITE_TEXT && s->max + s->max_len >= h.pool_len))
            goto bad;
    }
    if ((x->json_fd = open(json_path, O_RDONLY | O_CLOEXEC)) < 0 || !sameJson(x->json_fd, h.json_size, h.json_crc))
        goto bad;
    return x;
bad:
    if (fd >= 0) close(fd);
    regIndexClose(x);
    return NULL;
}

void regIndexClose(regIndex *x) {
    if (!x) return;
    if (x->json_fd >= 0) close(x->json_fd);
    if (x->buf) munmap(x->buf, x->len);
    free(x);
}

cJSON *regIndexHead(const regIndex *x) {
    return jsonStrictParse(x->head, x->h->head_len, NULL, NULL, &(jsonFault){0});
}

int regIndexCount(const regIndex *x) { return (int)x->h->nseg; }

int64_t regIndexRows(const regIndex *x, int i) { return x->segs[i].rows; }

int regIndexStats(const regIndex *x, int i, int64_t col_id, segmentColumnStats *out) {
    const ixSeg *s = &x->segs[i];
    memset(out, 0, sizeof *out);
    if (s->nstats == IX_UNKNOWN) return 0;
    const ixStat *e = NULL;
    for (uint32_t k = 0; k < s->nstats; k++) /* the last of an id, as segmentStatsColumn finds it */
        if (x->stats[s->first + k].id == col_id) e = &x->stats[s->first + k];
    out->rows = s->rows;
    if (!e) { /* added after the segment was written: NULL in every row */
        out->nulls = s->rows;
        return 1;
    }
    if (!e->known) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    out->nulls = e->nulls;
    out->has_bounds = e->has_bounds;
    out->max_cut = e->max_cut;
    for (int k = 0; k < 2; k++) {
        segmentStatsValue *v = k ? &out->max : &out->min;
        uint64_t u = k ? e->max : e->min;
        v->type = k ? e->max_type : e->min_type;
        if (v->type == SQLITE_INTEGER) v->i = (int64_t)u;
        else if (v->type == SQLITE_FLOAT) memcpy(&v->r, &u, sizeof v->r);
        else if (v->type == SQLITE_TEXT) {
            v->p = x->pool + u;
            v->n = k ? e->max_len : e->min_len;
        }
    }
    return 1;
}

cJSON *regIndexRecord(const regIndex *x, int i) {
    const ixSeg *s = &x->segs[i];
    char *buf = malloc((size_t)s->len + 1);
    cJSON *g = NULL;
    if (buf && pread(x->json_fd, buf, s->len, (off_t)s->off) == (ssize_t)s->len &&
        (uint32_t)crc32(0, (const Bytef *)buf, (uInt)s->len) == s->crc)
        g = jsonStrictParse(buf, s->len, NULL, NULL, &(jsonFault){0});
    free(buf);
    return g;
}
