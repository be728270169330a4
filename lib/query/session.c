/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * session.c - a query session (query/session.h): lake-query's connection
 * and statement compiler, shared with liblake's lake_query.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "catalog/names.h"
#include "catalog/vend.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "query/aggregate.h"
#include "query/at.h"
#include "query/compact.h"
#include "query/filefn.h"
#include "query/import.h"
#include "query/rewrite.h"
#include "query/segment.h"
#include "query/session.h"

/* --- the lake, opened on first use ---------------------------------------- */

/* Open the configuration, the catalog cache, the stage and the segment
 * cache, and register the FILE functions: once, when the first statement
 * names a lake table or calls a FILE function (SQL without either needs
 * no catalog and no writable cache directory).  A failure is kept and
 * returned again. */
int querySessionLake(querySession *s, lakeError *err) {
    if (s->lakeRc) {
        if (s->lakeRc > 0) *err = s->lakeErr;
        return s->lakeRc > 0 ? s->lakeRc : 0;
    }
    lakeError *e = &s->lakeErr;
    int64_t segMax = 0;
    int rc = configLoad(&s->cfg, s->overrides, s->noverrides, e);
    cacheOptions copt = {s->cfg.catalog_ttl, 0, 0};
    if (!rc) rc = sourceOpen(&s->cfg, &s->src, e);
    if (!rc) rc = cacheOpen(&s->cfg, s->src, &copt, &s->cache, e);
    if (!rc) rc = catalogStageOpen(&s->cfg, s->cache, NULL, &s->stage, e);
    if (!rc) rc = segcacheMaxFromEnv(&segMax, e);
    if (!rc) rc = segcacheOpen(s->cfg.cache_dir, segMax, &s->segs, e);
    if (!rc) segcacheSetMaxAge(s->segs, s->cfg.segment_cache_max_age);
    if (!rc && s->db) rc = fileFunctionsRegister(s->db, s->stage, &s->q.err, e);
    if (!rc) {
        s->q.cache = s->cache;
        s->q.stage = s->stage;
        s->q.segs = s->segs;
    }
    s->lakeRc = rc ? rc : -1;
    if (rc) *err = *e;
    return rc;
}

static int lakeOpenHook(queryContext *q, lakeError *err) { return querySessionLake(q->open_arg, err); }

/* Does the statement call a FILE function (which needs the stage)?  A
 * plain substring test: a false positive only opens the lake early. */
static int callsFileFunction(const char *sql) {
    for (const char *p = sql; *p; p++)
        if (strncasecmp(p, "fl_get_", 7) == 0 || strncasecmp(p, "to_file", 7) == 0) return 1;
    return 0;
}


/* --- DDL on lake tables ------------------------------------------------------ */

#define NO_ALTER "a lake table cannot be altered: create another with 'lake-catalog create' (and 'lake-catalog drop' this one)"
#define ONLY_TABLES "a lake namespace holds only lake tables ('lake-catalog create|drop'); put indexes, views and triggers in temp"

/* The authorizer: while the user's statement compiles, refuse creating,
 * dropping or altering anything in a lake namespace's schema (anything
 * but main and temp): lake tables change with lake-catalog, and SQL that
 * "dropped" one would only drop this run's declaration of it. */
static int authorize(void *arg, int action, const char *a1, const char *a2, const char *db, const char *trigger) {
    querySession *s = arg;
    (void)trigger;
    if (!s->guard) return SQLITE_OK;
    const char *schema = action == SQLITE_ALTER_TABLE ? a1 : db, *name = a1;
    if (action == SQLITE_ALTER_TABLE || action == SQLITE_CREATE_INDEX || action == SQLITE_CREATE_TRIGGER) name = a2;
    if (!schema || strcmp(schema, "main") == 0 || strcmp(schema, "temp") == 0) return SQLITE_OK;
    if (!name) name = "?";
    switch (action) {
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_VTABLE:
        errSet(&s->q.err, LAKE_EUSAGE, "%s.%s: a lake table is created with 'lake-catalog create %s.%s COLUMNS', not SQL",
               schema, name, schema, name);
        break;
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_VTABLE:
        errSet(&s->q.err, LAKE_EUSAGE, "%s.%s: a lake table is dropped with 'lake-catalog drop %s.%s', not SQL", schema,
               name, schema, name);
        break;
    case SQLITE_ALTER_TABLE:
        errSet(&s->q.err, LAKE_EUSAGE, "%s.%s: %s", schema, name, NO_ALTER);
        break;
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_VIEW:
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_VIEW:
        errSet(&s->q.err, LAKE_EUSAGE, "%s.%s: %s", schema, name, ONLY_TABLES);
        break;
    default: return SQLITE_OK;
    }
    return SQLITE_DENY;
}

/* The first keyword of a statement is CREATE, DROP or ALTER. */
static int isDdl(const char *sql) {
    static const char *const kw[] = {"CREATE", "DROP", "ALTER"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) {
        size_t n = strlen(kw[i]);
        if (strncasecmp(sql, kw[i], n) == 0 && !isalnum((unsigned char)sql[n]) && sql[n] != '_') return 1;
    }
    return 0;
}


/* Skip white space and comments: where a statement really starts. */
const char *querySkipBlank(const char *p) {
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
        if (p[0] == '-' && p[1] == '-') p += strcspn(p, "\n");
        else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else return p;
    }
}


/* The exit status of an SQL failure (lake-query(1), EXIT STATUS): the lake
 * error behind it if any; a table that does not exist 66; DDL naming an
 * unknown lake namespace or table 64; SQLite's own errors (syntax, an
 * unknown column or function, a FILE function refusing its argument, a
 * constraint, a type) 65; resource failures (memory, I/O) 1; an
 * interrupted statement 1 (the process then dies of the signal). */
int querySessionFailure(querySession *s, const char *stmt, int compiling, lakeError *err) {
    if (s->q.err.code) {
        *err = s->q.err;
        return err->code;
    }
    const char *m = sqlite3_errmsg(s->db);
    int code = sqlite3_errcode(s->db) & 0xff, rc;
    if (compiling && isDdl(stmt) && strcmp(m, "virtual tables may not be altered") == 0)
        rc = errSet(err, LAKE_EUSAGE, "%s", NO_ALTER);
    else if (compiling && isDdl(stmt) && (strncmp(m, "virtual tables may not be ", 26) == 0 ||
                                          strcmp(m, "cannot create triggers on virtual tables") == 0))
        rc = errSet(err, LAKE_EUSAGE, "%s: lake tables change only with 'lake-catalog create|drop'", m);
    else if (compiling && isDdl(stmt) && (strncmp(m, "unknown database ", 17) == 0 ||
                                     (strncmp(m, "no such table: ", 15) == 0 && strchr(m + 15, '.') &&
                                      strncmp(m + 15, "main.", 5) != 0 && strncmp(m + 15, "temp.", 5) != 0)))
        rc = errSet(err, LAKE_EUSAGE, "%s: lake tables are created and dropped with 'lake-catalog create|drop', not SQL", m);
    else if (compiling && strncmp(m, "no such table", 13) == 0)
        rc = errSet(err, LAKE_ENOINPUT, "%s", m);
    else if (code == SQLITE_ERROR || code == SQLITE_CONSTRAINT || code == SQLITE_MISMATCH || code == SQLITE_RANGE ||
             code == SQLITE_TOOBIG || code == SQLITE_AUTH)
        rc = errSet(err, LAKE_EDATA, "%s", m);
    else
        rc = errSet(err, LAKE_EFAIL, "%s", m);
    snprintf(err->cause, sizeof err->cause, "sqlite %d", sqlite3_extended_errcode(s->db));
    return rc;
}

/* "no such table: NS.T" where NS.T could be a lake table. */
static int unknownLakeTable(const char *m) {
    if (strncmp(m, "no such table: ", 15) != 0) return 0;
    char *ns = NULL, *name = NULL;
    int ok = nameSplitTable(m + 15, &ns, &name, NULL) == 0;
    free(ns);
    free(name);
    return ok;
}

/* Compile the statement at sql: its lake tables declared first (from the
 * cached directory), DDL on them refused; when SQLite does not know a
 * table NS.T, the catalog is refreshed once per session (another host may
 * have created it within the cache's TTL) and the statement compiled
 * again.  A lake table SQLite asks for that the text does not name (one a
 * temporary view or trigger of an earlier input reads) is declared then,
 * and the statement compiled again.  *st is NULL when only blanks or
 * comments were left. */
static int sessionCompileText(querySession *s, const char *sql, sqlite3_stmt **st, const char **next, lakeError *err);
/* The most tables a statement's compilation declares one by one, as
 * SQLite asks for them (sessionCompileText). */
#define SESSION_DECLARE_MAX 64

/* sessionCompileText of sql with its AT clauses rewritten (query/at.h):
 * the rewritten text has the same length, so *next maps back into sql. */
int querySessionCompile(querySession *s, const char *sql, sqlite3_stmt **st, const char **next, lakeError *err) {
    char *at = NULL;
    *st = NULL;
    int rc = queryAtRewrite(sql, &at, err);
    if (rc) return rc;
    rc = sessionCompileText(s, at ? at : sql, st, next, err);
    if (at && *next) *next = sql + (*next - at);
    free(at);
    return rc;
}

static int sessionCompileText(querySession *s, const char *sql, sqlite3_stmt **st, const char **next, lakeError *err) {
    char declared[2 * NAME_MAX_LEN + 2] = ""; /* the last table declared for SQLite's "no such table" */
    int refreshed = 0;
    for (int attempt = 0;; attempt++) {
        errClear(&s->q.err);
        int rc = callsFileFunction(sql) ? querySessionLake(s, err) : 0;
        if (!rc) rc = queryDeclare(s->db, &s->q, sql, err);
        if (!rc) testHold("LAKE_TEST_PLAN_HOLD"); /* the interrupt suites: a stop while planning */
        char *counted = NULL; /* SELECT count(*) FROM NS.T, from the registration */
        if (!rc) rc = queryCountOnly(&s->q, sql, &counted, next, err);
        /* an aggregate split by segment: its partials computed now */
        if (!rc && !counted) rc = queryAggregate(s->db, &s->q, sql, &counted, next, err);
        if (rc) return rc;
        if (counted) {
            int ps = sqlite3_prepare_v2(s->db, counted, -1, st, NULL);
            sqlite3_free(counted);
            return ps == SQLITE_OK ? 0 : querySessionFailure(s, querySkipBlank(sql), 1, err);
        }
        s->guard = 1;
        int ps = sqlite3_prepare_v2(s->db, sql, -1, st, next);
        s->guard = 0;
        if (ps == SQLITE_OK) return 0;
        const char *m = sqlite3_errmsg(s->db);
        /* a lake table the text does not name (a TEMP VIEW's or TRIGGER's,
         * made by an earlier input): declared as the text's are, once */
        if (!s->q.err.code && attempt < SESSION_DECLARE_MAX && unknownLakeTable(m) && strcmp(m + 15, declared) != 0) {
            snprintf(declared, sizeof declared, "%s", m + 15);
            rc = queryDeclare(s->db, &s->q, declared, err);
            if (rc) return rc;
            continue;
        }
        if (!refreshed && !s->refreshed && !s->q.err.code && s->cache && !isDdl(querySkipBlank(sql)) &&
            unknownLakeTable(m)) {
            refreshed = s->refreshed = 1;
            declared[0] = '\0'; /* declared again from what the source says now */
            rc = cacheRefresh(s->cache, 0, err);
            /* a principal denied the directory resolved the name already */
            if (rc && err->status && strcmp(err->status, "permission_denied") == 0) return querySessionFailure(s, querySkipBlank(sql), 1, err);
            if (rc) return rc;
            continue;
        }
        return querySessionFailure(s, querySkipBlank(sql), 1, err);
    }
}


/* --- the session ------------------------------------------------------------ */

int querySessionOpen(querySession *s, lakeError *err) {
    const configOverride *ov = s->overrides;
    int n = s->noverrides;
    memset(s, 0, sizeof *s);
    s->overrides = ov;
    s->noverrides = n;
    s->q = (queryContext){.open = lakeOpenHook, .open_arg = s};
    int rc = 0;
    if (sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        rc = errSet(err, LAKE_EFAIL, "sqlite: cannot open");
    if (!rc) rc = queryRegister(s->db, &s->q, err);
    if (!rc) sqlite3_set_authorizer(s->db, authorize, s);
    if (rc) querySessionClose(s);
    return rc;
}

int querySessionRetry(querySession *s, int attempt, lakeError *err) {
    if (!s->q.replan) return 0;
    if (attempt < REWRITE_ATTEMPTS) {
        traceLine("query", "%s (attempt %d); running the statement again", err->msg, attempt);
        errClear(err);
        struct timespec pause = {0, (long)(1 + rand() % 20) * attempt * 1000000L};
        nanosleep(&pause, NULL);
        return 1;
    }
    errSet(err, LAKE_ETEMP, "another writer changed the same segments %d times; nothing changed, retry later",
           REWRITE_ATTEMPTS);
    return 0;
}

void querySessionClose(querySession *s) {
    /* warns, never fails; the context's stop (liblake's lake_interrupt) stops it */
    if (s->cache) compactAfterAppends(&s->cfg, s->cache, s->stage, s->segs, s->q.stop);
    sqlite3_close(s->db);
    segcacheClose(s->segs);
    cacheClose(s->cache);
    stageClose(s->stage);
    sourceClose(s->src);
    configFree(&s->cfg);
    const configOverride *ov = s->overrides;
    int n = s->noverrides;
    memset(s, 0, sizeof *s);
    s->overrides = ov;
    s->noverrides = n;
}

/* --- import ---------------------------------------------------------------- */

int querySessionImport(querySession *s, const char *table, lakeReader *in, importFormat fmt, progress *prog,
                       const volatile sig_atomic_t *stop, int64_t *rows, lakeError *err) {
    char *ns = NULL, *name = NULL;
    cJSON *reg = NULL, *segs = NULL, *files = NULL;
    segmentWriter *w = NULL;
    char *schema = NULL;
    int64_t n = 0, version;
    segmentWriterOptions opt = {.hex_blobs = 1};
    if (rows) *rows = 0;
    int rc = nameSplitTable(table, &ns, &name, err);
    if (rc) rc = err->code = LAKE_EUSAGE;
    if (!rc) rc = querySessionLake(s, err);
    if (!rc) rc = cacheResolve(s->cache, ns, name, -1, &reg, err);
    if (!rc) rc = cacheMayRun(s->cache, "append", ns, name, err); /* before any segment is stored */
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(reg, "id");
    if (!rc) schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reg, "schema"));
    if (!rc && (!cJSON_IsString(id) || !schema)) rc = errSet(err, LAKE_EFAIL, "%s: malformed registration", table);
    if (!rc) rc = segmentWriterOpen(s->stage, id->valuestring, schema, &opt, &w, err);
    if (!rc) rc = importRun(in, fmt, w, &n, prog, err);
    if (prog) progressEnd(prog);
    if (!rc) rc = segmentWriterFinish(w, &segs, &files, err);
    if (!rc && stop && *stop) rc = errSet(err, LAKE_EFAIL, "%s: interrupted", table);
    if (!rc && n > 0)
        rc = cacheAppendCommuting(s->cache, ns, name,
                                  (int64_t)cJSON_GetObjectItemCaseSensitive(reg, "version")->valuedouble, segs,
                                  files, &version, err);
    /* no rows is not an error: nothing is appended and no version made */
    if (!rc && n == 0) logWarn("%s: no rows: nothing appended", table);
    else if (!rc) logWarn("%s: %lld row%s appended", table, (long long)n, n == 1 ? "" : "s");
    if (!rc && rows) *rows = n;
    segmentWriterFree(w);
    cJSON_Delete(reg);
    cJSON_Delete(segs);
    cJSON_Delete(files);
    cJSON_free(schema);
    free(ns);
    free(name);
    return rc;
}
