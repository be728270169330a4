/*
 * registry.c - the SQLite registry.
 *
 * Statements are prepared per call: registry calls are rare next to the
 * I/O around them, and this keeps every function self-contained with one
 * cleanup path.  Writes run in BEGIN IMMEDIATE transactions so concurrent
 * writers queue on SQLite's lock (busy timeout) instead of failing.
 */
#include "catalog/registry.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/id.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/sha256.h"

#define BUSY_TIMEOUT_MS 10000

struct registry {
    sqlite3 *db;
    char *path;
    char *stage;
    char *authority; /* the marker's authority id; NULL without a marker */
    void (*scan_hook)(void *ctx, int scan);
    void *scan_ctx;
};

/* Schema migrations: migrations[v] takes a registry from version v to
 * v + 1.  Version 0 is an empty file. */
static const char *const migrations[REGISTRY_SCHEMA_VERSION] = {
    "CREATE TABLE lake_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE directory_marker(singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    "  authority_id TEXT NOT NULL, generation INTEGER NOT NULL);"
    "CREATE TABLE namespaces(name TEXT PRIMARY KEY, created_at TEXT NOT NULL);"
    "CREATE TABLE tables(id TEXT PRIMARY KEY, namespace TEXT NOT NULL REFERENCES namespaces(name),"
    "  name TEXT NOT NULL, schema TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,"
    "  dropped INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);"
    "CREATE UNIQUE INDEX tables_live ON tables(namespace, name) WHERE dropped = 0;"
    "CREATE TABLE versions(table_id TEXT NOT NULL REFERENCES tables(id), version INTEGER NOT NULL,"
    "  committed_at TEXT NOT NULL, principal TEXT, PRIMARY KEY (table_id, version));"
    "CREATE TABLE segments(table_id TEXT NOT NULL, version INTEGER NOT NULL, seq INTEGER NOT NULL,"
    "  location TEXT NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL, rows INTEGER NOT NULL,"
    "  PRIMARY KEY (table_id, version, seq),"
    "  FOREIGN KEY (table_id, version) REFERENCES versions(table_id, version));"
    "CREATE INDEX segments_location ON segments(location);"
    "CREATE TABLE version_files(table_id TEXT NOT NULL, version INTEGER NOT NULL,"
    "  location TEXT NOT NULL, PRIMARY KEY (table_id, version, location),"
    "  FOREIGN KEY (table_id, version) REFERENCES versions(table_id, version)) WITHOUT ROWID;"
    "CREATE INDEX version_files_location ON version_files(location);"
    "CREATE TABLE principals(name TEXT PRIMARY KEY, role TEXT NOT NULL"
    "  CHECK (role IN ('admin', 'query-service', 'metadata-peer', 'user')),"
    "  token_sha256 TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT);"
    "INSERT INTO lake_meta VALUES ('format', 'lake-registry');",
};

/* Record a SQLite failure: message redacted to what failed, detail in
 * cause.  Busy and locked are temporary (75); so is a full disk: the
 * transaction rolled back, nothing changed, and the same request (an
 * append is idempotent) succeeds once space is freed, as a mail server
 * defers rather than refuses mail when its spool is full. */
static int sqlErr(registry *r, lakeError *err, const char *what) {
    int ec = sqlite3_extended_errcode(r->db);
    int primary = ec & 0xff;
    int rc;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        rc = errSetStatus(err, "unavailable", "registry busy: %s", what);
    else if (primary == SQLITE_FULL)
        rc = errSetStatus(err, "unavailable", "registry: disk full; retry once space is freed");
    else
        rc = errSetStatus(err, "internal", "registry: %s failed", what);
    if (err) snprintf(err->cause, sizeof err->cause, "%s: sqlite %d: %s", what, ec, sqlite3_errmsg(r->db));
    return rc;
}

static int exec(registry *r, const char *sql, lakeError *err) {
    /* the SQL goes to the cause (logs), never to the message */
    if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK) return sqlErr(r, err, "a statement");
    return 0;
}

static void rollback(registry *r) { sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL); }

/* Prepare sql and bind the text arguments ap (NULL-terminated list). */
static sqlite3_stmt *vprep(registry *r, lakeError *err, const char *sql, va_list ap) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlErr(r, err, "prepare");
        return NULL;
    }
    const char *a;
    for (int i = 1; (a = va_arg(ap, const char *)); i++)
        sqlite3_bind_text(st, i, a, -1, SQLITE_TRANSIENT);
    return st;
}

static sqlite3_stmt *prep(registry *r, lakeError *err, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    sqlite3_stmt *st = vprep(r, err, sql, ap);
    va_end(ap);
    return st;
}

/* Run a statement that returns no rows, with text arguments (NULL-
 * terminated); what names it in an error. */
static int run(registry *r, lakeError *err, const char *what, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    sqlite3_stmt *st = vprep(r, err, sql, ap);
    va_end(ap);
    if (!st) return err->code;
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sqlErr(r, err, what);
    sqlite3_finalize(st);
    return rc;
}

/* A one-value query: *out gets column 0 as integer.  Returns 0 found,
 * -1 no row, or an error code. */
static int queryInt(registry *r, int64_t *out, lakeError *err, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    sqlite3_stmt *st = vprep(r, err, sql, ap);
    va_end(ap);
    if (!st) return err->code;
    int s = sqlite3_step(st), rc;
    if (s == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (s == SQLITE_DONE) {
        rc = -1;
    } else {
        rc = sqlErr(r, err, "query");
    }
    sqlite3_finalize(st);
    return rc;
}

static int metaGet(registry *r, const char *key, char **value, lakeError *err) {
    *value = NULL;
    sqlite3_stmt *st = prep(r, err, "SELECT value FROM lake_meta WHERE key = ?", key, NULL);
    if (!st) return err->code;
    int s = sqlite3_step(st), rc = 0;
    if (s == SQLITE_ROW) {
        *value = strdup((const char *)sqlite3_column_text(st, 0));
        if (!*value) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    } else if (s != SQLITE_DONE) {
        rc = sqlErr(r, err, "read lake_meta");
    }
    sqlite3_finalize(st);
    return rc;
}

static int metaSet(registry *r, const char *key, const char *value, lakeError *err) {
    return run(r, err, "write lake_meta", "INSERT OR REPLACE INTO lake_meta VALUES (?, ?)", key, value, NULL);
}

/* Refuse anything but a lake registry this code can read; migrate forward.
 * Nothing is written before the checks pass. */
static int checkAndMigrate(registry *r, int create, const char *stage_url, lakeError *err) {
    int64_t n = 0, version = 0;
    int rc = queryInt(r, &n, err, "SELECT count(*) FROM sqlite_master", NULL);
    if (rc > 0) {
        if ((sqlite3_extended_errcode(r->db) & 0xff) == SQLITE_NOTADB)
            return errSet(err, LAKE_ECONFIG, "%s: not a lake registry", r->path);
        return rc;
    }
    if (n == 0 && !create) return errSet(err, LAKE_ECONFIG, "%s: not a lake registry (empty)", r->path);
    if (n > 0) {
        char *format = NULL, *sv = NULL;
        int64_t hasMeta = 0;
        queryInt(r, &hasMeta, NULL,
                 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'lake_meta'",
                 NULL);
        if (!hasMeta || metaGet(r, "format", &format, err) || !format ||
            strcmp(format, "lake-registry") != 0) {
            free(format);
            return errSet(err, LAKE_ECONFIG, "%s: not a lake registry", r->path);
        }
        free(format);
        if ((rc = metaGet(r, "schema_version", &sv, err))) return rc;
        version = sv ? strtoll(sv, NULL, 10) : 0;
        free(sv);
        if (version < 1 || version > REGISTRY_SCHEMA_VERSION)
            return errSet(err, LAKE_ECONFIG,
                          "%s: registry schema version %lld; this lake reads 1 to %d (upgrade lake)",
                          r->path, (long long)version, REGISTRY_SCHEMA_VERSION);
    }
    if ((rc = exec(r, "PRAGMA journal_mode = WAL", err))) return rc;
    if (version == REGISTRY_SCHEMA_VERSION) return 0;

    if ((rc = exec(r, "BEGIN IMMEDIATE", err))) return rc;
    for (int64_t v = version; v < REGISTRY_SCHEMA_VERSION; v++)
        if ((rc = exec(r, migrations[v], err))) goto fail;
    char buf[32];
    snprintf(buf, sizeof buf, "%d", REGISTRY_SCHEMA_VERSION);
    if ((rc = metaSet(r, "schema_version", buf, err))) goto fail;
    if (version == 0) {
        char id[ID_LEN + 1], now[32];
        rfc3339Now(now);
        if ((rc = idNew(id, err))) goto fail;
        rc = run(r, err, "create marker", "INSERT INTO directory_marker VALUES (1, ?, 0)", id, NULL);
        if (!rc) rc = metaSet(r, "created_at", now, err);
        if (!rc && stage_url) rc = metaSet(r, "stage", stage_url, err);
        if (rc) goto fail;
    }
    if ((rc = exec(r, "COMMIT", err))) goto fail;
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryOpen(const char *path, int create, const char *stage_url, registry **out,
                 lakeError *err) {
    *out = NULL;
    registry *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = 0;
    if (sqlite3_open_v2(path, &r->db, flags, NULL) != SQLITE_OK) {
        /* missing is 66 only where it must exist (lake-metasrv serve) */
        rc = !create && r->db && sqlite3_errcode(r->db) == SQLITE_CANTOPEN
                 ? errSet(err, LAKE_ENOINPUT, "%s: no such registry", path)
                 : errSet(err, LAKE_EFAIL, "%s: cannot open registry", path);
        goto fail;
    }
    sqlite3_busy_timeout(r->db, BUSY_TIMEOUT_MS);
    if ((rc = checkAndMigrate(r, create, stage_url, err))) goto fail;
    if ((rc = exec(r, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", err))) goto fail;
    if ((rc = metaGet(r, "stage", &r->stage, err))) goto fail;
    sqlite3_stmt *st = prep(r, err, "SELECT authority_id FROM directory_marker WHERE singleton = 1", NULL);
    if (!st) { rc = err->code; goto fail; }
    if (sqlite3_step(st) == SQLITE_ROW) r->authority = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    *out = r;
    return 0;
fail:
    registryClose(r);
    return rc;
}

void registryClose(registry *r) {
    if (!r) return;
    sqlite3_close_v2(r->db);
    free(r->path);
    free(r->stage);
    free(r->authority);
    free(r);
}

const char *registryStage(const registry *r) { return r->stage; }

void registrySetScanHook(registry *r, void (*hook)(void *, int), void *ctx) {
    r->scan_hook = hook;
    r->scan_ctx = ctx;
}

/* The generation; -1 when the registry has no marker. */
static int readGeneration(registry *r, int64_t *gen, lakeError *err) {
    int rc = queryInt(r, gen, err, "SELECT generation FROM directory_marker WHERE singleton = 1", NULL);
    if (rc < 0) { *gen = -1; return 0; }
    return rc;
}

/* One scan of the directory into a new array, bounded. */
static int scanDirectory(registry *r, const snapshotBounds *b, cJSON **out, lakeError *err) {
    *out = NULL;
    /* namespaces and tables in one ordered pass: a namespace's row has an
     * empty table name, so it sorts first */
    sqlite3_stmt *st = prep(r, err,
                            "SELECT name, '', NULL, NULL FROM namespaces "
                            "UNION ALL SELECT namespace, name, id, schema FROM tables WHERE dropped = 0 "
                            "ORDER BY 1, 2",
                            NULL);
    if (!st) return err->code;
    cJSON *arr = cJSON_CreateArray();
    int64_t count = 0, bytes = 2;
    int rc = 0, s = SQLITE_DONE;
    while (!rc && arr && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *ns = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        if (!name[0]) {
            cJSON_AddStringToObject(e, "kind", "namespace");
            cJSON_AddStringToObject(e, "namespace", ns);
        } else {
            cJSON_AddStringToObject(e, "kind", "table");
            cJSON_AddStringToObject(e, "namespace", ns);
            cJSON_AddStringToObject(e, "name", name);
            cJSON_AddStringToObject(e, "id", (const char *)sqlite3_column_text(st, 2));
            if (sqlite3_column_bytes(st, 3) > b->max_schema_bytes) {
                cJSON_Delete(e);
                rc = errSetStatus(err, "payload_too_large", "a table's schema exceeds %lld bytes",
                                  (long long)b->max_schema_bytes);
                break;
            }
            cJSON *schema = cJSON_Parse((const char *)sqlite3_column_text(st, 3));
            if (!schema) schema = cJSON_CreateArray();
            cJSON_AddItemToObject(e, "schema", schema);
        }
        char *text = cJSON_PrintUnformatted(e);
        int64_t len = text ? (int64_t)strlen(text) + 1 : 0;
        free(text);
        /* accounted before it is kept */
        if (++count > b->max_entries || (bytes += len) > b->max_bytes) {
            cJSON_Delete(e);
            rc = errSetStatus(err, "payload_too_large",
                              "catalog snapshot exceeds %lld entries or %lld bytes",
                              (long long)b->max_entries, (long long)b->max_bytes);
            break;
        }
        cJSON_AddItemToArray(arr, e);
    }
    if (!rc && !arr) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "snapshot");
    else if (!rc && s != SQLITE_DONE) rc = s == SQLITE_ROW ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "snapshot")
                                                         : sqlErr(r, err, "scan");
    sqlite3_finalize(st);
    if (rc) cJSON_Delete(arr);
    else *out = arr;
    return rc;
}

int registrySnapshot(registry *r, int64_t known, const snapshotBounds *bounds, int allow_unmarked,
                     cJSON **answer, lakeError *err) {
    *answer = NULL;
    int rc;
    for (int scan = 1; scan <= REGISTRY_SNAPSHOT_SCANS; scan++) {
        int64_t g1, g2;
        cJSON *entries;
        if ((rc = readGeneration(r, &g1, err))) return rc;
        if (g1 < 0) {
            if (!allow_unmarked)
                return errSetStatus(err, "failed_precondition",
                                    "registry has no directory marker; not authoritative");
            logWarn("%s: registry has no directory marker; reading it by full scan "
                    "(development compatibility)", r->path);
            if ((rc = scanDirectory(r, bounds, &entries, err))) return rc;
            g2 = g1 = 0;
        } else {
            if (known >= 0 && known == g1) {
                *answer = cJSON_CreateObject();
                cJSON_AddStringToObject(*answer, "status", "not_modified");
                cJSON_AddNumberToObject(*answer, "generation", (double)g1);
                if (r->authority) cJSON_AddStringToObject(*answer, "authority", r->authority);
                return 0;
            }
            if ((rc = scanDirectory(r, bounds, &entries, err))) return rc;
            if (r->scan_hook) r->scan_hook(r->scan_ctx, scan);
            if ((rc = readGeneration(r, &g2, err))) { cJSON_Delete(entries); return rc; }
        }
        if (g1 == g2) {
            *answer = cJSON_CreateObject();
            cJSON_AddStringToObject(*answer, "status", "snapshot");
            cJSON_AddNumberToObject(*answer, "generation", (double)g1);
            if (r->authority) cJSON_AddStringToObject(*answer, "authority", r->authority);
            cJSON_AddItemToObject(*answer, "entries", entries);
            return 0;
        }
        cJSON_Delete(entries);
    }
    return errSetStatus(err, "unavailable", "catalog changed during %d scans; retry",
                        REGISTRY_SNAPSHOT_SCANS);
}

/* The live table's id and current version; not_found otherwise. */
static int findTable(registry *r, const char *ns, const char *name, char id[64], int64_t *version,
                     char **schema, lakeError *err) {
    sqlite3_stmt *st = prep(r, err,
                            "SELECT id, version, schema FROM tables "
                            "WHERE namespace = ? AND name = ? AND dropped = 0",
                            ns, name, NULL);
    if (!st) return err->code;
    int s = sqlite3_step(st), rc = 0;
    if (s == SQLITE_ROW) {
        snprintf(id, 64, "%s", (const char *)sqlite3_column_text(st, 0));
        *version = sqlite3_column_int64(st, 1);
        if (schema && !(*schema = strdup((const char *)sqlite3_column_text(st, 2))))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    } else if (s == SQLITE_DONE) {
        rc = errSetStatus(err, "not_found", "%s.%s: no such table", ns, name);
    } else {
        rc = sqlErr(r, err, "find table");
    }
    sqlite3_finalize(st);
    return rc;
}

int registryResolve(registry *r, const char *ns, const char *name, int64_t version,
                    cJSON **answer, lakeError *err) {
    *answer = NULL;
    char id[64];
    int64_t current;
    char *schema = NULL;
    int rc;
    /* one read transaction: the version and its segments agree */
    if ((rc = exec(r, "BEGIN", err))) return rc;
    if ((rc = findTable(r, ns, name, id, &current, &schema, err))) goto out;
    if (version < 0) version = current;
    if (version > current) {
        rc = errSetStatus(err, "not_found", "%s.%s: no version %lld (current is %lld)", ns, name,
                          (long long)version, (long long)current);
        goto out;
    }
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    sqlite3_stmt *st = prep(r, err,
                            "SELECT location, size, sha256, rows FROM segments "
                            "WHERE table_id = ? AND version <= CAST(? AS INTEGER) ORDER BY version, seq",
                            id, vbuf, NULL);
    if (!st) { rc = err->code; goto out; }
    cJSON *a = cJSON_CreateObject(), *segs = cJSON_CreateArray();
    cJSON_AddStringToObject(a, "id", id);
    cJSON_AddStringToObject(a, "namespace", ns);
    cJSON_AddStringToObject(a, "name", name);
    cJSON_AddNumberToObject(a, "version", (double)version);
    cJSON *sch = cJSON_Parse(schema);
    cJSON_AddItemToObject(a, "schema", sch ? sch : cJSON_CreateArray());
    cJSON_AddItemToObject(a, "segments", segs);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddStringToObject(g, "location", (const char *)sqlite3_column_text(st, 0));
        cJSON_AddNumberToObject(g, "size", (double)sqlite3_column_int64(st, 1));
        cJSON_AddStringToObject(g, "sha256", (const char *)sqlite3_column_text(st, 2));
        cJSON_AddNumberToObject(g, "rows", (double)sqlite3_column_int64(st, 3));
        cJSON_AddItemToArray(segs, g);
    }
    if (s != SQLITE_DONE) rc = sqlErr(r, err, "read segments");
    sqlite3_finalize(st);
    if (rc) cJSON_Delete(a);
    else *answer = a;
out:
    exec(r, "COMMIT", NULL);
    free(schema);
    return rc;
}

int registryReferences(registry *r, const char *after, int64_t limit, int64_t max_bytes,
                       cJSON **answer, lakeError *err) {
    *answer = NULL;
    char lbuf[32];
    snprintf(lbuf, sizeof lbuf, "%lld", (long long)limit + 1);
    sqlite3_stmt *st = prep(r, err,
                            "SELECT location FROM ("
                            " SELECT s.location FROM segments s JOIN tables t ON t.id = s.table_id"
                            "  WHERE t.dropped = 0"
                            " UNION"
                            " SELECT f.location FROM version_files f JOIN tables t ON t.id = f.table_id"
                            "  WHERE t.dropped = 0)"
                            " WHERE location > ? ORDER BY location LIMIT CAST(? AS INTEGER)",
                            after ? after : "", lbuf, NULL);
    if (!st) return err->code;
    cJSON *a = cJSON_CreateObject(), *locs = cJSON_AddArrayToObject(a, "locations");
    int64_t n = 0, bytes = 0;
    int s, more = 0, rc = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *loc = (const char *)sqlite3_column_text(st, 0);
        int64_t len = (int64_t)strlen(loc) + 3; /* quotes and a comma */
        if (n == limit || (n > 0 && bytes + len > max_bytes)) {
            more = 1;
            break;
        }
        cJSON_AddItemToArray(locs, cJSON_CreateString(loc));
        n++;
        bytes += len;
    }
    if (s != SQLITE_ROW && s != SQLITE_DONE) rc = sqlErr(r, err, "read references");
    sqlite3_finalize(st);
    cJSON_AddBoolToObject(a, "more", more);
    if (rc || !locs) {
        cJSON_Delete(a);
        return rc ? rc : errSetErrno(err, LAKE_EFAIL, ENOMEM, "references");
    }
    *answer = a;
    return 0;
}

/* Validate one segment object. */
static int checkSegment(const cJSON *g, const stage *st, lakeError *err) {
    const cJSON *loc = cJSON_GetObjectItemCaseSensitive(g, "location");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(g, "size");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(g, "sha256");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(g, "rows");
    if (!cJSON_IsString(loc) || !cJSON_IsNumber(size) || size->valuedouble < 0 ||
        !cJSON_IsString(sha) || !sha256IsHex(sha->valuestring) || !cJSON_IsNumber(rows) ||
        rows->valuedouble < 0)
        return errSetStatus(err, "invalid_argument",
                            "append: each segment needs location, size, sha256 and rows");
    if (st && stageContains(st, loc->valuestring, NULL))
        return errSetStatus(err, "invalid_argument", "append: a segment lies outside the managed stage");
    return 0;
}

/* 0 when version of table id added exactly segments (by location, in
 * order); invalid_argument otherwise. */
static int sameSegments(registry *r, const char *id, int64_t version, const cJSON *segments,
                        lakeError *err) {
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    sqlite3_stmt *st = prep(r, err, "SELECT location FROM segments WHERE table_id = ? AND "
                            "version = CAST(? AS INTEGER) ORDER BY seq", id, vbuf, NULL);
    if (!st) return err->code;
    const cJSON *g = segments->child;
    int same = 1, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const cJSON *loc = cJSON_GetObjectItemCaseSensitive(g, "location");
        if (!g || strcmp(loc->valuestring, (const char *)sqlite3_column_text(st, 0)) != 0) same = 0;
        if (g) g = g->next;
    }
    int rc = s != SQLITE_DONE ? sqlErr(r, err, "read segments") : 0;
    sqlite3_finalize(st);
    if (!rc && (!same || g))
        rc = errSetStatus(err, "invalid_argument", "a segment of this append is already committed in version %lld",
                          (long long)version);
    return rc;
}

static int bumpGeneration(registry *r, int64_t *generation, lakeError *err) {
    int rc = exec(r, "UPDATE directory_marker SET generation = generation + 1 WHERE singleton = 1", err);
    if (!rc) rc = readGeneration(r, generation, err);
    if (!rc && *generation < 0) *generation = 0; /* unmarked: as its snapshots say */
    return rc;
}

int registryAppend(registry *r, const stage *stg, const char *ns, const char *name,
                   int64_t expected, const cJSON *segments, const cJSON *files,
                   const char *principal, cJSON **answer, lakeError *err) {
    *answer = NULL;
    const cJSON *g, *f;
    if (!cJSON_IsArray(segments) || cJSON_GetArraySize(segments) == 0)
        return errSetStatus(err, "invalid_argument", "append: at least one segment is needed");
    if (files && !cJSON_IsArray(files))
        return errSetStatus(err, "invalid_argument", "append: files must be an array of locations");
    cJSON_ArrayForEach(g, segments) if (checkSegment(g, stg, err)) return err->code;
    cJSON_ArrayForEach(f, files) {
        if (!cJSON_IsString(f))
            return errSetStatus(err, "invalid_argument", "append: files must be locations");
        if (stg && stageContains(stg, f->valuestring, NULL))
            return errSetStatus(err, "invalid_argument",
                                "append: a referenced FILE lies outside the managed stage");
    }

    int rc = exec(r, "BEGIN IMMEDIATE", err);
    if (rc) return rc;
    char id[64];
    int64_t current, committed;
    if ((rc = findTable(r, ns, name, id, &current, NULL, err))) goto fail;
    const char *first = cJSON_GetObjectItemCaseSensitive(segments->child, "location")->valuestring;
    rc = queryInt(r, &committed, err,
                  "SELECT version FROM segments WHERE location = ? AND table_id = ?", first, id, NULL);
    if (rc > 0) goto fail;
    if (rc == 0) { /* a retry of an append that already committed? */
        rc = sameSegments(r, id, committed, segments, err);
        rollback(r);
        if (rc) return rc;
        goto answer;
    }
    rc = 0;
    if (expected != current) {
        rc = errSetStatus(err, "conflict", "%s.%s is at version %lld, not %lld", ns, name,
                          (long long)current, (long long)expected);
        goto fail;
    }
    committed = current + 1;
    char vbuf[32], now[32], seq[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)committed);
    rfc3339Now(now);
    if ((rc = run(r, err, "insert version", "INSERT INTO versions VALUES (?, CAST(? AS INTEGER), ?, ?)", id,
                  vbuf, now, principal ? principal : "", NULL)))
        goto fail;
    int n = 0;
    cJSON_ArrayForEach(g, segments) {
        snprintf(seq, sizeof seq, "%d", n++);
        sqlite3_stmt *st = prep(r, err, "INSERT INTO segments VALUES (?, CAST(? AS INTEGER), CAST(? AS INTEGER), ?, ?, ?, ?)",
                  id, vbuf, seq, cJSON_GetObjectItemCaseSensitive(g, "location")->valuestring, NULL);
        if (!st) { rc = err->code; goto fail; }
        sqlite3_bind_int64(st, 5, (sqlite3_int64)cJSON_GetObjectItemCaseSensitive(g, "size")->valuedouble);
        sqlite3_bind_text(st, 6, cJSON_GetObjectItemCaseSensitive(g, "sha256")->valuestring, -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)cJSON_GetObjectItemCaseSensitive(g, "rows")->valuedouble);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sqlErr(r, err, "insert segment");
        sqlite3_finalize(st);
        if (rc) goto fail;
    }
    cJSON_ArrayForEach(f, files) {
        if ((rc = run(r, err, "insert file", "INSERT OR IGNORE INTO version_files VALUES (?, CAST(? AS INTEGER), ?)",
                      id, vbuf, f->valuestring, NULL)))
            goto fail;
    }
    rc = run(r, err, "update version", "UPDATE tables SET version = CAST(? AS INTEGER) WHERE id = ?", vbuf, id, NULL);
    if (rc || (rc = exec(r, "COMMIT", err))) goto fail;
answer:
    *answer = cJSON_CreateObject();
    cJSON_AddNumberToObject(*answer, "version", (double)committed);
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryCreateNamespace(registry *r, const char *ns, int64_t *generation, lakeError *err) {
    int64_t exists;
    char now[32];
    rfc3339Now(now);
    int rc = exec(r, "BEGIN IMMEDIATE", err);
    if (rc) return rc;
    rc = queryInt(r, &exists, err, "SELECT 1 FROM namespaces WHERE name = ?", ns, NULL);
    if (rc == 0) {
        rc = errSetStatus(err, "failed_precondition", "%s: namespace exists", ns);
        goto fail;
    }
    if (rc > 0) goto fail;
    rc = run(r, err, "create namespace", "INSERT INTO namespaces VALUES (?, ?)", ns, now, NULL);
    if (rc || (rc = bumpGeneration(r, generation, err)) || (rc = exec(r, "COMMIT", err))) goto fail;
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryCreateTable(registry *r, const char *ns, const char *name, const char *schema,
                        int64_t *generation, lakeError *err) {
    int64_t exists;
    char id[ID_LEN + 1], now[32];
    rfc3339Now(now);
    int rc = idNew(id, err);
    if (rc || (rc = exec(r, "BEGIN IMMEDIATE", err))) return rc;
    rc = queryInt(r, &exists, err, "SELECT 1 FROM namespaces WHERE name = ?", ns, NULL);
    if (rc < 0) rc = errSetStatus(err, "not_found", "%s: no such namespace", ns);
    if (rc) goto fail;
    rc = queryInt(r, &exists, err, "SELECT 1 FROM tables WHERE namespace = ? AND name = ? AND dropped = 0",
                  ns, name, NULL);
    if (rc == 0) {
        rc = errSetStatus(err, "failed_precondition", "%s.%s: table exists", ns, name);
        goto fail;
    }
    if (rc > 0) goto fail;
    rc = run(r, err, "create table", "INSERT INTO tables(id, namespace, name, schema, created_at) "
             "VALUES (?, ?, ?, ?, ?)", id, ns, name, schema, now, NULL);
    if (!rc) rc = run(r, err, "create version 0", "INSERT INTO versions VALUES (?, 0, ?, NULL)", id, now, NULL);
    if (rc || (rc = bumpGeneration(r, generation, err)) || (rc = exec(r, "COMMIT", err))) goto fail;
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryDropTable(registry *r, const char *ns, const char *name, int64_t *generation,
                      lakeError *err) {
    int rc = exec(r, "BEGIN IMMEDIATE", err);
    if (rc) return rc;
    rc = run(r, err, "drop table", "UPDATE tables SET dropped = 1 WHERE namespace = ? AND name = ? AND dropped = 0",
             ns, name, NULL);
    if (!rc && sqlite3_changes(r->db) == 0)
        rc = errSetStatus(err, "not_found", "%s.%s: no such table", ns, name);
    if (rc || (rc = bumpGeneration(r, generation, err)) || (rc = exec(r, "COMMIT", err))) goto fail;
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryAddPrincipal(registry *r, const char *name, const char *role, const char *token_sha256,
                         lakeError *err) {
    char now[32];
    rfc3339Now(now);
    /* a new name, or a revoked one issued again (rotation) */
    sqlite3_stmt *st = prep(r, err, "INSERT INTO principals(name, role, token_sha256, created_at) "
                            "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET role = excluded.role, "
                            "token_sha256 = excluded.token_sha256, created_at = excluded.created_at, "
                            "revoked_at = NULL WHERE revoked_at IS NOT NULL",
                            name, role, token_sha256, now, NULL);
    if (!st) return err->code;
    int s = sqlite3_step(st), rc = 0;
    if (s == SQLITE_CONSTRAINT || (sqlite3_extended_errcode(r->db) & 0xff) == SQLITE_CONSTRAINT)
        rc = errSetStatus(err, "failed_precondition", "role %s is unknown", role);
    else if (s != SQLITE_DONE)
        rc = sqlErr(r, err, "add principal");
    else if (sqlite3_changes(r->db) == 0)
        rc = errSetStatus(err, "failed_precondition", "principal %s exists; revoke it first to issue a new token",
                          name);
    sqlite3_finalize(st);
    return rc;
}

int registryFindPrincipal(registry *r, const char *name, registryPrincipal *p, lakeError *err) {
    memset(p, 0, sizeof *p);
    sqlite3_stmt *st = prep(r, err, "SELECT role, token_sha256, revoked_at IS NOT NULL FROM principals "
                            "WHERE name = ?", name, NULL);
    if (!st) return err->code;
    int s = sqlite3_step(st), rc = 0;
    if (s == SQLITE_ROW) {
        snprintf(p->name, sizeof p->name, "%s", name);
        snprintf(p->role, sizeof p->role, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(p->token_sha256, sizeof p->token_sha256, "%s", (const char *)sqlite3_column_text(st, 1));
        p->revoked = sqlite3_column_int(st, 2);
    } else if (s == SQLITE_DONE) {
        rc = errSetStatus(err, "not_found", "no principal %s", name);
    } else {
        rc = sqlErr(r, err, "find principal");
    }
    sqlite3_finalize(st);
    return rc;
}

int registryListPrincipals(registry *r, struct cJSON **list, lakeError *err) {
    *list = NULL;
    sqlite3_stmt *st = prep(r, err, "SELECT name, role, created_at, revoked_at FROM principals ORDER BY name",
                            NULL);
    if (!st) return err->code;
    cJSON *arr = cJSON_CreateArray();
    int s = SQLITE_DONE;
    while (arr && (s = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", (const char *)sqlite3_column_text(st, 0));
        cJSON_AddStringToObject(o, "role", (const char *)sqlite3_column_text(st, 1));
        cJSON_AddStringToObject(o, "created_at", (const char *)sqlite3_column_text(st, 2));
        if (sqlite3_column_type(st, 3) == SQLITE_NULL) cJSON_AddNullToObject(o, "revoked_at");
        else cJSON_AddStringToObject(o, "revoked_at", (const char *)sqlite3_column_text(st, 3));
        cJSON_AddItemToArray(arr, o);
    }
    int rc = arr && s == SQLITE_DONE ? 0 : arr ? sqlErr(r, err, "list principals")
                                               : errSetErrno(err, LAKE_EFAIL, ENOMEM, "principals");
    sqlite3_finalize(st);
    if (rc) cJSON_Delete(arr);
    else *list = arr;
    return rc;
}

int registryRevokePrincipal(registry *r, const char *name, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    int rc = run(r, err, "revoke principal",
                 "UPDATE principals SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", now, name, NULL);
    if (!rc && sqlite3_changes(r->db) == 0)
        rc = errSetStatus(err, "not_found", "no active principal %s", name);
    return rc;
}

int registryGeneration(registry *r, int64_t *generation, lakeError *err) {
    return readGeneration(r, generation, err);
}

int registryHasMarker(const registry *r) { return r->authority != NULL; }
