/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vtab.c - the "lake" virtual-table module (see vtab.h).
 */
#include "query/vtab.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/names.h"
#include "catalog/regindex.h"
#include "core/config.h"
#include "core/interrupt.h"
#include "core/jsonstrict.h"
#include "core/log.h"
#include "query/at.h"
#include "query/lookup.h"
#include "query/prefetch.h"
#include "query/prune.h"
#include "query/rewrite.h"
#include "query/segment.h"
#include "query/sqlscan.h"

/* Segments a cursor keeps open between scans (a table in the inner loop
 * of a join is scanned once per outer row): each holds two descriptors. */
#define KEEP_OPEN 32

/* The most a lookup store holds in memory: as a hash (query/lookup.h)
 * up to this size, else as a temporary database whose page cache is this
 * size (beyond it, it spills to a file in SQLite's temporary directory). */
#define LOOKUP_CACHE_KIB 16384
/* A table of at most this many rows is scanned, not looked up. */
#define LOOKUP_MIN_ROWS 64

/* The rowids a plan reads of a segment: one span at a time (pruneRanges). */
#define SPAN_SQL "rowid BETWEEN :lake_lo AND :lake_hi"

/* A lookup store: the rows one plan of a table keeps (its constant terms
 * applied), copied once per statement and indexed by the lookup column's
 * key (query/lookup.h), so that the inner table of a join answers each
 * outer row by a search instead of a scan: in memory as a hash when they
 * fit LOOKUP_CACHE_KIB, else in a private temporary database.  Kept on
 * the table until the statement ends. */
typedef struct lookupStore {
    struct lookupStore *next;
    char *key;          /* the plan and the values of its constant arguments */
    lookupMem *mem;     /* the rows in memory, or NULL: */
    sqlite3 *db;        /* in a temporary database */
    int64_t rows;
} lookupStore;

typedef struct queryTable {
    sqlite3_vtab base;
    queryContext *ctx;
    char *ns, *name, *id, *schema;
    char *table;            /* name without an AT suffix (query/at.h): the lake table's */
    int64_t at_version;     /* read at this version (AT), else -1 */
    char at_time[32];       /* or at the version of this time (AT), else "" */
    segmentSchema *cols;    /* schema, parsed */
    cJSON *pinned;          /* the registration this statement reads */
    const cJSON **segv;     /* its segment records, in order (segAt) */
    regIndex *ix;           /* or its index: the records parsed as used, owned */
    int nseg;
    unsigned char *marked;  /* [nseg] while collecting: the segments some scan kept */
    pruneTerm *cterms;      /* while collecting: the terms of its one scan (for row ranges) */
    int ncterms, cscans;    /* how many; the scans seen (more than one: no terms) */
    int64_t rows;           /* of the pinned version */
    lookupStore *stores;    /* built for this statement */
    segmentWriter *writer;  /* rows this statement inserts */
    queryRewrite *rewrite;  /* or the rows it deletes or updates */
    struct queryTable *next;
} queryTable;

/* A segment a cursor has open: its reader, the plan's statement on it,
 * and its pin in the segment cache. */
typedef struct openSegment {
    segmentReader *rd;
    sqlite3_stmt *st;
    char sha[SHA256_HEX_LEN + 1];
    int lo, hi;             /* st's parameters :lake_lo and :lake_hi, 0 when the plan has none */
    cJSON *ranges;          /* the file's row ranges (segmentRangesRead), NULL when it has none */
    pruneSpan *spans;       /* of the scan: the rowids read, when ranges were pruned (else all) */
    int nspans, span;       /* how many; the one being read */
} openSegment;

typedef struct queryCursor {
    sqlite3_vtab_cursor base;
    const char *plan;       /* idxStr of the plan taken */
    const char *sql;        /* the statement run on each segment (in plan) */
    int *map;               /* outer column -> inner result column, or -1 */
    sqlite3_value **args;   /* xFilter's arguments, bound as ?1, ?2, … */
    int nargs;
    pruneTerm *terms;       /* the plan's terms, with their values */
    int nterms;
    int *keep;              /* the segments kept, in order */
    int nkeep, k;           /* how many; the position of the scan in keep */
    int64_t limit, offset;  /* the statement's LIMIT and OFFSET when SQLite passed them, else -1, 0 */
    int lookup_col;         /* the plan looks rows up by this column (a join's), or -1 */
    int lookup_arg;         /* the xFilter argument holding its value, 1-based */
    sqlite3_stmt *lookup;   /* on the plan's lookup store's db; the rows come from it */
    lookupStore *store;     /* the store being looked up */
    lookupKey probe;        /* in a store in memory: the key looked up (bytes in probe_buf) */
    uint32_t row;           /* and the row found, or LOOKUP_NONE */
    char *probe_buf;
    size_t probe_cap;
    int looking;            /* this scan is a lookup */
    prefetch *pf;           /* kept segments being fetched ahead, or NULL */
    openSegment *open;      /* [nslots]: segments open, by index */
    int nslots, nopen, cur;        /* how many are open; the one being read, or -1 */
    int eof;
} queryCursor;

/* Record a lake error as the statement's error message. */
static int fail(queryTable *t, const lakeError *err) {
    if (&t->ctx->err != err) t->ctx->err = *err;
    sqlite3_free(t->base.zErrMsg);
    t->base.zErrMsg = sqlite3_mprintf("%s", err->msg);
    return SQLITE_ERROR;
}

static int failf(queryTable *t, lakeCode code, const char *msg) {
    lakeError e = {0};
    errSet(&e, code, "%s.%s: %s", t->ns, t->name, msg);
    return fail(t, &e);
}

static void freeStores(queryTable *t) {
    while (t->stores) {
        lookupStore *s = t->stores;
        t->stores = s->next;
        lookupMemFree(s->mem);
        sqlite3_close(s->db);
        free(s->key);
        free(s);
    }
}

static void unpin(queryTable *t) {
    freeStores(t);
    pruneTermsFree(t->cterms, t->ncterms);
    t->cterms = NULL;
    t->ncterms = t->cscans = 0;
    cJSON_Delete(t->pinned);
    t->pinned = NULL;
    for (int i = 0; t->ix && i < t->nseg; i++) cJSON_Delete((cJSON *)t->segv[i]);
    regIndexClose(t->ix);
    t->ix = NULL;
    free(t->segv);
    t->segv = NULL;
    free(t->marked);
    t->marked = NULL;
    t->nseg = 0;
    t->rows = 0;
}

/* Resolve the table (at its AT version or time, if any) into *reg. */
static int resolveTable(queryContext *ctx, const char *ns, const char *table, int64_t at_version, const char *at_time,
                        cJSON **reg, lakeError *err) {
    return at_time[0] ? cacheResolveAt(ctx->cache, ns, table, at_time, reg, err)
                      : cacheResolve(ctx->cache, ns, table, at_version, reg, err);
}

static int pinWith(queryTable *t, cJSON *reg, regIndex *ix);

/* Resolve the table once per statement; keep that version.  For a
 * reader (indexed), the current version is read through its registration
 * index when the cache has a good one (catalog/regindex.h): pruning reads
 * no JSON, and only the records of the segments kept are parsed (segAt).
 * An INSERT reads no segment, and would make the index of a version it
 * is about to replace. */
static int pinAs(queryTable *t, int indexed) {
    if (t->pinned) return SQLITE_OK;
    lakeError *err = &t->ctx->err;
    cJSON *reg = NULL;
    regIndex *ix = NULL;
    int rc = indexed && t->at_version < 0 && !t->at_time[0]
                 ? cacheResolveIndexed(t->ctx->cache, t->ns, t->table, &reg, &ix, err)
                 : resolveTable(t->ctx, t->ns, t->table, t->at_version, t->at_time, &reg, err);
    if (rc) return fail(t, err);
    return pinWith(t, reg, ix);
}

static int pin(queryTable *t) { return pinAs(t, 1); }

/* Segment i's record: with an index, parsed on first use.  NULL when it
 * cannot be read back (the callers say "a malformed segment"). */
static const cJSON *segAt(queryTable *t, int i) {
    if (!t->segv[i] && t->ix) t->segv[i] = regIndexRecord(t->ix, i);
    return t->segv[i];
}

/* Every segment's record (DELETE and UPDATE rewrite them all): 0, or -1
 * when one cannot be read back. */
static int segAll(queryTable *t) {
    for (int i = 0; i < t->nseg; i++)
        if (!segAt(t, i)) return -1;
    return 0;
}

/* Keep reg (owned now; with its index ix, owned too, or NULL) as the
 * version this statement reads. */
static int pinWith(queryTable *t, cJSON *reg, regIndex *ix) {
    t->pinned = reg;
    t->ix = ix;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(t->pinned, "id");
    if (!cJSON_IsString(id) || strcmp(id->valuestring, t->id) != 0) {
        unpin(t);
        return failf(t, LAKE_ETEMP, "the table was dropped and created again; run the statement again");
    }
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(t->pinned, "segments"), *g;
    int n = ix ? regIndexCount(ix) : cJSON_GetArraySize(segs);
    if (n > 0 && !(t->segv = calloc((size_t)n, sizeof *t->segv))) {
        unpin(t);
        return SQLITE_NOMEM;
    }
    if (ix) {
        for (; t->nseg < n; t->nseg++)
            if (regIndexRows(ix, t->nseg) > 0) t->rows += regIndexRows(ix, t->nseg);
        segs = NULL;
        int64_t version = 0;
        jsonWhole(cJSON_GetObjectItemCaseSensitive(reg, "version"), 0, &version);
        traceLine("query", "pin %s.%s v%lld: %d segments from the registration index", t->ns, t->name,
                  (long long)version, n);
    }
    cJSON_ArrayForEach(g, segs) {
        int64_t rows = 0;
        jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows);
        t->rows += rows;
        t->segv[t->nseg++] = g;
    }
    testHold("LAKE_TEST_PIN_HOLD"); /* the grants suites: a revoke between the pin and the reads */
    return SQLITE_OK;
}

static void freeTable(queryTable *t) {
    unpin(t);
    segmentSchemaFree(t->cols);
    segmentWriterFree(t->writer);
    rewriteFree(t->rewrite);
    free(t->ns);
    free(t->name);
    free(t->table);
    free(t->id);
    free(t->schema);
    sqlite3_free(t);
}

static int xConnect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                    char **pzErr) {
    queryContext *ctx = aux;
    (void)argc;
    const char *ns = argv[1], *name = argv[2];
    char base[NAME_MAX_LEN + 1], at[32];
    int64_t version;
    const cacheEntry *e = queryAtSplit(name, base, sizeof base, &version, at) ? NULL : cacheFindTable(ctx->cache, ns, base);
    if (!e) {
        *pzErr = sqlite3_mprintf("%s.%s: no such table", ns, name);
        return SQLITE_ERROR;
    }
    segmentSchema *cols = NULL;
    lakeError err = {0};
    /* a table read AT a version has that version's schema: resolved now,
     * and kept as the statement's pin */
    cJSON *reg = NULL;
    char *schema = NULL;
    if (version >= 0 || at[0]) {
        if (resolveTable(ctx, ns, base, version, at, &reg, &ctx->err)) {
            *pzErr = sqlite3_mprintf("%s", ctx->err.msg);
            return SQLITE_ERROR;
        }
        schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reg, "schema"));
    } else {
        schema = strdup(e->schema);
    }
    if (!schema || segmentSchemaParse(schema, &cols, &err)) {
        *pzErr = sqlite3_mprintf("%s.%s: %s", ns, name, schema ? err.msg : "out of memory");
        cJSON_Delete(reg);
        free(schema);
        return SQLITE_ERROR;
    }
    char *sql = segmentSchemaTableSql(cols, "x");
    int rc = sql ? sqlite3_declare_vtab(db, sql) : SQLITE_NOMEM;
    sqlite3_free(sql);
    queryTable *t = rc == SQLITE_OK ? sqlite3_malloc(sizeof *t) : NULL;
    if (!t) {
        segmentSchemaFree(cols);
        cJSON_Delete(reg);
        free(schema);
        return rc == SQLITE_OK ? SQLITE_NOMEM : rc;
    }
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->cols = cols;
    t->ns = strdup(ns);
    t->name = strdup(name);
    t->table = strdup(base);
    t->at_version = version;
    snprintf(t->at_time, sizeof t->at_time, "%s", at);
    t->id = strdup(e->id);
    t->schema = schema;
    if (!t->ns || !t->name || !t->table || !t->id) {
        cJSON_Delete(reg);
        freeTable(t);
        return SQLITE_NOMEM;
    }
    if (reg && pinWith(t, reg, NULL) != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s", t->base.zErrMsg ? t->base.zErrMsg : "out of memory");
        freeTable(t);
        return SQLITE_ERROR;
    }
    t->next = ctx->tables;
    ctx->tables = t;
    *out = &t->base;
    return SQLITE_OK;
}

static int xDisconnect(sqlite3_vtab *v) {
    queryTable *t = (queryTable *)v;
    for (queryTable **p = &t->ctx->tables; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    freeTable(t);
    return SQLITE_OK;
}

/* The plan of a scan, in idxStr, three lines:
 *   the outer columns read, in order;
 *   the terms, each OP COL:ARG (pruneOp's letter, the column, the
 *   1-based xFilter argument holding its value, 0 for none; L and O
 *   carry the statement's LIMIT and OFFSET, column 0);
 *   the statement each segment runs, its ?N bound to xFilter's argv[N-1]:
 *   the segment's rowid, then the columns read.
 * e.g. "0 2\n>1:1 I0:2 N2:0\nSELECT rowid, "k","s" FROM rows WHERE "x" > ?1 AND "s" IS NULL".
 * An IN list is used for pruning only (its size is known at xFilter).
 * An equality with another table's column (a join) is taken once, as the
 * lookup term KCOL:ARG: the rows the rest of the plan keeps are indexed
 * by that column once per statement (a lookup store), and each xFilter
 * looks its value up there.  With pushdown off (LAKE_QUERY_NO_PUSHDOWN)
 * every column is read and no term is taken. */
static int xBestIndex(sqlite3_vtab *v, sqlite3_index_info *info) {
    queryTable *t = (queryTable *)v;
    const segmentSchema *cols = t->cols;
    int all = t->ctx->no_pushdown;
    /* the costs are in rows: the version this statement reads */
    int rc = all ? SQLITE_OK : pin(t);
    if (rc != SQLITE_OK) return rc;
    int lookup = -1;
    sqlite3_str *plan = sqlite3_str_new(NULL), *sel = sqlite3_str_new(NULL), *terms = sqlite3_str_new(NULL),
                *where = sqlite3_str_new(NULL);
    int nsel = 0, narg = 0, nterm = 0, nwhere = 0, nprune = 0;
    for (int i = 0; i < cols->ncols; i++) {
        if (!all && !(info->colUsed & ((sqlite3_uint64)1 << (i < 63 ? i : 63)))) continue;
        sqlite3_str_appendf(plan, "%s%d", nsel ? " " : "", i);
        sqlite3_str_appendf(sel, "%s\"%w\"", nsel++ ? ", " : "", cols->cols[i].name);
    }

    static const struct { unsigned char op; pruneOp term; } ops[] = {
        {SQLITE_INDEX_CONSTRAINT_EQ, PRUNE_EQ},     {SQLITE_INDEX_CONSTRAINT_LT, PRUNE_LT},
        {SQLITE_INDEX_CONSTRAINT_LE, PRUNE_LE},     {SQLITE_INDEX_CONSTRAINT_GT, PRUNE_GT},
        {SQLITE_INDEX_CONSTRAINT_GE, PRUNE_GE},     {SQLITE_INDEX_CONSTRAINT_ISNULL, PRUNE_ISNULL},
        {SQLITE_INDEX_CONSTRAINT_ISNOTNULL, PRUNE_NOTNULL},
    };
    for (int i = 0; i < info->nConstraint && !all; i++) {
        const struct sqlite3_index_constraint *k = &info->aConstraint[i];
        if (k->usable && (k->op == SQLITE_INDEX_CONSTRAINT_LIMIT || k->op == SQLITE_INDEX_CONSTRAINT_OFFSET)) {
            /* how far fetching ahead may go; SQLite still applies them */
            info->aConstraintUsage[i].argvIndex = ++narg;
            sqlite3_str_appendf(terms, "%s%c0:%d", nterm++ ? " " : "",
                                k->op == SQLITE_INDEX_CONSTRAINT_LIMIT ? 'L' : 'O', narg);
            continue;
        }
        if (!k->usable || k->iColumn < 0 || k->iColumn >= cols->ncols) continue;
        pruneOp op = 0;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            if (ops[o].op == k->op) op = ops[o].term;
        if (!op) continue;
        const char *name = cols->cols[k->iColumn].name;
        if (op == PRUNE_ISNULL || op == PRUNE_NOTNULL) {
            sqlite3_str_appendf(terms, "%s%c%d:0", nterm++ ? " " : "", op, k->iColumn);
            sqlite3_str_appendf(where, " %s \"%w\" %s", nwhere++ ? "AND" : "WHERE", name, pruneOpSql(op));
            nprune++;
            continue;
        }
        const char *coll = sqlite3_vtab_collation(info, i);
        if (coll && sqlite3_stricmp(coll, "BINARY") != 0) continue;
        /* an IN list all at once; otherwise only constants: another
         * table's column would make SQLite run one scan per value */
        sqlite3_value *rhs = NULL;
        if (op == PRUNE_EQ && sqlite3_vtab_in(info, i, -1)) {
            sqlite3_vtab_in(info, i, 1);
            op = PRUNE_IN;
        } else if (sqlite3_vtab_rhs_value(info, i, &rhs) != SQLITE_OK) {
            /* (a table of a few rows is read faster than indexed) */
            if (op != PRUNE_EQ || lookup >= 0 || t->rows <= LOOKUP_MIN_ROWS) continue;
            /* a join's equality: one per plan, looked up in a store */
            lookup = k->iColumn;
            info->aConstraintUsage[i].argvIndex = ++narg;
            info->aConstraintUsage[i].omit = 0; /* SQLite checks again */
            sqlite3_str_appendf(terms, "%sK%d:%d", nterm++ ? " " : "", k->iColumn, narg);
            continue;
        }
        info->aConstraintUsage[i].argvIndex = ++narg;
        info->aConstraintUsage[i].omit = 0; /* SQLite checks again */
        sqlite3_str_appendf(terms, "%s%c%d:%d", nterm++ ? " " : "", op, k->iColumn, narg);
        nprune++;
        if (op != PRUNE_IN)
            sqlite3_str_appendf(where, " %s \"%w\" %s ?%d", nwhere++ ? "AND" : "WHERE", name, pruneOpSql(op), narg);
    }
    /* a term may rule out row ranges of a segment (SEGMENT_RANGES): the
     * rowids read are bound per span (openSegment) */
    if (nprune) sqlite3_str_appendf(where, " %s " SPAN_SQL, nwhere++ ? "AND" : "WHERE");
    char *list = sqlite3_str_finish(sel), *termList = sqlite3_str_finish(terms), *cond = sqlite3_str_finish(where);
    /* the segment's rowid first: the outer rowid (see xRowid) */
    sqlite3_str_appendf(plan, "\n%s\nSELECT rowid%s%s FROM rows%s", termList ? termList : "", nsel ? ", " : "",
                        list ? list : "", cond ? cond : "");
    /* for --explain, which finds it in SQLite's query plan */
    if (lookup >= 0)
        sqlite3_str_appendf(plan, " /* " QUERY_LOOKUP_MARK "%s.%s looked up by %s */", t->ns, t->name, cols->cols[lookup].name);
    sqlite3_free(list);
    sqlite3_free(termList);
    sqlite3_free(cond);
    char *idx = sqlite3_str_finish(plan);
    if (!idx) return SQLITE_NOMEM;
    info->idxStr = idx;
    info->needToFreeIdxStr = 1;
    /* a term may prune whole segments, and saves the rows it rejects
     * crossing over, so each lowers the cost; a lookup reads a few rows
     * by an index search, plus a share of its store's build (below) */
    double n = all ? 1e6 : (double)(t->rows > 0 ? t->rows : 1);
    int plain = nterm - (lookup >= 0);
    if (lookup >= 0) {
        n = n / (1 + 9 * plain) + 1; /* what the constant terms keep is indexed */
        double found = n < 10 ? n : 10, depth = 1;
        for (double x = n; x > 1; x /= 2) depth++; /* the index's depth, in binary steps */
        /* and a share of the store's build (n rows sorted), which grows
         * faster than the rows: so SQLite builds on the smaller side of
         * a join, and looks the larger one's rows up there */
        info->estimatedCost = 2 * depth + found + n * depth / 64;
        info->estimatedRows = (sqlite3_int64)found;
    } else {
        info->estimatedCost = 10 + n / (1 + plain);
        info->estimatedRows = (sqlite3_int64)(n / (1 + 9 * plain)) + 1;
    }
    return SQLITE_OK;
}

static int xOpen(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
    (void)v;
    queryCursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->cur = -1;
    c->limit = -1;
    c->lookup_col = -1;
    *out = &c->base;
    return SQLITE_OK;
}

static void closeOpen(queryTable *t, openSegment *o) {
    sqlite3_finalize(o->st);
    cJSON_Delete(o->ranges);
    free(o->spans);
    segmentReaderClose(o->rd);
    if (o->sha[0]) segcacheRelease(t->ctx->segs, o->sha);
    memset(o, 0, sizeof *o);
}

/* Done with the segment being read: it stays open for the next scan
 * while fewer than KEEP_OPEN are. */
static void leaveSegment(queryTable *t, queryCursor *c) {
    if (c->cur < 0) return;
    openSegment *o = &c->open[c->cur];
    if (c->nopen <= KEEP_OPEN && o->st) {
        sqlite3_reset(o->st);
    } else {
        closeOpen(t, o);
        c->nopen--;
    }
    c->cur = -1;
}

/* Close every open segment. */
static void closeSegments(queryTable *t, queryCursor *c) {
    c->cur = -1;
    for (int i = 0; c->nopen > 0 && i < c->nslots; i++)
        if (c->open[i].rd) {
            closeOpen(t, &c->open[i]);
            c->nopen--;
        }
    free(c->open);
    c->open = NULL;
    c->nopen = c->nslots = 0;
}

static void freePlan(queryCursor *c) {
    sqlite3_free(c->map);
    c->map = NULL;
    for (int i = 0; i < c->nargs; i++) sqlite3_value_free(c->args[i]);
    sqlite3_free(c->args);
    c->args = NULL;
    c->nargs = 0;
    pruneTermsFree(c->terms, c->nterms);
    c->terms = NULL;
    c->nterms = 0;
    prefetchStop(c->pf);
    c->pf = NULL;
    free(c->keep);
    c->keep = NULL;
    c->nkeep = c->k = 0;
    c->limit = -1;
    c->offset = 0;
    c->lookup_col = -1;
    c->looking = 0;
    c->sql = c->plan = NULL;
}

/* Done with the lookup statement (a new plan, or the cursor closes). */
static void closeLookup(queryCursor *c) {
    sqlite3_finalize(c->lookup);
    c->lookup = NULL;
    c->store = NULL;
}

static int xClose(sqlite3_vtab_cursor *cur) {
    closeLookup((queryCursor *)cur);
    free(((queryCursor *)cur)->probe_buf);
    closeSegments((queryTable *)cur->pVtab, (queryCursor *)cur);
    freePlan((queryCursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Bind the plan's arguments to the statement of an open segment. */
static int bindArgs(queryTable *t, queryCursor *c, sqlite3_stmt *st) {
    int n = sqlite3_bind_parameter_count(st);
    for (int i = 0; i < c->nargs && i < n; i++)
        if (c->args[i] && sqlite3_bind_value(st, i + 1, c->args[i]) != SQLITE_OK)
            return failf(t, LAKE_EFAIL, "a segment cannot be read");
    return SQLITE_OK;
}

/* Bind the span being read of an open segment (all rowids when its
 * ranges were not pruned). */
static void bindSpan(openSegment *o) {
    if (!o->lo || !o->hi || o->span >= o->nspans) return;
    sqlite3_bind_int64(o->st, o->lo, o->spans ? o->spans[o->span].first : INT64_MIN);
    sqlite3_bind_int64(o->st, o->hi, o->spans ? o->spans[o->span].last : INT64_MAX);
}

/* The spans of rowids the scan reads of open segment i: those of the row
 * ranges its terms cannot rule out, or all when the file has no ranges
 * (or the plan no span parameters). */
static int chooseSpans(queryTable *t, queryCursor *c, openSegment *o, int i) {
    free(o->spans);
    o->spans = NULL;
    o->span = 0;
    o->nspans = 1;
    if (o->lo && o->ranges) {
        int kept;
        if (pruneRanges(o->ranges, t->cols, c->terms, c->nterms, &o->spans, &o->nspans, &kept)) return SQLITE_NOMEM;
        if (traceEnabled())
            traceLine("query", "scan %s.%s segment %d: %d of %d row ranges kept, %d span%s", t->ns, t->name, i, kept,
                      cJSON_GetArraySize(o->ranges), o->nspans, o->nspans == 1 ? "" : "s");
    }
    bindSpan(o);
    return SQLITE_OK;
}

/* Make segment i of the pinned version the one being read: open already
 * (from an earlier scan of this cursor) or opened now. */
static int enterSegment(queryTable *t, queryCursor *c, int i) {
    openSegment *o = &c->open[i];
    c->cur = i;
    int rc;
    if (o->st) return (rc = bindArgs(t, c, o->st)) != SQLITE_OK ? rc : chooseSpans(t, c, o, i);
    fileValue fv;
    if (!segmentRecordFile(segAt(t, i), &fv)) return failf(t, LAKE_EDATA, "a malformed segment in the registration");
    char *path = NULL;
    lakeError *err = &t->ctx->err;
    if (segcacheGet(t->ctx->segs, t->ctx->stage, &fv, &path, err)) return fail(t, err);
    c->nopen++;
    snprintf(o->sha, sizeof o->sha, "%s", fv.sha256);
    rc = segmentReaderOpen(path, t->schema, t->segv[i], &o->rd, err);
    free(path);
    if (rc) return fail(t, err);
    if (sqlite3_prepare_v2(segmentReaderDb(o->rd), c->sql, -1, &o->st, NULL) != SQLITE_OK)
        return failf(t, LAKE_EDATA, "a segment cannot be read");
    o->lo = sqlite3_bind_parameter_index(o->st, ":lake_lo");
    o->hi = sqlite3_bind_parameter_index(o->st, ":lake_hi");
    if (o->lo && segmentRangesRead(segmentReaderDb(o->rd), "main", t->segv[i], &o->ranges)) return SQLITE_NOMEM;
    if ((rc = bindArgs(t, c, o->st)) != SQLITE_OK) return rc;
    return chooseSpans(t, c, o, i);
}

/* Move to the next row, across the kept segments. */
static int advance(queryTable *t, queryCursor *c) {
    if (c->looking && c->store->mem) {
        c->row = lookupMemNext(c->store->mem, &c->probe, c->row);
        c->eof = c->row == LOOKUP_NONE;
        return SQLITE_OK;
    }
    if (c->looking) {
        int s = sqlite3_step(c->lookup);
        if (s == SQLITE_ROW) return SQLITE_OK;
        if (s != SQLITE_DONE) return failf(t, LAKE_EFAIL, "a lookup failed");
        c->eof = 1;
        return SQLITE_OK;
    }
    for (;;) {
        if (c->cur >= 0) {
            openSegment *o = &c->open[c->cur];
            int s = o->span < o->nspans ? sqlite3_step(o->st) : SQLITE_DONE;
            if (s == SQLITE_ROW) return SQLITE_OK;
            if (s != SQLITE_DONE) return failf(t, LAKE_EDATA, "a segment cannot be read");
            if (++o->span < o->nspans) { /* the next span of rowids */
                sqlite3_reset(o->st);
                bindSpan(o);
                continue;
            }
            leaveSegment(t, c);
            c->k++;
        }
        if (c->k >= c->nkeep) {
            c->eof = 1;
            return SQLITE_OK;
        }
        prefetchAt(c->pf, c->k);
        int rc = enterSegment(t, c, c->keep[c->k]);
        if (rc != SQLITE_OK) return rc;
    }
}

/* Take the plan xBestIndex wrote (see there) and the values of its
 * arguments: plain ones are bound to each segment's statement, an IN
 * list is read all at once. */
static int takePlan(queryTable *t, queryCursor *c, const char *idxStr, int argc, sqlite3_value **argv) {
    freePlan(c);
    const char *nl = idxStr ? strchr(idxStr, '\n') : NULL, *nl2 = nl ? strchr(nl + 1, '\n') : NULL;
    if (!nl2) return failf(t, LAKE_EFAIL, "no scan plan");
    if (!(c->map = sqlite3_malloc64(sizeof *c->map * (size_t)(t->cols->ncols ? t->cols->ncols : 1))))
        return SQLITE_NOMEM;
    for (int i = 0; i < t->cols->ncols; i++) c->map[i] = -1;
    int j = 0;
    for (const char *p = idxStr; p < nl;) {
        char *end;
        long col = strtol(p, &end, 10);
        if (end == p || col < 0 || col >= t->cols->ncols) return failf(t, LAKE_EFAIL, "a bad scan plan");
        c->map[col] = ++j; /* after the rowid */
        p = end + (*end == ' ');
    }
    c->plan = idxStr;
    c->sql = nl2 + 1;
    if (argc > 0) {
        if (!(c->args = sqlite3_malloc64(sizeof *c->args * (size_t)argc))) return SQLITE_NOMEM;
        memset(c->args, 0, sizeof *c->args * (size_t)argc);
        c->nargs = argc;
    }
    int most = (int)(nl2 - nl) / 4 + 1; /* a term takes at least 4 bytes */
    if (!(c->terms = malloc(sizeof *c->terms * (size_t)most))) return SQLITE_NOMEM;
    for (const char *p = nl + 1; p < nl2;) {
        pruneTerm *term = &c->terms[c->nterms];
        char *end;
        memset(term, 0, sizeof *term);
        term->op = (pruneOp)*p;
        term->col = (int)strtol(p + 1, &end, 10);
        int arg = *end == ':' ? (int)strtol(end + 1, &end, 10) : -1;
        if (term->col < 0 || term->col >= t->cols->ncols || arg < 0 || arg > argc || c->nterms >= most)
            return failf(t, LAKE_EFAIL, "a bad scan plan");
        p = end + (*end == ' ');
        if (term->op == 'K') { /* the lookup column: its value is looked up, not bound */
            if (!arg) return failf(t, LAKE_EFAIL, "a bad scan plan");
            c->lookup_col = term->col;
            c->lookup_arg = arg;
            continue;
        }
        if ((term->op == 'L' || term->op == 'O') && arg) {
            int64_t n = sqlite3_value_int64(argv[arg - 1]);
            if (term->op == 'L') c->limit = n < 0 ? -1 : n;
            else c->offset = n < 0 ? 0 : n;
            continue;
        }
        c->nterms++;
        if (!arg) continue;
        sqlite3_value *in = argv[arg - 1], *v;
        if (term->op == PRUNE_IN) {
            int rc;
            for (rc = sqlite3_vtab_in_first(in, &v); rc == SQLITE_OK && v; rc = sqlite3_vtab_in_next(in, &v)) {
                sqlite3_value **more = realloc(term->vals, sizeof *more * (size_t)(term->nvals + 1));
                if (!more) return SQLITE_NOMEM;
                term->vals = more;
                if (!(term->vals[term->nvals] = sqlite3_value_dup(v))) return SQLITE_NOMEM;
                term->nvals++;
            }
            if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
            continue;
        }
        /* one copy bound to the segments' statements, one for pruning
         * (which may settle its numeric type) */
        if (!(term->vals = malloc(sizeof *term->vals)) || !(term->vals[0] = sqlite3_value_dup(in)) ||
            !(c->args[arg - 1] = sqlite3_value_dup(in)))
            return SQLITE_NOMEM;
        term->nvals = 1;
    }
    return SQLITE_OK;
}

/* On an object store (a round trip per fetch), fetch the kept segments
 * ahead of the scan, several at once; with a LIMIT, only as many as can
 * hold LIMIT + OFFSET rows.  A failure to start leaves the scan to fetch
 * them one by one. */
static int fetchAhead(queryTable *t, queryCursor *c) {
    if (c->nkeep < 2 || !stageCanPresign(t->ctx->stage)) return SQLITE_OK;
    fileValue *fv = calloc((size_t)c->nkeep, sizeof *fv);
    if (!fv) return SQLITE_NOMEM;
    int n = 0;
    int64_t before = 0, rows; /* rows in the segments before this one */
    for (; n < c->nkeep && (c->limit < 0 || before < c->limit + c->offset); n++) {
        const cJSON *g = segAt(t, c->keep[n]);
        if (!segmentRecordFile(g, &fv[n]) || !jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows))
            break; /* the scan meets it and says what is wrong */
        before += rows;
    }
    lakeError err = {0};
    if (n > 1 && prefetchStart(t->ctx->segs, t->ctx->stage, fv, n, &c->pf, &err))
        traceLine("query", "no fetching ahead: %s", err.msg);
    free(fv);
    return SQLITE_OK;
}

/* Fetch segment i of the pinned version (fv, its object) and open it
 * (segmentReaderOpen's checks) into *rd.  Once *path is set (free) the
 * segment is pinned in the cache: segcacheRelease(fv->sha256) when done,
 * whatever the answer. */
static int fetchOpen(queryTable *t, int i, fileValue *fv, char **path, segmentReader **rd) {
    *path = NULL;
    *rd = NULL;
    if (!segmentRecordFile(segAt(t, i), fv)) return failf(t, LAKE_EDATA, "a malformed segment in the registration");
    lakeError *err = &t->ctx->err;
    if (segcacheGet(t->ctx->segs, t->ctx->stage, fv, path, err)) {
        *path = NULL;
        return fail(t, err);
    }
    return segmentReaderOpen(*path, t->schema, t->segv[i], rd, err) ? fail(t, err) : SQLITE_OK;
}

/* For --explain: the row ranges of kept segment i that the plan keeps
 * (the segment is fetched and opened to read them). */
static int explainRanges(queryTable *t, queryCursor *c, int i, sqlite3_str *ex) {
    fileValue fv;
    char *path;
    segmentReader *rd;
    int rc = fetchOpen(t, i, &fv, &path, &rd);
    if (!path) return rc;
    cJSON *ranges = NULL;
    pruneSpan *spans = NULL;
    int nspans = 0, kept = 0;
    if (rc == SQLITE_OK && (segmentRangesRead(segmentReaderDb(rd), "main", t->segv[i], &ranges) ||
                            (ranges && pruneRanges(ranges, t->cols, c->terms, c->nterms, &spans, &nspans, &kept))))
        rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK && !ranges) sqlite3_str_appendall(ex, ", no row ranges (read whole)");
    if (rc == SQLITE_OK && ranges) {
        int n = cJSON_GetArraySize(ranges);
        sqlite3_str_appendf(ex, ", row ranges: %d of %d kept", kept, n);
        for (int k = 0; k < nspans && k < 4; k++)
            sqlite3_str_appendf(ex, "%s%lld-%lld", k ? ", " : " (rowids ", (long long)spans[k].first,
                                (long long)spans[k].last);
        if (nspans) sqlite3_str_appendf(ex, "%s)", nspans > 4 ? ", …" : "");
    }
    free(spans);
    cJSON_Delete(ranges);
    segmentReaderClose(rd);
    free(path);
    segcacheRelease(t->ctx->segs, fv.sha256);
    return rc;
}

typedef struct indexedArg {
    const regIndex *ix;
    int seg;
    const segmentSchema *cols;
} indexedArg;

static int indexedStats(void *arg, int col, segmentColumnStats *out) {
    const indexedArg *a = arg;
    return regIndexStats(a->ix, a->seg, a->cols->cols[col].id, out);
}

/* pruneSegment of segment i by the pinned version's index. */
static int pruneIndexed(queryTable *t, int i, const queryCursor *c, char *why, size_t n) {
    indexedArg arg = {t->ix, i, t->cols};
    return pruneWith(regIndexRows(t->ix, i), indexedStats, &arg, t->cols, c->terms, c->nterms, why, n);
}

/* Choose the segments the scan reads; under LAKE_TRACE, or for
 * --explain, say which were pruned and why (and, when a term may rule
 * out row ranges, which ranges of the kept ones are read). */
static int choose(queryTable *t, queryCursor *c) {
    queryContext *ctx = t->ctx;
    if (t->nseg > 0 && !(c->keep = malloc(sizeof *c->keep * (size_t)t->nseg))) return SQLITE_NOMEM;
    int trace = traceEnabled();
    int64_t version = 0;
    jsonWhole(cJSON_GetObjectItemCaseSensitive(t->pinned, "version"), 0, &version);
    sqlite3_str *ex = ctx->explain ? sqlite3_str_new(NULL) : NULL;
    for (int i = 0; i < t->nseg; i++) {
        char why[256];
        /* (the record itself: only to show it, or when there is no index) */
        const cJSON *g = trace || ex || !t->ix ? segAt(t, i) : NULL;
        const char *loc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "location"));
        int64_t rows = -1;
        jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows);
        if (!ctx->no_pushdown && (t->ix ? pruneIndexed(t, i, c, trace || ex ? why : NULL, sizeof why)
                                        : pruneSegment(g, t->cols, c->terms, c->nterms, trace || ex ? why : NULL,
                                                       sizeof why))) {
            if (trace) traceLine("query", "prune %s.%s v%lld segment %d %s: %s", t->ns, t->name, (long long)version, i,
                                 loc ? loc : "?", why);
            if (ex) sqlite3_str_appendf(ex, "  pruned %5d  %s  %s\n", i, loc ? loc : "?", why);
            continue;
        }
        if (ex) {
            sqlite3_str_appendf(ex, "  kept   %5d  %s  %lld row%s", i, loc ? loc : "?", (long long)rows,
                                rows == 1 ? "" : "s");
            int rc = strstr(c->sql, ":lake_lo") ? explainRanges(t, c, i, ex) : SQLITE_OK;
            sqlite3_str_appendall(ex, "\n");
            if (rc != SQLITE_OK) {
                sqlite3_free(sqlite3_str_finish(ex));
                return rc;
            }
        }
        c->keep[c->nkeep++] = i;
    }
    if (trace)
        traceLine("query", "scan %s.%s v%lld: %d of %d segments kept%s", t->ns, t->name, (long long)version, c->nkeep,
                  t->nseg, ctx->no_pushdown ? " (pushdown off)" : "");
    if (ex) {
        char *lines = sqlite3_str_finish(ex);
        sqlite3_str_appendf(ctx->explain, "%s.%s version %lld: %d segment%s, %d kept, %d pruned%s\n%s", t->ns,
                            t->name, (long long)version, t->nseg, t->nseg == 1 ? "" : "s", c->nkeep, t->nseg - c->nkeep,
                            ctx->no_pushdown ? " (pushdown off)" : "", lines ? lines : "");
        sqlite3_free(lines);
        c->nkeep = 0; /* --explain reads nothing */
    }
    if (ctx->collect == t) { /* queryKeptSegments: note them, read nothing */
        if (!t->marked && t->nseg > 0 && !(t->marked = calloc((size_t)t->nseg, 1))) return SQLITE_NOMEM;
        /* the terms of the one scan, for row ranges; of several (an OR
         * scanned term by term), none */
        pruneTermsFree(t->cterms, t->ncterms);
        t->cterms = NULL;
        t->ncterms = 0;
        if (++t->cscans == 1 && strstr(c->sql, ":lake_lo")) {
            if (pruneTermsCopy(c->terms, c->nterms, &t->cterms)) return SQLITE_NOMEM;
            t->ncterms = c->nterms;
        }
        for (int k = 0; k < c->nkeep; k++) t->marked[c->keep[k]] = 1;
        c->nkeep = 0;
        return SQLITE_OK;
    }
    return fetchAhead(t, c);
}

/* The columns a plan reads (after the segment's rowid). */
static int planColumns(const queryTable *t, const queryCursor *c) {
    int n = 0;
    for (int i = 0; i < t->cols->ncols; i++)
        if (c->map[i] > n) n = c->map[i];
    return n;
}

/* What tells one store of a table from another in a statement: the plan
 * and the values of its constant terms (IN lists included). */
static char *storeKey(const queryCursor *c, const char *idxStr) {
    sqlite3_str *k = sqlite3_str_new(NULL);
    sqlite3_str_appendall(k, idxStr);
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i]) sqlite3_str_appendf(k, "\n%d:%d:%s", i, sqlite3_value_type(c->args[i]),
                                            (const char *)sqlite3_value_text(c->args[i]));
    for (int i = 0; i < c->nterms; i++)
        for (int j = 0; c->terms[i].op == PRUNE_IN && j < c->terms[i].nvals; j++)
            sqlite3_str_appendf(k, "\nI%d:%d:%s", i, sqlite3_value_type(c->terms[i].vals[j]),
                                (const char *)sqlite3_value_text(c->terms[i].vals[j]));
    return sqlite3_str_finish(k);
}

/* Copy segment i's rows that the plan keeps into the store db: the
 * segment is fetched and checked as a scan's is (segmentReaderOpen), then
 * attached, read-only, and read by insSql with the plan's arguments. */
static int copySegment(queryTable *t, queryCursor *c, sqlite3 *db, const char *insSql, int i, int64_t *rows) {
    fileValue fv;
    char *path;
    segmentReader *rd;
    int rc = fetchOpen(t, i, &fv, &path, &rd);
    if (!path) return rc;
    char *view = NULL;
    if (rc == SQLITE_OK && segmentReaderViewSql(rd, "s", &view)) rc = SQLITE_NOMEM;
    segmentReaderClose(rd);
    char *attach = rc == SQLITE_OK ? sqlite3_mprintf("ATTACH 'file:%q?mode=ro&immutable=1' AS s", path) : NULL;
    free(path);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK && (!attach || sqlite3_exec(db, attach, NULL, NULL, NULL) != SQLITE_OK ||
                            (view && sqlite3_exec(db, view, NULL, NULL, NULL) != SQLITE_OK)))
        rc = failf(t, LAKE_EDATA, "a segment cannot be read");
    sqlite3_free(attach);
    if (rc == SQLITE_OK) {
        openSegment o = {0}; /* its spans of rowids, as a scan's */
        if (sqlite3_prepare_v2(db, insSql, -1, &st, NULL) != SQLITE_OK) rc = failf(t, LAKE_EDATA, "a segment cannot be read");
        else {
            for (int a = 0; a < c->nargs; a++)
                if (c->args[a]) sqlite3_bind_value(st, a + 1, c->args[a]);
            sqlite3_bind_int(st, c->nargs + 1, i); /* after the plan's own */
            o.st = st;
            o.lo = sqlite3_bind_parameter_index(st, ":lake_lo");
            o.hi = sqlite3_bind_parameter_index(st, ":lake_hi");
            if (o.lo && segmentRangesRead(db, "s", t->segv[i], &o.ranges)) rc = SQLITE_NOMEM;
            else rc = chooseSpans(t, c, &o, i);
        }
        for (; rc == SQLITE_OK && o.span < o.nspans; o.span++) {
            sqlite3_reset(st);
            bindSpan(&o);
            if (sqlite3_step(st) != SQLITE_DONE) rc = failf(t, LAKE_EDATA, "a segment cannot be read");
            else *rows += sqlite3_changes64(db);
        }
        cJSON_Delete(o.ranges);
        free(o.spans);
        sqlite3_finalize(st);
        if (view) sqlite3_exec(db, "DROP VIEW temp.rows", NULL, NULL, NULL);
        sqlite3_exec(db, "DETACH s", NULL, NULL, NULL);
    }
    sqlite3_free(view);
    segcacheRelease(t->ctx->segs, fv.sha256);
    return rc;
}

/* Done with a scan run to fill a store: its segments closed. */
static void endScan(queryCursor *c, queryTable *t) {
    closeSegments(t, c);
    free(c->keep);
    c->keep = NULL;
    c->nkeep = c->k = 0;
    prefetchStop(c->pf);
    c->pf = NULL;
    c->eof = 0;
}

/* Copy the rows the plan keeps into memory, hashed by the lookup
 * column's key: SQLITE_OK with s->mem set, or with s->mem NULL when they
 * would take more than LOOKUP_CACHE_KIB (the scan is then abandoned). */
static int memBuild(queryTable *t, queryCursor *c, lookupStore *s) {
    lookupMem *m = lookupMemNew(planColumns(t, c), c->map[c->lookup_col] - 1, (size_t)LOOKUP_CACHE_KIB * 1024);
    if (!m) return SQLITE_NOMEM;
    int rc = choose(t, c), full = 0;
    if (rc == SQLITE_OK) rc = advance(t, c);
    while (rc == SQLITE_OK && !c->eof) {
        sqlite3_stmt *st = c->open[c->cur].st;
        int add = lookupMemAdd(m, ((int64_t)c->cur << 32) | sqlite3_column_int64(st, 0), st, 1);
        if (add) {
            rc = add < 0 ? SQLITE_NOMEM : SQLITE_OK;
            full = 1;
            break;
        }
        rc = advance(t, c);
    }
    endScan(c, t);
    if (rc == SQLITE_OK && !full && lookupMemIndex(m) != 0) rc = SQLITE_NOMEM;
    if (rc != SQLITE_OK || full) {
        lookupMemFree(m);
        m = NULL;
    }
    s->mem = m;
    s->rows = m ? lookupMemRows(m) : 0;
    return rc;
}

/* Copy the rows the plan keeps into a temporary database, indexed by the
 * lookup column's key: s->db.  The columns are stored as read, without
 * affinity. */
static int dbBuild(queryTable *t, queryCursor *c, lookupStore *s) {
    int ncol = planColumns(t, c);
    /* each kept segment's rows copied by SQLite itself: the plan's
     * statement (unqualified "rows" is the attached segment's) inside an
     * INSERT, with the segment's index (the parameter after the plan's)
     * beside the segment's rowid */
    sqlite3_str *ddl = sqlite3_str_new(NULL), *ins = sqlite3_str_new(NULL), *idx = sqlite3_str_new(NULL);
    sqlite3_str_appendall(ddl, "CREATE TABLE r(seg INTEGER, rid INTEGER");
    for (int j = 1; j <= ncol; j++) sqlite3_str_appendf(ddl, ", c%d", j);
    sqlite3_str_appendall(ddl, ")");
    sqlite3_str_appendf(ins, "INSERT INTO r SELECT ?%d, * FROM (%s)", c->nargs + 1, c->sql);
    /* covering: a lookup reads the index alone */
    sqlite3_str_appendf(idx, "CREATE INDEX k ON r(lake_key(c%d), seg, rid", c->map[c->lookup_col]);
    for (int j = 1; j <= ncol; j++) sqlite3_str_appendf(idx, ", c%d", j);
    sqlite3_str_appendall(idx, ")");
    char *ddlSql = sqlite3_str_finish(ddl), *insSql = sqlite3_str_finish(ins), *idxSql = sqlite3_str_finish(idx);
    int rc = ddlSql && insSql && idxSql ? SQLITE_OK : SQLITE_NOMEM;
    /* a temporary database: private, its file removed when closed; beyond
     * its page cache it spills there instead of growing the heap */
    if (rc == SQLITE_OK)
        rc = sqlite3_open_v2("", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(s->db, "lake_key", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                     NULL, lookupKeyFunction, NULL, NULL);
    char pragmas[128];
    /* no transaction around the copies: a segment is attached and
     * detached outside one; without a journal each costs nothing */
    snprintf(pragmas, sizeof pragmas, "PRAGMA cache_size = -%d; PRAGMA journal_mode = OFF", LOOKUP_CACHE_KIB);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, pragmas, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, ddlSql, NULL, NULL, NULL);
    /* the rows, then the index over them (built sorted, at once) */
    if (rc == SQLITE_OK) rc = choose(t, c);
    for (c->k = 0; rc == SQLITE_OK && c->k < c->nkeep; c->k++) {
        prefetchAt(c->pf, c->k);
        rc = copySegment(t, c, s->db, insSql, c->keep[c->k], &s->rows);
    }
    endScan(c, t);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, idxSql, NULL, NULL, NULL);
    /* one read transaction for every lookup, not one each */
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "BEGIN; SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
    sqlite3_free(ddlSql);
    sqlite3_free(insSql);
    sqlite3_free(idxSql);
    return rc;
}

/* A new store of the rows the plan keeps, in memory when they fit. */
static int storeBuild(queryTable *t, queryCursor *c, char *key, lookupStore **out) {
    lookupStore *s = calloc(1, sizeof *s);
    if (!s) {
        sqlite3_free(key);
        return SQLITE_NOMEM;
    }
    s->key = strdup(key);
    sqlite3_free(key);
    int rc = s->key ? memBuild(t, c, s) : SQLITE_NOMEM;
    if (rc == SQLITE_OK && !s->mem) rc = dbBuild(t, c, s);
    if (rc != SQLITE_OK) {
        lookupMemFree(s->mem);
        sqlite3_close(s->db);
        free(s->key);
        free(s);
        if (t->base.zErrMsg) return rc; /* the scan said what failed */
        return failf(t, LAKE_EFAIL, rc == SQLITE_NOMEM ? "out of memory" : "a lookup index cannot be built");
    }
    s->next = t->stores;
    t->stores = s;
    *out = s;
    return SQLITE_OK;
}

/* Search the store for value: the cursor's rows are what it finds. */
static int lookupValue(queryTable *t, queryCursor *c, sqlite3_value *value) {
    c->looking = 1;
    c->eof = 0; /* (a build has run the scan to its end) */
    if (c->store->mem) {
        int has = lookupKeyOf(value, &c->probe);
        if (has < 0) return SQLITE_NOMEM;
        /* the key's bytes kept: value may change before the last xNext */
        if (has && c->probe.type != SQLITE_FLOAT) {
            if ((size_t)c->probe.n > c->probe_cap) {
                size_t cap = (size_t)c->probe.n * 2;
                char *b = realloc(c->probe_buf, cap);
                if (!b) return SQLITE_NOMEM;
                c->probe_buf = b;
                c->probe_cap = cap;
            }
            if (c->probe.n) memcpy(c->probe_buf, c->probe.bytes, (size_t)c->probe.n);
            c->probe.bytes = c->probe_buf;
        }
        c->row = has ? lookupMemFirst(c->store->mem, &c->probe) : LOOKUP_NONE;
        c->eof = c->row == LOOKUP_NONE;
        return SQLITE_OK;
    }
    sqlite3_reset(c->lookup);
    if (sqlite3_bind_value(c->lookup, 1, value) != SQLITE_OK) return failf(t, LAKE_EFAIL, "a lookup failed");
    return advance(t, c);
}

/* A scan by the lookup column: the store of this plan (built on the
 * first), searched for value. */
static int lookupFilter(queryTable *t, queryCursor *c, const char *idxStr, sqlite3_value *value) {
    char *key = storeKey(c, idxStr);
    if (!key) return SQLITE_NOMEM;
    lookupStore *s = t->stores;
    while (s && strcmp(s->key, key) != 0) s = s->next;
    if (s) {
        sqlite3_free(key);
    } else {
        int rc = storeBuild(t, c, key, &s);
        if (rc != SQLITE_OK) return rc;
        traceLine("query", "lookup %s.%s by %s: a temporary index of %lld rows built %s", t->ns, t->name,
                  t->cols->cols[c->lookup_col].name, (long long)s->rows, s->mem ? "in memory" : "on disk");
    }
    if (c->store != s) {
        closeLookup(c);
        if (s->db) {
            int ncol = planColumns(t, c);
            sqlite3_str *q = sqlite3_str_new(NULL);
            sqlite3_str_appendall(q, "SELECT (seg << 32) | rid");
            for (int j = 1; j <= ncol; j++) sqlite3_str_appendf(q, ", c%d", j);
            sqlite3_str_appendf(q, " FROM r WHERE lake_key(c%d) = lake_key(?1)", c->map[c->lookup_col]);
            char *sql = sqlite3_str_finish(q);
            int rc = sql ? sqlite3_prepare_v2(s->db, sql, -1, &c->lookup, NULL) : SQLITE_NOMEM;
            sqlite3_free(sql);
            if (rc != SQLITE_OK) return failf(t, LAKE_EFAIL, "a lookup cannot be prepared");
        }
        c->store = s;
    }
    return lookupValue(t, c, value);
}

/* 1 when argv holds the values the plan was taken with, but for the
 * lookup's (a join's inner table, looked up once per outer row, keeps
 * its plan and its constants). */
static int sameArgs(const queryCursor *c, int argc, sqlite3_value **argv) {
    if (argc != c->nargs) return 0;
    for (int i = 0; i < c->nterms; i++)
        if (c->terms[i].op == PRUNE_IN) return 0; /* its list is not kept in args */
    for (int i = 0; i < argc; i++) {
        sqlite3_value *a = c->args[i], *b = argv[i];
        if (i == c->lookup_arg - 1 || !a) continue;
        int type = sqlite3_value_type(a);
        if (type != sqlite3_value_type(b)) return 0;
        if (type == SQLITE_INTEGER && sqlite3_value_int64(a) != sqlite3_value_int64(b)) return 0;
        if (type == SQLITE_FLOAT && sqlite3_value_double(a) != sqlite3_value_double(b)) return 0;
        if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
            const void *x = type == SQLITE_TEXT ? (const void *)sqlite3_value_text(a) : sqlite3_value_blob(a);
            const void *y = type == SQLITE_TEXT ? (const void *)sqlite3_value_text(b) : sqlite3_value_blob(b);
            int n = sqlite3_value_bytes(a);
            if (n != sqlite3_value_bytes(b) || (n && memcmp(x, y, (size_t)n) != 0)) return 0;
        }
    }
    return 1;
}

static int xFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
    (void)idxNum;
    queryTable *t = (queryTable *)cur->pVtab;
    queryCursor *c = (queryCursor *)cur;
    /* the next lookup of the same plan: only the value changes */
    if (c->looking && c->store && idxStr == c->plan && sameArgs(c, argc, argv))
        return lookupValue(t, c, argv[c->lookup_arg - 1]);
    leaveSegment(t, c);
    c->eof = 0;
    /* a new plan (SQL on each segment) closes the segments kept open */
    if (c->sql && idxStr && strcmp(c->plan, idxStr) != 0) {
        closeSegments(t, c);
        closeLookup(c);
    }
    int rc = takePlan(t, c, idxStr, argc, argv);
    if (rc == SQLITE_OK) rc = pin(t);
    if (rc != SQLITE_OK) return rc;
    if (!c->open && t->nseg > 0) {
        if (!(c->open = calloc((size_t)t->nseg, sizeof *c->open))) return SQLITE_NOMEM;
        c->nslots = t->nseg;
    }
    if (c->nslots < t->nseg) return failf(t, LAKE_EFAIL, "the pinned version changed during a scan");
    if (c->lookup_col >= 0 && !t->ctx->explain && t->ctx->collect != t)
        return lookupFilter(t, c, idxStr, argv[c->lookup_arg - 1]);
    if ((rc = choose(t, c)) != SQLITE_OK) return rc;
    return advance(t, c);
}

static int xNext(sqlite3_vtab_cursor *cur) {
    return advance((queryTable *)cur->pVtab, (queryCursor *)cur);
}

static int xEof(sqlite3_vtab_cursor *cur) { return ((queryCursor *)cur)->eof; }

/* The statement whose current row is the cursor's: the lookup, or the
 * segment being read; NULL when there is none. */
static sqlite3_stmt *rowStmt(const queryCursor *c) {
    return c->looking ? c->lookup : c->cur >= 0 ? c->open[c->cur].st : NULL;
}

static int xColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
    queryCursor *c = (queryCursor *)cur;
    const lookupMem *mem = c->looking ? c->store->mem : NULL;
    sqlite3_stmt *st = rowStmt(c);
    int j = i >= 0 && i < ((queryTable *)cur->pVtab)->cols->ncols && (st || mem) ? c->map[i] : -1;
    if (j < 0) {
        sqlite3_result_error(ctx, "lake: a column the scan plan did not read", -1);
        return SQLITE_ERROR;
    }
    if (mem) {
        lookupMemResult(mem, c->row, j - 1, ctx);
        return SQLITE_OK;
    }
    /* by type rather than sqlite3_result_value: no Mem copy, and text
     * reuses the result's buffer instead of a malloc per value; one
     * column_value (the statement's own Mem), then the cheap value_ calls
     * (text or blob before bytes) */
    sqlite3_value *v = sqlite3_column_value(st, j);
    int type = sqlite3_value_type(v);
    const void *p = type == SQLITE_TEXT ? (const void *)sqlite3_value_text(v)
                    : type == SQLITE_BLOB ? sqlite3_value_blob(v) : NULL;
    lookupResult(ctx, type, type == SQLITE_INTEGER ? sqlite3_value_int64(v) : 0,
                 type == SQLITE_FLOAT ? sqlite3_value_double(v) : 0, p, p || type == SQLITE_BLOB ? sqlite3_value_bytes(v) : 0);
    return SQLITE_OK;
}

/* A row's rowid is its segment's index in the pinned version, shifted
 * 32 bits, with the segment's own rowid: every scan of a statement gives
 * a row the same rowid (SQLite merges the scans of an OR by rowid). */
static int xRowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    queryCursor *c = (queryCursor *)cur;
    if (c->looking && c->store->mem) *rowid = lookupMemRowid(c->store->mem, c->row);
    else if (c->looking) *rowid = sqlite3_column_int64(c->lookup, 0); /* kept as the scan gave it */
    else *rowid = c->cur < 0 ? 0 : ((sqlite3_int64)c->cur << 32) | sqlite3_column_int64(c->open[c->cur].st, 0);
    return SQLITE_OK;
}

/* DELETE (argc 1) or UPDATE (argv[2..]: the new row) of the row whose
 * rowid is argv[0]: marked in the statement's rewrite (query/rewrite.h),
 * committed by xSync. */
static int changeRow(queryTable *t, int argc, sqlite3_value **argv) {
    const char *op = argc == 1 ? "delete" : "update";
    lakeError *err = &t->ctx->err;
    /* a second statement would read the rows the first changed as they
     * were: each DELETE or UPDATE commits on its own */
    if (!sqlite3_get_autocommit(t->ctx->db))
        return failf(t, LAKE_EUSAGE, "DELETE and UPDATE of a lake table run on their own, not between BEGIN and COMMIT");
    if (t->writer) return failf(t, LAKE_EUSAGE, "a statement may insert rows or change them, not both");
    sqlite3_int64 old = sqlite3_value_int64(argv[0]);
    if (argc > 1 && (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || sqlite3_value_int64(argv[1]) != old))
        return failf(t, LAKE_EUSAGE, "a row's rowid cannot be set");
    int rc = pin(t);
    if (rc != SQLITE_OK) return rc;
    if (!t->rewrite) {
        /* refused before any segment is stored */
        if (cacheMayRun(t->ctx->cache, "rewrite", t->ns, t->table, err)) return fail(t, err);
        if (rewriteOpen(t->ctx->stage, t->id, t->schema, op, t->nseg, t->ctx->tmp_dir, t->ctx->stop, &t->rewrite, err))
            return fail(t, err);
    }
    int marked = rewriteMark(t->rewrite, (int)(old >> 32), old & 0xffffffff);
    if (marked < 0) return failf(t, LAKE_EFAIL, "a row to change is none of the table's, or out of memory");
    if (argc > 1 && marked && rewriteAddRow(t->rewrite, argv + 2, argc - 2, err)) return fail(t, err);
    return SQLITE_OK;
}

static int xUpdate(sqlite3_vtab *v, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
    queryTable *t = (queryTable *)v;
    if (t->at_version >= 0 || t->at_time[0]) return failf(t, LAKE_EUSAGE, "a table read AT a version cannot be changed");
    if (argc == 1 || sqlite3_value_type(argv[0]) != SQLITE_NULL) return changeRow(t, argc, argv);
    if (t->rewrite) return failf(t, LAKE_EUSAGE, "a statement may insert rows or change them, not both");
    int rc = pinAs(t, 0);
    if (rc != SQLITE_OK) return rc;
    lakeError *err = &t->ctx->err;
    if (!t->writer) {
        segmentWriterOptions opt = {.tmp_dir = t->ctx->tmp_dir, .stop = t->ctx->stop};
        /* refused before any segment is stored */
        if (cacheMayRun(t->ctx->cache, "append", t->ns, t->table, err)) return fail(t, err);
        if (segmentWriterOpen(t->ctx->stage, t->id, t->schema, &opt, &t->writer, err)) return fail(t, err);
    }
    if (segmentWriterAddSqlRow(t->writer, argv + 2, argc - 2, err)) return fail(t, err);
    *rowid = segmentWriterRows(t->writer);
    return SQLITE_OK;
}

static int xBegin(sqlite3_vtab *v) {
    (void)v;
    return SQLITE_OK;
}

/* The statement is about to commit: upload the new segments and append
 * them as one version.  A conflict means another writer appended first;
 * appends commute, so this one goes on top of theirs. */
static int xSync(sqlite3_vtab *v) {
    queryTable *t = (queryTable *)v;
    lakeError *err = &t->ctx->err;
    if (t->rewrite) { /* DELETE, UPDATE: a conflict is the caller's to run again */
        if (segAll(t)) return failf(t, LAKE_EDATA, "a malformed segment in the registration");
        int64_t v2, expected = (int64_t)cJSON_GetObjectItemCaseSensitive(t->pinned, "version")->valuedouble;
        if (rewriteCommit(t->rewrite, t->ctx->cache, t->ctx->segs, t->ctx->stage, t->ns, t->name, t->segv, expected,
                          &v2, err)) {
            t->ctx->replan = err->status && strcmp(err->status, "conflict") == 0;
            return fail(t, err);
        }
        if (t->ctx->changed)
            t->ctx->changed(t->ctx->changed_arg, t->ns, t->name, rewriteOperation(t->rewrite), rewriteMarked(t->rewrite));
        return SQLITE_OK;
    }
    if (!t->writer || segmentWriterRows(t->writer) == 0) return SQLITE_OK;
    cJSON *segs = NULL, *files = NULL;
    int rc = SQLITE_OK;
    /* a COMMIT of an explicit transaction comes after its statements ended */
    if ((rc = pinAs(t, 0)) != SQLITE_OK) return rc;
    if (segmentWriterFinish(t->writer, &segs, &files, err)) return fail(t, err);
    if (queryStopped(t->ctx)) { /* uploaded, not appended: gc's */
        cJSON_Delete(segs);
        cJSON_Delete(files);
        return failf(t, LAKE_EFAIL, "interrupted; nothing committed");
    }
    int64_t expected = (int64_t)cJSON_GetObjectItemCaseSensitive(t->pinned, "version")->valuedouble, v2;
    if (cacheAppendCommuting(t->ctx->cache, t->ns, t->name, expected, segs, files, &v2, err)) rc = fail(t, err);
    cJSON_Delete(segs);
    cJSON_Delete(files);
    return rc;
}

static int xEnd(sqlite3_vtab *v) {
    queryTable *t = (queryTable *)v;
    segmentWriterFree(t->writer);
    t->writer = NULL;
    rewriteFree(t->rewrite);
    t->rewrite = NULL;
    return SQLITE_OK;
}

static sqlite3_module lakeModule = {
    .iVersion = 1,
    .xCreate = xConnect,
    .xConnect = xConnect,
    .xBestIndex = xBestIndex,
    .xDisconnect = xDisconnect,
    .xDestroy = xDisconnect,
    .xOpen = xOpen,
    .xClose = xClose,
    .xFilter = xFilter,
    .xNext = xNext,
    .xEof = xEof,
    .xColumn = xColumn,
    .xRowid = xRowid,
    .xUpdate = xUpdate,
    .xBegin = xBegin,
    .xSync = xSync,
    .xCommit = xEnd,
    .xRollback = xEnd,
};

int queryStopped(const queryContext *ctx) { return interruptPending() || (ctx->stop && *ctx->stop); }

int queryRegister(sqlite3 *db, queryContext *ctx, lakeError *err) {
    const char *off = getenv("LAKE_QUERY_NO_PUSHDOWN"), *threads = getenv("LAKE_QUERY_THREADS");
    ctx->no_pushdown = off && *off && strcmp(off, "0") != 0;
    ctx->db = db;
    if (threads && *threads) {
        long long n;
        if (configWholeIn(threads, 1, QUERY_THREADS_MAX, &n))
            return errSet(err, LAKE_ECONFIG, "LAKE_QUERY_THREADS: '%s' is not a whole number from 1 to %d", threads,
                          QUERY_THREADS_MAX);
        ctx->threads = (int)n;
    } else {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        ctx->threads = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
    }
    if (sqlite3_create_module(db, "lake", &lakeModule, ctx) != SQLITE_OK)
        return errSet(err, LAKE_EFAIL, "cannot register the lake module: %s", sqlite3_errmsg(db));
    return 0;
}

/* Skip blanks; then, if p starts with word (any case) not followed by an
 * identifier character, the text after it, else NULL. */
static const char *word(const char *p, const char *w) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    size_t n = strlen(w);
    if (sqlite3_strnicmp(p, w, (int)n) != 0) return NULL;
    char next = p[n];
    if (((next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') || (next >= '0' && next <= '9') ||
         next == '_') && ((w[n - 1] >= 'A' && w[n - 1] <= 'Z') || (w[n - 1] >= 'a' && w[n - 1] <= 'z')))
        return NULL;
    return p + n;
}

/* An identifier at p (bare, or "quoted" without doubled quotes) into id;
 * the text after it, or NULL. */
static const char *ident(const char *p, char *id, size_t size) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    size_t k = 0;
    if (*p == '"') {
        const char *e = strchr(p + 1, '"');
        if (!e || e[1] == '"' || (size_t)(e - p - 1) >= size || e == p + 1) return NULL;
        snprintf(id, size, "%.*s", (int)(e - p - 1), p + 1);
        return e + 1;
    }
    while ((p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= 'a' && p[k] <= 'z') || p[k] == '_' || (k && p[k] >= '0' && p[k] <= '9'))
        k++;
    if (!k || k >= size) return NULL;
    snprintf(id, size, "%.*s", (int)k, p);
    return p + k;
}

/* The table NS.T the statements declared, or NULL. */
static queryTable *declared(queryContext *ctx, const char *ns, const char *name) {
    queryTable *t = ctx->tables;
    while (t && !(sqlite3_stricmp(t->ns, ns) == 0 && sqlite3_stricmp(t->name, name) == 0)) t = t->next;
    return t;
}

int queryCountOnly(queryContext *ctx, const char *sql, char **rewritten, const char **end, lakeError *err) {
    *rewritten = NULL;
    if (ctx->no_pushdown) return 0;
    const char *p = word(sql, "SELECT"), *expr;
    char ns[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1];
    if (!p) return 0;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    expr = p;
    if (!(p = word(p, "count")) || !(p = word(p, "(")) || !(p = word(p, "*")) || !(p = word(p, ")")))
        return 0;
    const char *exprEnd = p;
    if (!(p = word(p, "FROM")) || !(p = ident(p, ns, sizeof ns)) || !(p = word(p, ".")) ||
        !(p = ident(p, name, sizeof name)))
        return 0;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == ';') p++;
    else if (*p) return 0;
    queryTable *t = declared(ctx, ns, name);
    if (!t) return 0; /* not a lake table: SQLite answers */
    if (pin(t) != SQLITE_OK) {
        /* outside a statement: no SQLite takes the message pin left */
        sqlite3_free(t->base.zErrMsg);
        t->base.zErrMsg = NULL;
        if (!ctx->err.code) errSet(&ctx->err, LAKE_EFAIL, "%s.%s: out of memory", t->ns, t->name);
        *err = ctx->err;
        return err->code;
    }
    int64_t total = 0, rows;
    for (int i = 0; i < t->nseg; i++) {
        if (t->ix ? (rows = regIndexRows(t->ix, i)) < 0
                  : !jsonWhole(cJSON_GetObjectItemCaseSensitive(t->segv[i], "rows"), 0, &rows))
            return errSet(err, LAKE_EDATA, "%s.%s: a malformed segment in the registration", t->ns, t->name);
        total += rows;
    }
    int64_t version = 0;
    jsonWhole(cJSON_GetObjectItemCaseSensitive(t->pinned, "version"), 0, &version);
    traceLine("query", "count %s.%s v%lld: %lld rows from the registration, no segment read", t->ns, t->name,
              (long long)version, (long long)total);
    if (ctx->explain)
        sqlite3_str_appendf(ctx->explain, "%s.%s version %lld: %d segment%s, none read: count(*) is %lld row%s "
                            "from the registration\n", t->ns, t->name, (long long)version, t->nseg,
                            t->nseg == 1 ? "" : "s", (long long)total, total == 1 ? "" : "s");
    char *col = sqlite3_mprintf("%.*s", (int)(exprEnd - expr), expr);
    *rewritten = col ? sqlite3_mprintf("SELECT %lld AS \"%w\"", (long long)total, col) : NULL;
    sqlite3_free(col);
    if (!*rewritten) return errSet(err, LAKE_EFAIL, "out of memory");
    *end = p;
    return 0;
}

const segmentSchema *queryTableColumns(queryContext *ctx, const char *ns, const char *name) {
    queryTable *t = declared(ctx, ns, name);
    return t ? t->cols : NULL;
}

int queryKeptSegments(queryContext *ctx, const char *ns, const char *name, const char *probe,
                      const cJSON ***kept, int *nkept, const char **schema, int64_t *version, const pruneTerm **terms,
                      int *nterms, lakeError *err) {
    queryTable *t = declared(ctx, ns, name);
    sqlite3_stmt *st = NULL;
    *kept = NULL;
    *nkept = 0;
    *terms = NULL;
    *nterms = 0;
    if (t) {
        pruneTermsFree(t->cterms, t->ncterms);
        t->cterms = NULL;
        t->ncterms = t->cscans = 0;
    }
    if (!t || sqlite3_prepare_v2(ctx->db, probe, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return 0;
    }
    errClear(&ctx->err);
    ctx->collect = t;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {}
    ctx->collect = NULL;
    if (s == SQLITE_DONE && pin(t) != SQLITE_OK) s = SQLITE_ERROR; /* no scan ran at all */
    sqlite3_finalize(st);
    if (s != SQLITE_DONE) {
        if (ctx->err.code) *err = ctx->err;
        else errSet(err, LAKE_EFAIL, "%s.%s: %s", ns, name, sqlite3_errmsg(ctx->db));
        return err->code;
    }
    if (!(*kept = malloc(sizeof **kept * (size_t)(t->nseg + 1)))) return errSet(err, LAKE_EFAIL, "out of memory");
    for (int i = 0; i < t->nseg; i++)
        if (t->marked && t->marked[i] && !((*kept)[(*nkept)++] = segAt(t, i))) {
            free(*kept);
            *kept = NULL;
            *nkept = 0;
            return errSet(err, LAKE_EDATA, "%s.%s: a malformed segment in the registration", ns, name);
        }
    free(t->marked);
    t->marked = NULL;
    if (t->cscans == 1) {
        *terms = t->cterms;
        *nterms = t->ncterms;
    }
    *schema = t->schema;
    *version = 0;
    jsonWhole(cJSON_GetObjectItemCaseSensitive(t->pinned, "version"), 0, version);
    return 0;
}

void queryUnpin(queryContext *ctx) {
    if (ctx->partials && ctx->db) {
        sqlite3_exec(ctx->db, "DROP TABLE IF EXISTS temp.\"" QUERY_PARTIALS "\"", NULL, NULL, NULL);
        ctx->partials = 0;
    }
    for (queryTable *t = ctx->tables; t; t = t->next) {
        if (t->writer) continue; /* rows wait for their transaction's COMMIT */
        unpin(t);
    }
}

/* Is ns attached already? (sqlite's own list of schemas) */
static int attached(sqlite3 *db, const char *ns) {
    return sqlite3_db_filename(db, ns) != NULL;
}

static int declareOne(sqlite3 *db, queryContext *ctx, const char *ns, const char *name, int *nattached,
                      int *listed, int *byName, lakeError *err) {
    if (!*listed) { /* the first pair: the directory (refreshed when expired) */
        const cacheEntry *entries;
        size_t n;
        int rc = !ctx->cache && ctx->open ? ctx->open(ctx, err) : 0;
        if (rc) return rc;
        rc = cacheDirectory(ctx->cache, &entries, &n, err);
        /* a principal denied the directory (role user) names its tables */
        *byName = rc && err->status && strcmp(err->status, "permission_denied") == 0;
        if (*byName) {
            rc = 0;
            errClear(err);
        }
        if (rc) return rc;
        *listed = 1;
    }
    const cacheEntry *e = NULL;
    char base[NAME_MAX_LEN + 1], at[32]; /* NS."T@…": T read AT a version (query/at.h) */
    int64_t version;
    if (queryAtSplit(name, base, sizeof base, &version, at)) return 0; /* no lake table: SQLite will say */
    if (*byName && nameIsValid(ns) && nameIsValid(base)) { /* denied the directory: ask by name */
        int rc = cacheTable(ctx->cache, ns, base, &e, err);
        if (rc && err->status && strcmp(err->status, "not_found") == 0) errClear(err);
        else if (rc) return rc;
    } else if (!*byName) {
        e = cacheFindTable(ctx->cache, ns, base);
    }
    if (!e) return 0; /* not a lake table: SQLite will say */
    char *sql;
    if (!attached(db, ns)) {
        if (++*nattached > QUERY_MAX_NAMESPACES)
            return errSet(err, LAKE_EUSAGE, "a statement may name tables of at most %d namespaces",
                          QUERY_MAX_NAMESPACES);
        sql = sqlite3_mprintf("ATTACH ':memory:' AS \"%w\"", ns);
        int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        sqlite3_free(sql);
        if (rc != SQLITE_OK) return errSet(err, LAKE_EFAIL, "%s: %s", ns, sqlite3_errmsg(db));
    }
    sqlite3_stmt *st;
    sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master WHERE name = %Q", ns, name);
    int exists = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_free(sql);
    if (exists) return 0;
    sql = sqlite3_mprintf("CREATE VIRTUAL TABLE \"%w\".\"%w\" USING lake", ns, name);
    errClear(&ctx->err);
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    /* a table read AT a version resolves as it is declared: its failure
     * (no such version, the source down) as the source said it */
    if (rc != SQLITE_OK && ctx->err.code) {
        *err = ctx->err;
        return err->code;
    }
    if (rc != SQLITE_OK) return errSet(err, LAKE_EFAIL, "%s.%s: %s", ns, name, sqlite3_errmsg(db));
    return 0;
}

void queryForget(sqlite3 *db) {
    for (;;) { /* one at a time: a DETACH changes the list being read */
        sqlite3_stmt *st = NULL;
        char *sql = NULL;
        if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_database_list WHERE name NOT IN ('main', 'temp') LIMIT 1",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            sql = sqlite3_mprintf("DETACH \"%w\"", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        int rc = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_DONE;
        sqlite3_free(sql);
        if (rc != SQLITE_OK) return;
    }
}

int queryDeclare(sqlite3 *db, queryContext *ctx, const char *sql, lakeError *err) {
    int rc = 0, listed = 0, byName = 0;
    int nattached = 0; /* namespaces attached already: all but main and temp */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        nattached = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    /* the pairs "a.b" of identifiers outside strings and comments
     * (query/sqlscan.h), blanks and comments around the dot allowed */
    char prev[NAME_MAX_LEN + 1] = "", id[NAME_MAX_LEN + 1];
    int state = 0; /* 1: after the identifier prev, 2: after "prev ." */
    for (const char *p = sql; !rc;) {
        sqlToken t = sqlNextToken(p);
        if (t.kind == SQLTOK_END) break;
        p = t.end;
        if (t.kind == SQLTOK_BLANK || t.kind == SQLTOK_COMMENT) continue;
        if (t.kind == SQLTOK_IDENT || t.kind == SQLTOK_QUOTED) {
            sqlTokenName(&t, id, sizeof id);
            if (state == 2) rc = declareOne(db, ctx, prev, id, &nattached, &listed, &byName, err);
            memcpy(prev, id, sizeof prev);
            state = 1;
        } else {
            state = state == 1 && *t.start == '.' ? 2 : 0;
        }
    }
    return rc;
}
