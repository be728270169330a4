/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rewrite.c - DELETE and UPDATE by copy-on-write of the touched segments
 * (see rewrite.h).
 */
#include "query/rewrite.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/interrupt.h"
#include "core/jsonstrict.h"
#include "query/compact.h"
#include "query/segment.h"

/* The marked rows of one segment: bit r of bits is rowid r. */
typedef struct marks {
    uint8_t *bits;
    int64_t nbits;  /* rowids bits covers: 0 .. nbits - 1 */
    int64_t marked;
} marks;

struct queryRewrite {
    const char *operation;
    char *schema;
    marks *segs;       /* [nseg] */
    int nseg;
    int64_t marked;
    segmentWriter *w;
    const volatile sig_atomic_t *stop; /* or NULL */
};

int rewriteOpen(stage *st, const char *table_id, const char *schema, const char *operation, int nseg,
                const char *tmp_dir, const volatile sig_atomic_t *stop, queryRewrite **out, lakeError *err) {
    *out = NULL;
    queryRewrite *w = calloc(1, sizeof *w);
    if (!w || !(w->schema = strdup(schema)) || !(w->segs = calloc((size_t)(nseg > 0 ? nseg : 1), sizeof *w->segs))) {
        rewriteFree(w);
        return errSet(err, LAKE_EFAIL, "out of memory");
    }
    w->operation = operation;
    w->nseg = nseg;
    w->stop = stop;
    segmentWriterOptions opt = {.tmp_dir = tmp_dir, .stop = stop};
    if (segmentWriterOpen(st, table_id, schema, &opt, &w->w, err)) {
        rewriteFree(w);
        return err->code;
    }
    *out = w;
    return 0;
}

const char *rewriteOperation(const queryRewrite *w) { return w->operation; }

int rewriteMark(queryRewrite *w, int seg, int64_t rowid) {
    if (seg < 0 || seg >= w->nseg || rowid < 0) return -1;
    marks *m = &w->segs[seg];
    if (rowid >= m->nbits) {
        int64_t n = m->nbits ? m->nbits : 1024;
        while (n <= rowid) n *= 2;
        uint8_t *b = realloc(m->bits, (size_t)(n / 8));
        if (!b) return -1;
        memset(b + m->nbits / 8, 0, (size_t)((n - m->nbits) / 8));
        m->bits = b;
        m->nbits = n;
    }
    uint8_t bit = (uint8_t)(1u << (rowid % 8));
    if (m->bits[rowid / 8] & bit) return 0;
    m->bits[rowid / 8] |= bit;
    m->marked++;
    w->marked++;
    return 1;
}

int64_t rewriteMarked(const queryRewrite *w) { return w->marked; }

int rewriteAddRow(queryRewrite *w, sqlite3_value **vals, int n, lakeError *err) {
    return segmentWriterAddSqlRow(w->w, vals, n, err);
}

/* compactCopySegment's filter: is rowid marked? */
static int isMarked(void *arg, int64_t rowid) {
    const marks *m = arg;
    return rowid >= 0 && rowid < m->nbits && (m->bits[rowid / 8] >> (rowid % 8) & 1);
}

int rewriteCommit(queryRewrite *w, catalogCache *c, segcache *segs, stage *st, const char *ns, const char *name,
                  const cJSON *const *segv, int64_t expected, int64_t *version, lakeError *err) {
    *version = expected;
    if (w->marked == 0) return 0;
    cJSON *replace = cJSON_CreateArray(), *written = NULL, *files = NULL;
    int rc = replace ? 0 : errSet(err, LAKE_EFAIL, "out of memory");
    for (int i = 0; !rc && i < w->nseg; i++) {
        if (!w->segs[i].marked) continue;
        const cJSON *loc = cJSON_GetObjectItemCaseSensitive(segv[i], "location");
        int64_t rows;
        if (!cJSON_IsString(loc) || !jsonWhole(cJSON_GetObjectItemCaseSensitive(segv[i], "rows"), 0, &rows)) {
            rc = errSet(err, LAKE_EDATA, "%s.%s: a malformed segment in the registration", ns, name);
            break;
        }
        if (!cJSON_AddItemToArray(replace, cJSON_CreateString(loc->valuestring))) {
            rc = errSet(err, LAKE_EFAIL, "out of memory");
            break;
        }
        /* every row marked: nothing of it to copy */
        if (w->segs[i].marked < rows)
            rc = compactCopySegment(segs, st, w->schema, segv[i], isMarked, &w->segs[i], w->w, w->stop, err);
    }
    if (!rc) rc = segmentWriterFinish(w->w, &written, &files, err);
    if (!rc) testHold("LAKE_TEST_REWRITE_HOLD"); /* the crash and race suites: segments uploaded, not committed */
    if (!rc && (interruptPending() || (w->stop && *w->stop))) rc = errSet(err, LAKE_EFAIL, "%s.%s: interrupted; nothing committed", ns, name);
    if (!rc) rc = cacheRewrite(c, ns, name, expected, w->operation, replace, written, files, version, err);
    cJSON_Delete(replace);
    cJSON_Delete(written);
    cJSON_Delete(files);
    return rc;
}

void rewriteFree(queryRewrite *w) {
    if (!w) return;
    for (int i = 0; w->segs && i < w->nseg; i++) free(w->segs[i].bits);
    free(w->segs);
    free(w->schema);
    segmentWriterFree(w->w);
    free(w);
}
