/*
 * vtab.c - the "lake" virtual-table module (see vtab.h).
 */
#include "query/vtab.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/names.h"
#include "core/jsonstrict.h"
#include "query/segment.h"


typedef struct queryTable {
    sqlite3_vtab base;
    queryContext *ctx;
    char *ns, *name, *id, *schema;
    segmentSchema *cols;    /* schema, parsed */
    cJSON *pinned;          /* the registration this statement reads */
    segmentWriter *writer;  /* rows this statement inserts */
    struct queryTable *next;
} queryTable;

typedef struct queryCursor {
    sqlite3_vtab_cursor base;
    const char *sql;        /* the statement run on each segment (idxStr) */
    int *map;               /* outer column -> inner result column, or -1 */
    sqlite3_value **args;   /* its parameters, from xFilter */
    int nargs;
    int nseg;               /* segments in the pinned version */
    int seg;                /* index of the open segment */
    segmentReader *rd;
    sqlite3_stmt *st;
    char sha[SHA256_HEX_LEN + 1]; /* the open segment, pinned in the cache */
    sqlite3_int64 rowid;
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

/* Resolve the table once per statement; keep that version. */
static int pin(queryTable *t) {
    if (t->pinned) return SQLITE_OK;
    lakeError *err = &t->ctx->err;
    if (cacheResolve(t->ctx->cache, t->ns, t->name, -1, &t->pinned, err)) return fail(t, err);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(t->pinned, "id");
    if (!cJSON_IsString(id) || strcmp(id->valuestring, t->id) != 0) {
        cJSON_Delete(t->pinned);
        t->pinned = NULL;
        return failf(t, LAKE_ETEMP, "the table was dropped and created again; run the statement again");
    }
    return SQLITE_OK;
}

static void freeTable(queryTable *t) {
    cJSON_Delete(t->pinned);
    segmentSchemaFree(t->cols);
    segmentWriterFree(t->writer);
    free(t->ns);
    free(t->name);
    free(t->id);
    free(t->schema);
    sqlite3_free(t);
}

static int xConnect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                    char **pzErr) {
    queryContext *ctx = aux;
    (void)argc;
    const char *ns = argv[1], *name = argv[2];
    const cacheEntry *e = cacheFindTable(ctx->cache, ns, name);
    if (!e) {
        *pzErr = sqlite3_mprintf("%s.%s: no such table", ns, name);
        return SQLITE_ERROR;
    }
    segmentSchema *cols = NULL;
    lakeError err = {0};
    if (segmentSchemaParse(e->schema, &cols, &err)) {
        *pzErr = sqlite3_mprintf("%s.%s: %s", ns, name, err.msg);
        return SQLITE_ERROR;
    }
    sqlite3_str *decl = sqlite3_str_new(db);
    sqlite3_str_appendall(decl, "CREATE TABLE x(");
    for (int i = 0; i < cols->ncols; i++)
        sqlite3_str_appendf(decl, "%s\"%w\" %s", i ? ", " : "", cols->cols[i].name,
                            lakeTypeDecl(cols->cols[i].type));
    sqlite3_str_appendall(decl, ")");
    char *sql = sqlite3_str_finish(decl);
    int rc = sql ? sqlite3_declare_vtab(db, sql) : SQLITE_NOMEM;
    sqlite3_free(sql);
    queryTable *t = rc == SQLITE_OK ? sqlite3_malloc(sizeof *t) : NULL;
    if (!t) {
        segmentSchemaFree(cols);
        return rc == SQLITE_OK ? SQLITE_NOMEM : rc;
    }
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->cols = cols;
    t->ns = strdup(ns);
    t->name = strdup(name);
    t->id = strdup(e->id);
    t->schema = strdup(e->schema);
    if (!t->ns || !t->name || !t->id || !t->schema) {
        freeTable(t);
        return SQLITE_NOMEM;
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

/* The plan of a scan, in idxStr: the outer columns read, in order, then a
 * newline, then the statement each segment runs, e.g.
 *   "0 2\nSELECT "k","s" FROM rows WHERE "x" > ?1"
 * The ?N are bound to xFilter's argv in order. */
static int xBestIndex(sqlite3_vtab *v, sqlite3_index_info *info) {
    const segmentSchema *cols = ((queryTable *)v)->cols;
    sqlite3_str *plan = sqlite3_str_new(NULL), *sel = sqlite3_str_new(NULL);
    int nsel = 0, narg = 0;
    for (int i = 0; i < cols->ncols; i++) {
        if (!(info->colUsed & ((sqlite3_uint64)1 << (i < 63 ? i : 63)))) continue;
        sqlite3_str_appendf(plan, "%s%d", nsel ? " " : "", i);
        sqlite3_str_appendf(sel, "%s\"%w\"", nsel++ ? ", " : "", cols->cols[i].name);
    }
    if (!nsel) sqlite3_str_appendall(sel, "NULL"); /* e.g. count(*) */
    char *list = sqlite3_str_finish(sel);
    sqlite3_str_appendf(plan, "\nSELECT %s FROM rows", list);
    sqlite3_free(list);
    static const struct { unsigned char op; const char *sql; } ops[] = {
        {SQLITE_INDEX_CONSTRAINT_EQ, "="}, {SQLITE_INDEX_CONSTRAINT_LT, "<"},
        {SQLITE_INDEX_CONSTRAINT_LE, "<="}, {SQLITE_INDEX_CONSTRAINT_GT, ">"},
        {SQLITE_INDEX_CONSTRAINT_GE, ">="},
    };
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *k = &info->aConstraint[i];
        if (!k->usable || k->iColumn < 0 || k->iColumn >= cols->ncols) continue;
        const char *coll = sqlite3_vtab_collation(info, i);
        if (coll && sqlite3_stricmp(coll, "BINARY") != 0) continue;
        /* only constants: an IN list or another table's column would make
         * SQLite run one full scan per value */
        sqlite3_value *rhs = NULL;
        if (sqlite3_vtab_in(info, i, -1) || sqlite3_vtab_rhs_value(info, i, &rhs) != SQLITE_OK) continue;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            if (ops[o].op != k->op) continue;
            sqlite3_str_appendf(plan, " %s \"%w\" %s ?%d", narg ? "AND" : "WHERE",
                                cols->cols[k->iColumn].name, ops[o].sql, narg + 1);
            info->aConstraintUsage[i].argvIndex = ++narg;
            info->aConstraintUsage[i].omit = 0; /* SQLite checks again */
        }
    }
    char *idx = sqlite3_str_finish(plan);
    if (!idx) return SQLITE_NOMEM;
    info->idxStr = idx;
    info->needToFreeIdxStr = 1;
    /* every scan reads every segment; a constraint only saves the rows it
     * rejects crossing over, so it lowers the cost a little */
    info->estimatedCost = 1e6 * (narg ? 0.9 : 1.0);
    info->estimatedRows = narg ? 100000 : 1000000;
    return SQLITE_OK;
}

static int xOpen(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
    (void)v;
    queryCursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void closeSegment(queryTable *t, queryCursor *c) {
    sqlite3_finalize(c->st);
    c->st = NULL;
    segmentReaderClose(c->rd);
    c->rd = NULL;
    if (c->sha[0]) segcacheRelease(t->ctx->segs, c->sha);
    c->sha[0] = '\0';
}

static void freePlan(queryCursor *c) {
    sqlite3_free(c->map);
    c->map = NULL;
    for (int i = 0; i < c->nargs; i++) sqlite3_value_free(c->args[i]);
    sqlite3_free(c->args);
    c->args = NULL;
    c->nargs = 0;
    c->sql = NULL;
}

static int xClose(sqlite3_vtab_cursor *cur) {
    closeSegment((queryTable *)cur->pVtab, (queryCursor *)cur);
    freePlan((queryCursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Open segment c->seg of the pinned version. */
static int openSegment(queryTable *t, queryCursor *c) {
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t->pinned, "segments"), c->seg);
    const cJSON *loc = cJSON_GetObjectItemCaseSensitive(g, "location");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(g, "size");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(g, "sha256");
    int64_t n;
    if (!cJSON_IsString(loc) || !jsonWhole(size, 0, &n) || !cJSON_IsString(sha) || !sha256IsHex(sha->valuestring))
        return failf(t, LAKE_EDATA, "a malformed segment in the registration");
    fileValue fv = {.location = loc->valuestring, .size = n};
    snprintf(fv.sha256, sizeof fv.sha256, "%s", sha->valuestring);
    char *path = NULL;
    lakeError *err = &t->ctx->err;
    if (segcacheGet(t->ctx->segs, t->ctx->stage, &fv, &path, err)) return fail(t, err);
    snprintf(c->sha, sizeof c->sha, "%s", sha->valuestring);
    int rc = segmentReaderOpen(path, t->schema, &c->rd, err);
    free(path);
    if (rc) return fail(t, err);
    if (sqlite3_prepare_v2(segmentReaderDb(c->rd), c->sql, -1, &c->st, NULL) != SQLITE_OK)
        return failf(t, LAKE_EDATA, "a segment cannot be read");
    for (int i = 0; i < c->nargs; i++)
        if (sqlite3_bind_value(c->st, i + 1, c->args[i]) != SQLITE_OK)
            return failf(t, LAKE_EFAIL, "a segment cannot be read");
    return SQLITE_OK;
}

/* Move to the next row, across segments. */
static int advance(queryTable *t, queryCursor *c) {
    for (;;) {
        if (c->st) {
            int s = sqlite3_step(c->st);
            if (s == SQLITE_ROW) {
                c->rowid++;
                return SQLITE_OK;
            }
            if (s != SQLITE_DONE) return failf(t, LAKE_EDATA, "a segment cannot be read");
            closeSegment(t, c);
            c->seg++;
        }
        if (c->seg >= c->nseg) {
            c->eof = 1;
            return SQLITE_OK;
        }
        int rc = openSegment(t, c);
        if (rc != SQLITE_OK) return rc;
    }
}

/* Take the plan xBestIndex wrote (see there) and the values of its
 * parameters. */
static int takePlan(queryTable *t, queryCursor *c, const char *idxStr, int argc, sqlite3_value **argv) {
    freePlan(c);
    const char *nl = idxStr ? strchr(idxStr, '\n') : NULL;
    if (!nl) return failf(t, LAKE_EFAIL, "no scan plan");
    if (!(c->map = sqlite3_malloc64(sizeof *c->map * (size_t)(t->cols->ncols ? t->cols->ncols : 1))))
        return SQLITE_NOMEM;
    for (int i = 0; i < t->cols->ncols; i++) c->map[i] = -1;
    int j = 0;
    for (const char *p = idxStr; p < nl;) {
        char *end;
        long col = strtol(p, &end, 10);
        if (end == p || col < 0 || col >= t->cols->ncols) return failf(t, LAKE_EFAIL, "a bad scan plan");
        c->map[col] = j++;
        p = end + (*end == ' ');
    }
    c->sql = nl + 1;
    if (argc > 0) {
        if (!(c->args = sqlite3_malloc64(sizeof *c->args * (size_t)argc))) return SQLITE_NOMEM;
        for (; c->nargs < argc; c->nargs++)
            if (!(c->args[c->nargs] = sqlite3_value_dup(argv[c->nargs]))) return SQLITE_NOMEM;
    }
    return SQLITE_OK;
}

static int xFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
    (void)idxNum;
    queryTable *t = (queryTable *)cur->pVtab;
    queryCursor *c = (queryCursor *)cur;
    closeSegment(t, c);
    c->seg = 0;
    c->rowid = 0;
    c->eof = 0;
    int rc = takePlan(t, c, idxStr, argc, argv);
    if (rc == SQLITE_OK) rc = pin(t);
    if (rc != SQLITE_OK) return rc;
    c->nseg = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t->pinned, "segments"));
    return advance(t, c);
}

static int xNext(sqlite3_vtab_cursor *cur) {
    return advance((queryTable *)cur->pVtab, (queryCursor *)cur);
}

static int xEof(sqlite3_vtab_cursor *cur) { return ((queryCursor *)cur)->eof; }

static int xColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
    queryCursor *c = (queryCursor *)cur;
    int j = i >= 0 && i < ((queryTable *)cur->pVtab)->cols->ncols ? c->map[i] : -1;
    if (j < 0) {
        sqlite3_result_error(ctx, "lake: a column the scan plan did not read", -1);
        return SQLITE_ERROR;
    }
    /* by type rather than sqlite3_result_value: no Mem copy, and text
     * reuses the result's buffer instead of a malloc per value; one
     * column_value (the statement's own Mem), then the cheap value_ calls */
    sqlite3_value *v = sqlite3_column_value(c->st, j);
    switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER: sqlite3_result_int64(ctx, sqlite3_value_int64(v)); break;
    case SQLITE_FLOAT: sqlite3_result_double(ctx, sqlite3_value_double(v)); break;
    case SQLITE_TEXT:
        sqlite3_result_text(ctx, (const char *)sqlite3_value_text(v), sqlite3_value_bytes(v), SQLITE_TRANSIENT);
        break;
    case SQLITE_BLOB: {
        /* the empty BLOB has a NULL pointer, which result_blob takes for
         * SQL NULL */
        int n = sqlite3_value_bytes(v);
        if (n) sqlite3_result_blob(ctx, sqlite3_value_blob(v), n, SQLITE_TRANSIENT);
        else sqlite3_result_zeroblob(ctx, 0);
        break;
    }
    default: sqlite3_result_null(ctx); break;
    }
    return SQLITE_OK;
}

static int xRowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = ((queryCursor *)cur)->rowid;
    return SQLITE_OK;
}

static int xUpdate(sqlite3_vtab *v, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
    queryTable *t = (queryTable *)v;
    if (argc == 1 || sqlite3_value_type(argv[0]) != SQLITE_NULL)
        return failf(t, LAKE_EUSAGE, "lake tables are append-only: UPDATE and DELETE are refused");
    int rc = pin(t);
    if (rc != SQLITE_OK) return rc;
    lakeError *err = &t->ctx->err;
    if (!t->writer) {
        segmentWriterOptions opt = {.tmp_dir = t->ctx->tmp_dir};
        /* refused before any segment is stored */
        if (cacheMayRun(t->ctx->cache, "append", err)) return fail(t, err);
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
    if (!t->writer || segmentWriterRows(t->writer) == 0) return SQLITE_OK;
    lakeError *err = &t->ctx->err;
    cJSON *segs = NULL, *files = NULL;
    int rc = SQLITE_OK;
    /* a COMMIT of an explicit transaction comes after its statements ended */
    if ((rc = pin(t)) != SQLITE_OK) return rc;
    if (segmentWriterFinish(t->writer, &segs, &files, err)) return fail(t, err);
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

int queryRegister(sqlite3 *db, queryContext *ctx, lakeError *err) {
    if (sqlite3_create_module(db, "lake", &lakeModule, ctx) != SQLITE_OK)
        return errSet(err, LAKE_EFAIL, "cannot register the lake module: %s", sqlite3_errmsg(db));
    return 0;
}

void queryUnpin(queryContext *ctx) {
    for (queryTable *t = ctx->tables; t; t = t->next) {
        if (t->writer) continue; /* rows wait for their transaction's COMMIT */
        cJSON_Delete(t->pinned);
        t->pinned = NULL;
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
    if (*byName && nameIsValid(ns) && nameIsValid(name)) { /* denied the directory: ask by name */
        int rc = cacheTable(ctx->cache, ns, name, &e, err);
        if (rc && err->status && strcmp(err->status, "not_found") == 0) errClear(err);
        else if (rc) return rc;
    } else if (!*byName) {
        e = cacheFindTable(ctx->cache, ns, name);
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
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) return errSet(err, LAKE_EFAIL, "%s.%s: %s", ns, name, sqlite3_errmsg(db));
    return 0;
}

int queryDeclare(sqlite3 *db, queryContext *ctx, const char *sql, lakeError *err) {
    int rc = 0, listed = 0, byName = 0;
    int nattached = 0; /* namespaces attached already: all but main and temp */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        nattached = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    /* a small scanner: identifiers (bare, "quoted", `quoted` or
     * [quoted]) outside strings and comments, and the pairs "a.b" among
     * them */
    char prev[NAME_MAX_LEN + 1] = "", id[NAME_MAX_LEN + 1];
    int prevDot = 0; /* prev is followed by a '.' */
    for (const char *p = sql; *p && !rc;) {
        size_t k = 0, n = 0;
        if (*p == '\'') { /* string literal, '' escapes */
            for (p++; *p && !(*p == '\'' && p[1] != '\''); p += (*p == '\'' ? 2 : 1)) {}
            if (*p) p++;
            prev[0] = '\0';
        } else if (p[0] == '-' && p[1] == '-') {
            p += strcspn(p, "\n");
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else if (*p == '"' || *p == '`' || *p == '[') {
            char close = *p == '[' ? ']' : *p;
            for (k = 1; p[k] && !(p[k] == close && (close == ']' || p[k + 1] != close)); k++) {
                if (p[k] == close) k++; /* a doubled quote */
                if (n < NAME_MAX_LEN) id[n++] = p[k];
            }
            id[n] = '\0';
            k += p[k] != '\0';
        } else if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_') {
            while ((p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= 'a' && p[k] <= 'z') || (p[k] >= '0' && p[k] <= '9') ||
                   p[k] == '_')
                k++;
            snprintf(id, sizeof id, "%.*s", (int)(k < NAME_MAX_LEN ? k : NAME_MAX_LEN), p);
        } else {
            p++;
            prev[0] = '\0';
        }
        if (k) { /* an identifier: id */
            if (prevDot && prev[0]) rc = declareOne(db, ctx, prev, id, &nattached, &listed, &byName, err);
            memcpy(prev, id, sizeof prev);
            p += k;
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            prevDot = *p == '.';
            if (prevDot) {
                p++;
                while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            }
            continue;
        }
        prevDot = 0;
    }
    return rc;
}
