/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * registry.c - the registry's logic, once, over the SQL driver interface
 * (registry/sqldb.h): SQLite (the embedded default) or PostgreSQL.
 *
 * Statements are prepared per call: registry calls are rare next to the
 * I/O around them, and this keeps every function self-contained with one
 * cleanup path.  Writes run in write transactions: on SQLite BEGIN
 * IMMEDIATE, so concurrent writers queue on its lock; on PostgreSQL the
 * rows a write depends on are locked (SELECT … FOR UPDATE): an append locks
 * its table's row, DDL the directory marker, so two instances taking
 * appends for one table, or DDL, at once are serialised and the
 * generation only rises.
 */
#include "catalog/registry.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/registry/sqldb.h"
#include "core/fsutil.h"
#include "core/id.h"
#include "core/jsonstrict.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/sha256.h"
#include "catalog/names.h"
#include "catalog/schema.h"

struct registry {
    sqlDb *db;
    char *path;      /* for messages: the file, or the redacted URL */
    char *stage;
    char *authority; /* the marker's authority id; NULL without a marker */
    int embedded;    /* REGISTRY_EMBEDDED: file faults name the file */
    void (*scan_hook)(void *ctx, int scan);
    void *scan_ctx;
    registryAudit audit; /* registrySetAudit's record, while auditing */
    int auditing;
    int audit_written;   /* rows commit() wrote since it was set */
    /* registrySetScope's: the privilege findTable checks first, in the
     * caller's transaction; privilege NULL: none */
    const char *scope_principal, *scope_role, *scope_privilege;
};

/* Record a database failure: message redacted to what failed, detail in
 * cause.  Busy (a lock, a serialization failure) and a lost connection
 * are `unavailable` (503, 75): retry later; so is a full disk: the
 * transaction rolled back, nothing changed, and the same request (an
 * append is idempotent) succeeds once space is freed, as a mail server
 * defers rather than refuses mail when its spool is full.  The embedded
 * registry, whose files are the user's own, names the file and the
 * system's reason instead: 75 for a full disk, 77 for a file or directory
 * this user may not write (a read-only lake, or one another user owns). */
/* Into out: "" when path belongs to this user, else " (it belongs to
 * NAME)", for a message about a registry this user may not write. */
static void ownerNote(const char *path, char *out, size_t n) {
    struct stat st;
    out[0] = '\0';
    if (stat(path, &st) != 0 || st.st_uid == geteuid()) return;
    char user[256];
    if (!userName(st.st_uid, user, sizeof user)) snprintf(out, n, " (it belongs to %.64s)", user);
    else snprintf(out, n, " (it belongs to uid %lu)", (unsigned long)st.st_uid);
}

/* The embedded registry's file fault (SQLC_FULL or SQLC_DENIED), naming
 * the file and the system's reason. */
static int fileFault(registry *r, sqlClass cls, lakeError *err) {
    int sys = sqlErrorErrno(r->db);
    const char *why = sys ? strerror(sys) : cls == SQLC_FULL ? "disk full" : "read-only";
    if (cls == SQLC_FULL) return errSet(err, LAKE_ETEMP, "%s: %s; retry once space is freed", r->path, why);
    char owner[96];
    ownerNote(r->path, owner, sizeof owner);
    return errSet(err, LAKE_EPERM, "%s: %s%s%s; the registry and its directory must be writable "
                  "(SQLite keeps -wal and -shm files beside it)", r->path, why,
                  sys == EROFS ? "" : " for this user", owner);
}

static int sqlErr(registry *r, lakeError *err, const char *what) {
    int rc;
    sqlClass cls = sqlErrorClass(r->db);
    if (r->embedded && (cls == SQLC_FULL || cls == SQLC_DENIED)) {
        rc = fileFault(r, cls, err);
    } else {
        switch (cls) {
        case SQLC_BUSY: rc = errSetStatus(err, "unavailable", "registry busy: %s", what); break;
        case SQLC_GONE: rc = errSetStatus(err, "unavailable", "registry unreachable: %s", what); break;
        case SQLC_READONLY: rc = errSetStatus(err, "unavailable", "registry read-only: %s", what); break;
        case SQLC_FULL: rc = errSetStatus(err, "unavailable", "registry: disk full; retry once space is freed"); break;
        case SQLC_DENIED: rc = errSetStatus(err, "internal", "registry: its files may not be written: %s", what); break;
        default: rc = errSetStatus(err, "internal", "registry: %s failed", what); break;
        }
    }
    if (err) snprintf(err->cause, sizeof err->cause, "%s: %s", what, sqlErrorText(r->db));
    return rc;
}

static int exec(registry *r, const char *sql, lakeError *err) {
    /* the SQL goes to the cause (logs), never to the message */
    if (sqlExec(r->db, sql) != 0) return sqlErr(r, err, "a statement");
    return 0;
}

static void rollback(registry *r) { sqlExec(r->db, "ROLLBACK"); }

/* Prepare sql and bind the text arguments ap (NULL-terminated list). */
static sqlStmt *vprep(registry *r, lakeError *err, const char *sql, va_list ap) {
    sqlStmt *st = sqlPrepare(r->db, sql);
    if (!st) {
        sqlErr(r, err, "prepare");
        return NULL;
    }
    const char *a;
    for (int i = 1; (a = va_arg(ap, const char *)); i++) sqlBindText(st, i, a);
    return st;
}

static sqlStmt *prep(registry *r, lakeError *err, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    sqlStmt *st = vprep(r, err, sql, ap);
    va_end(ap);
    return st;
}

/* Step a statement that returns no rows and finalize it. */
static int done(registry *r, sqlStmt *st, lakeError *err, const char *what) {
    int rc = sqlStep(st) == SQL_DONE ? 0 : sqlErr(r, err, what);
    sqlFinalize(st);
    return rc;
}

/* Run a statement that returns no rows, with text arguments (NULL-
 * terminated); what names it in an error. */
static int run(registry *r, lakeError *err, const char *what, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    sqlStmt *st = vprep(r, err, sql, ap);
    va_end(ap);
    if (!st) return err->code;
    return done(r, st, err, what);
}


/* Commit a write transaction; with an audit record set (registrySetAudit)
 * its row is inserted first, in the transaction, so the change and its
 * row are committed together or not at all. */
static int commit(registry *r, lakeError *err) {
    int rc = r->auditing ? registryAuditWrite(r, &r->audit, "ok", err) : 0;
    if (!rc) rc = exec(r, "COMMIT", err);
    if (!rc && r->auditing) r->audit_written++;
    return rc;
}

/* Step a one-value query and finalize it: *out gets column 0 as integer.
 * Returns 0 found, -1 no row, or an error code. */
static int oneInt(registry *r, sqlStmt *st, int64_t *out, lakeError *err) {
    int s = sqlStep(st), rc;
    if (s == SQL_ROW) {
        *out = sqlColumnInt64(st, 0);
        rc = 0;
    } else if (s == SQL_DONE) {
        rc = -1;
    } else {
        rc = sqlErr(r, err, "query");
    }
    sqlFinalize(st);
    return rc;
}

/* A one-value query with text arguments (NULL-terminated). */
static int queryInt(registry *r, int64_t *out, lakeError *err, const char *sql, ...) {
    va_list ap;
    va_start(ap, sql);
    sqlStmt *st = vprep(r, err, sql, ap);
    va_end(ap);
    if (!st) return err->code;
    return oneInt(r, st, out, err);
}

/* Columns first.. of st's row into o under keys[0..n), a NULL as null;
 * 0 when out of memory. */
static int rowInto(sqlStmt *st, int first, const char *const *keys, int n, cJSON *o) {
    int ok = o != NULL;
    for (int i = 0; ok && i < n; i++) {
        const char *v = sqlColumnText(st, first + i);
        ok = (v ? cJSON_AddStringToObject(o, keys[i], v) : cJSON_AddNullToObject(o, keys[i])) != NULL;
    }
    return ok;
}

/* "role:ROLE", as grants name a role, into out. */
static void roleGrantee(const char *role, char out[40]) { snprintf(out, 40, "role:%s", role ? role : ""); }

static int metaGet(registry *r, const char *key, char **value, lakeError *err) {
    *value = NULL;
    sqlStmt *st = prep(r, err, "SELECT value FROM lake_meta WHERE key = ?", key, NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    if (s == SQL_ROW) {
        *value = strdup(sqlColumnText(st, 0));
        if (!*value) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    } else if (s != SQL_DONE) {
        rc = sqlErr(r, err, "read lake_meta");
    }
    sqlFinalize(st);
    return rc;
}

static int metaSet(registry *r, const char *key, const char *value, lakeError *err) {
    return run(r, err, "write lake_meta",
               "INSERT INTO lake_meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
               key, value, NULL);
}

/* Before schema 5 every user token could read and append to every table:
 * an upgraded registry keeps that through grants to PUBLIC on the whole
 * catalog, said once in the log, which an admin may revoke. */
static int grantUpgraded(registry *r, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    int rc = 0;
    for (const char *const *p = (const char *const[]){"read", "write", NULL}; *p && !rc; p++)
        rc = run(r, err, "grant to PUBLIC", "INSERT INTO grants VALUES ('*', ?, 'PUBLIC', ?, 'upgrade')", *p, now,
                 NULL);
    return rc;
}

/* Said once the upgrade committed; an embedded registry has no users to
 * tell. */
static void grantUpgradedSay(registry *r) {
    if (!r->embedded)
        logWarn("%s: upgraded to registry schema %d: granted read, write ON * TO PUBLIC, the access every user "
                "token had before grants existed (see it with lake-catalog grants; revoke it with lake-catalog "
                "revoke read ON '*' FROM PUBLIC)", r->path, REGISTRY_SCHEMA_VERSION);
}

/* The schema version the registry holds now: 0 when it is empty. */
static int schemaVersionNow(registry *r, int64_t *version, lakeError *err) {
    int64_t hasMeta = 0;
    char *sv = NULL;
    *version = 0;
    int rc = queryInt(r, &hasMeta, err, r->db->dialect->count_named_table, "lake_meta", NULL);
    if (!rc && hasMeta) rc = metaGet(r, "schema_version", &sv, err);
    if (!rc && sv) *version = strtoll(sv, NULL, 10);
    free(sv);
    return rc;
}

/* Refuse anything but a lake registry this code can read (78, nothing
 * written); mode REGISTRY_NEW refuses an existing one.  Then migrate
 * forward. */
static int checkAndMigrate(registry *r, int mode, const char *stage_url, lakeError *err) {
    const sqlDialect *d = r->db->dialect;
    int64_t n = 0, version = 0;
    int rc = queryInt(r, &n, err, d->count_tables, NULL);
    if (rc > 0) {
        if (sqlErrorClass(r->db) == SQLC_NOTADB)
            return errSet(err, LAKE_ECONFIG, "%s: not a lake registry", r->path);
        return rc;
    }
    if (n == 0 && mode == REGISTRY_EXISTING)
        return errSet(err, LAKE_ECONFIG, "%s: not a lake registry (empty)", r->path);
    if (n > 0) {
        char *format = NULL, *sv = NULL;
        int64_t hasMeta = 0;
        queryInt(r, &hasMeta, NULL, d->count_named_table, "lake_meta", NULL);
        if (!hasMeta || metaGet(r, "format", &format, err) || !format ||
            strcmp(format, "lake-registry") != 0) {
            free(format);
            return errSet(err, LAKE_ECONFIG, "%s: not a lake registry", r->path);
        }
        free(format);
        if (mode == REGISTRY_NEW)
            return errSet(err, LAKE_EFAIL, "%s exists; init never touches an existing registry", r->path);
        if ((rc = metaGet(r, "schema_version", &sv, err))) return rc;
        version = sv ? strtoll(sv, NULL, 10) : 0;
        free(sv);
        if (version < 1 || version > REGISTRY_SCHEMA_VERSION)
            return errSet(err, LAKE_ECONFIG,
                          "%s: registry schema version %lld; this lake reads 1 to %d (upgrade lake)",
                          r->path, (long long)version, REGISTRY_SCHEMA_VERSION);
    }
    if (d->after_check && (rc = exec(r, d->after_check, err))) return rc;
    if (version == REGISTRY_SCHEMA_VERSION) return 0;

    if ((rc = exec(r, d->begin_write, err))) return rc;
    /* another opener (a process, or a client on another thread) may have
     * migrated between the check and the write lock: looked at again
     * under the lock, and checked afresh if so */
    int64_t now;
    if ((rc = schemaVersionNow(r, &now, err))) goto fail;
    if (now != version) {
        rollback(r);
        return checkAndMigrate(r, mode, stage_url, err);
    }
    for (int64_t v = version; v < REGISTRY_SCHEMA_VERSION; v++)
        if ((rc = exec(r, d->migrations[v], err))) goto fail;
    char buf[32];
    snprintf(buf, sizeof buf, "%d", REGISTRY_SCHEMA_VERSION);
    if ((rc = metaSet(r, "schema_version", buf, err))) goto fail;
    int before_grants = version > 0 && version < REGISTRY_SCHEMA_GRANTS;
    if (before_grants && (rc = grantUpgraded(r, err))) goto fail;
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
    if (before_grants) grantUpgradedSay(r);
    return 0;
fail:
    rollback(r);
    return rc;
}

/* Open db (taken over) as a registry shown as name. */
static int openOn(sqlDb *db, const char *name, int mode, const char *stage_url, registry **out,
                  lakeError *err) {
    registry *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(name))) {
        free(r);
        sqlClose(db);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    }
    r->db = db;
    r->embedded = (mode & REGISTRY_EMBEDDED) != 0;
    mode &= ~REGISTRY_EMBEDDED;
    const sqlDialect *d = db->dialect;
    /* instances starting at once migrate one after the other */
    int rc = d->schema_lock ? exec(r, d->schema_lock, err) : 0;
    if (!rc) rc = checkAndMigrate(r, mode, stage_url, err);
    if (d->schema_unlock && sqlExec(db, d->schema_unlock) != 0 && !rc) rc = sqlErr(r, err, "unlock");
    if (rc || (rc = metaGet(r, "stage", &r->stage, err))) goto fail;
    sqlStmt *st = prep(r, err, "SELECT authority_id FROM directory_marker WHERE singleton = 1", NULL);
    if (!st) { rc = err->code; goto fail; }
    int s = sqlStep(st);
    if (s == SQL_ROW && !(r->authority = strdup(sqlColumnText(st, 0))))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    else if (s == SQL_ERROR)
        rc = sqlErr(r, err, "read the marker");
    sqlFinalize(st);
    if (rc) goto fail;
    *out = r;
    return 0;
fail:
    registryClose(r);
    return rc;
}

int registryOpen(const char *path, int create, const char *stage_url, registry **out,
                 lakeError *err) {
    *out = NULL;
    sqlDb *db;
    if (sqliteDbOpen(path, (create & ~REGISTRY_EMBEDDED) != REGISTRY_EXISTING, &db, err)) return err->code;
    return openOn(db, path, create, stage_url, out, err);
}

int registryUrlKind(const char *url) {
    if (strncmp(url, "sqlite:", 7) == 0) return url[7] ? 1 : -1;
    if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0) return 2;
    return -1;
}

/* The end of the span of s starting at i that ends before any of stop. */
static size_t spanTo(const char *s, size_t i, const char *stop) { return i + strcspn(s + i, stop); }

void registryRedact(const char *url, char *out, size_t n) {
    /* userinfo's password, and every password= parameter, become *** */
    size_t o = 0, i = 0, len = strlen(url);
    const char *scheme = strstr(url, "://");
    size_t auth = scheme ? (size_t)(scheme - url) + 3 : 0;
    size_t at = scheme ? spanTo(url, auth, "@/?") : 0;
    size_t colon = scheme && url[at] == '@' ? spanTo(url, auth, ":@") : 0;
#define PUT(c) do { if (o + 1 < n) out[o++] = (c); } while (0)
    while (i < len) {
        if (scheme && url[at] == '@' && i == colon && url[colon] == ':') {
            PUT(':'); PUT('*'); PUT('*'); PUT('*');
            i = at;
            continue;
        }
        if ((i == 0 || url[i - 1] == '?' || url[i - 1] == '&' || url[i - 1] == ' ') &&
            strncmp(url + i, "password=", 9) == 0) {
            for (const char *k = "password=***"; *k; k++) PUT(*k);
            i = spanTo(url, i + 9, "& ");
            continue;
        }
        PUT(url[i]);
        i++;
    }
#undef PUT
    if (n) out[o] = '\0';
}

int (*sqlPgOpen)(const char *url, const char *shown, int any_server, sqlDb **out, lakeError *err);

int registryOpenUrl(const char *url, int create, const char *stage_url, registry **out, lakeError *err) {
    *out = NULL;
    switch (registryUrlKind(url)) {
    case 1: return registryOpen(url + 7, create, stage_url, out, err);
    case 2: {
        char shown[1024];
        registryRedact(url, shown, sizeof shown);
        sqlDb *db;
        if (!sqlPgOpen)
            return errSet(err, LAKE_ECONFIG, "%s: only lake-metasrv keeps a registry in PostgreSQL", shown);
        if (sqlPgOpen(url, shown, 0, &db, err)) return err->code;
        return openOn(db, shown, create, stage_url, out, err);
    }
    default:
        return errSet(err, LAKE_EUSAGE, "registry URL must be sqlite:PATH or postgresql://…");
    }
}

int registryWritable(registry *r, lakeError *err) {
    int64_t w = 0;
    int rc = queryInt(r, &w, err, r->db->dialect->writable, NULL);
    if (rc == 0) return w ? REGISTRY_WRITABLE : REGISTRY_READ_ONLY;
    if (rc < 0) {
        errSetStatus(err, "internal", "registry: the probe answered no row");
        return REGISTRY_UNAVAILABLE;
    }
    return sqlErrorClass(r->db) == SQLC_READONLY ? REGISTRY_READ_ONLY : REGISTRY_UNAVAILABLE;
}

int registryProbeUrl(const char *url) {
    if (registryUrlKind(url) != 2 || !sqlPgOpen) return REGISTRY_UNAVAILABLE;
    char shown[1024];
    registryRedact(url, shown, sizeof shown);
    sqlDb *db = NULL;
    lakeError err = {0};
    if (sqlPgOpen(url, shown, 1, &db, &err)) return REGISTRY_UNAVAILABLE;
    sqlStmt *st = sqlPrepare(db, db->dialect->writable);
    int state = st && sqlStep(st) == SQL_ROW && sqlColumnInt64(st, 0) == 0 ? REGISTRY_READ_ONLY : REGISTRY_UNAVAILABLE;
    sqlFinalize(st);
    sqlClose(db);
    return state;
}

void registryCut(registry *r) {
    if (r && r->db->drv->cut) r->db->drv->cut(r->db);
}

void registryClose(registry *r) {
    if (!r) return;
    sqlClose(r->db);
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

int registryTestRaiseGeneration(registry *r) {
    return exec(r, "UPDATE directory_marker SET generation = generation + 1", NULL);
}

/* One scan of the directory into a new array, bounded. */
static int scanDirectory(registry *r, const snapshotBounds *b, cJSON **out, lakeError *err) {
    *out = NULL;
    /* namespaces and tables in one ordered pass: a namespace's row has an
     * empty table name, so it sorts first (bytewise, whatever the
     * database's locale) */
    sqlStmt *st = prep(r, err,
                       "SELECT ns, tname, id, schema FROM ("
                       " SELECT name AS ns, '' AS tname, NULL AS id, NULL AS schema FROM namespaces"
                       " UNION ALL SELECT namespace, name, id, schema FROM tables WHERE dropped = 0) AS d "
                       "ORDER BY ns COLLATE \"C\", tname COLLATE \"C\"",
                       NULL);
    if (!st) return err->code;
    cJSON *arr = cJSON_CreateArray();
    int64_t count = 0, bytes = 2;
    int rc = 0, s = SQL_DONE;
    while (!rc && arr && (s = sqlStep(st)) == SQL_ROW) {
        const char *ns = sqlColumnText(st, 0);
        const char *name = sqlColumnText(st, 1);
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        if (!name || !name[0]) {
            cJSON_AddStringToObject(e, "kind", "namespace");
            cJSON_AddStringToObject(e, "namespace", ns);
        } else {
            cJSON_AddStringToObject(e, "kind", "table");
            cJSON_AddStringToObject(e, "namespace", ns);
            cJSON_AddStringToObject(e, "name", name);
            cJSON_AddStringToObject(e, "id", sqlColumnText(st, 2));
            const char *text = sqlColumnText(st, 3);
            if ((int64_t)strlen(text) > b->max_schema_bytes) {
                cJSON_Delete(e);
                rc = errSetStatus(err, "payload_too_large", "a table's schema exceeds %lld bytes",
                                  (long long)b->max_schema_bytes);
                break;
            }
            cJSON *schema = cJSON_Parse(text);
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
    else if (!rc && s != SQL_DONE) rc = s == SQL_ROW ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "snapshot")
                                                     : sqlErr(r, err, "scan");
    sqlFinalize(st);
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

/* The live table's id and current version; not_found otherwise.  lock
 * (in a write transaction) locks the table's row until it ends. */
static int findTable(registry *r, const char *ns, const char *name, int lock, char id[64],
                     int64_t *version, char **schema, lakeError *err) {
    /* a scoped caller's privilege, before the table is looked for: the
     * same refusal whether it exists or not */
    if (r->scope_privilege) {
        int h = registryHolds(r, r->scope_principal, r->scope_role, r->scope_privilege, ns, name, err);
        if (h < 0) return -h;
        if (!h)
            return errSetStatus(err, "permission_denied", "%s holds no %s privilege on %s.%s", r->scope_principal,
                                r->scope_privilege, ns, name);
    }
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT id, version, schema FROM tables "
             "WHERE namespace = ? AND name = ? AND dropped = 0%s", lock ? r->db->dialect->for_update : "");
    sqlStmt *st = prep(r, err, sql, ns, name, NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    if (s == SQL_ROW) {
        snprintf(id, 64, "%s", sqlColumnText(st, 0));
        *version = sqlColumnInt64(st, 1);
        if (schema && !(*schema = strdup(sqlColumnText(st, 2))))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    } else if (s == SQL_DONE) {
        rc = errSetStatus(err, "not_found", "%s.%s: no such table", ns, name);
    } else {
        rc = sqlErr(r, err, "find table");
    }
    sqlFinalize(st);
    return rc;
}

/* Replace *schema by the schema version `version` of table id reads with
 * (versions.schema; kept when that is NULL, as in no registry since
 * schema 4). */
static int versionSchema(registry *r, const char *id, int64_t version, char **schema, lakeError *err) {
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    sqlStmt *st = prep(r, err, "SELECT schema FROM versions WHERE table_id = ? AND version = CAST(? AS BIGINT)", id,
                       vbuf, NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    const char *text = s == SQL_ROW ? sqlColumnText(st, 0) : NULL;
    if (text) {
        char *copy = strdup(text);
        if (!copy) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
        else {
            free(*schema);
            *schema = copy;
        }
    } else if (s != SQL_ROW && s != SQL_DONE) {
        rc = sqlErr(r, err, "read version");
    }
    sqlFinalize(st);
    return rc;
}

/* `expired` (67) when version of table id (ns.name, for the message)
 * has expired; 0 when it has not (or is no version: the caller says). */
static int checkUnexpired(registry *r, const char *id, const char *ns, const char *name, int64_t version,
                          lakeError *err) {
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    sqlStmt *st = prep(r, err, "SELECT expired_at FROM versions WHERE table_id = ? AND version = CAST(? AS BIGINT) "
                       "AND expired_at IS NOT NULL", id, vbuf, NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    if (s == SQL_ROW)
        rc = errSetStatus(err, "expired", "%s.%s: version %lld expired at %s (past the retention); its objects may "
                          "be gone", ns, name, (long long)version, sqlColumnText(st, 0));
    else if (s != SQL_DONE)
        rc = sqlErr(r, err, "read version");
    sqlFinalize(st);
    return rc;
}

/* A column the registration's schema lacks (dropped since the segment
 * was written, or not yet added at the version resolved) is carried in
 * the segment unread: its bounds are the dropped column's values, and no
 * reader of this version may see them (issue 41).  Its entry keeps only
 * "nulls".  s NULL: nothing is stripped. */
static void stripDroppedBounds(cJSON *segment, const segmentSchema *s) {
    cJSON *stats = cJSON_GetObjectItemCaseSensitive(segment, "stats");
    int64_t ids[SCHEMA_MAX_COLUMNS];
    if (!s || !cJSON_IsArray(stats)) return;
    int n = segmentRecordColumns(segment, cJSON_GetArraySize(stats), ids, SCHEMA_MAX_COLUMNS), i = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, stats) {
        if (i < n && segmentSchemaFindId(s, ids[i]) < 0 && cJSON_IsObject(e)) {
            cJSON_DeleteItemFromObjectCaseSensitive(e, "min");
            cJSON_DeleteItemFromObjectCaseSensitive(e, "max");
            cJSON_DeleteItemFromObjectCaseSensitive(e, "max_cut");
        }
        i++;
    }
}

/* registryResolve, registryResolveAt and registryResolveChanged: the
 * registration at version (current when < 0; with at, the last version
 * committed at or before at), or not_modified when the current version
 * is known_version of the table known_id (known_id NULL: never). */
static int resolveIn(registry *r, const char *ns, const char *name, int64_t version, const char *at,
                     const char *known_id, int64_t known_version, cJSON **answer, lakeError *err) {
    *answer = NULL;
    char id[64];
    int64_t current;
    char *schema = NULL;
    int rc;
    /* one read transaction: the version and its segments agree */
    if ((rc = exec(r, r->db->dialect->begin_read, err))) return rc;
    if ((rc = findTable(r, ns, name, 0, id, &current, &schema, err))) goto out;
    /* the oldest version still served: a client forgets what it cached of
     * older ones (catalog/cache.c, issue 41); the current version never
     * expires, so there is one */
    int64_t oldest;
    if ((rc = queryInt(r, &oldest, err, "SELECT min(version) FROM versions WHERE table_id = ? AND expired_at IS NULL",
                       id, NULL)) > 0)
        goto out;
    if (rc < 0) {
        oldest = 0;
        rc = 0;
    }
    if (known_id && strcmp(id, known_id) == 0 && current == known_version) {
        cJSON *a = cJSON_CreateObject();
        if (!a || !cJSON_AddStringToObject(a, "status", "not_modified") || !cJSON_AddStringToObject(a, "id", id) ||
            !cJSON_AddNumberToObject(a, "version", (double)current) ||
            !cJSON_AddNumberToObject(a, "oldest", (double)oldest)) {
            cJSON_Delete(a);
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
        } else {
            *answer = a;
        }
        goto out;
    }
    if (at) {
        rc = queryInt(r, &version, err, "SELECT max(version) FROM versions WHERE table_id = ? AND committed_at <= ?",
                      id, at, NULL);
        if (rc > 0) goto out;
        /* max() of no row is NULL, read as 0: version 0 is the creation */
        int64_t created;
        if (!rc && (rc = queryInt(r, &created, err, "SELECT 1 FROM versions WHERE table_id = ? AND version = 0 "
                                  "AND committed_at <= ?", id, at, NULL)) < 0)
            rc = errSetStatus(err, "not_found", "%s.%s: no version at or before %s (the table was created later)", ns,
                              name, at);
        if (rc) goto out;
    }
    if (version < 0) version = current;
    if (version > current) {
        rc = errSetStatus(err, "not_found", "%s.%s: no version %lld (current is %lld)", ns, name,
                          (long long)version, (long long)current);
        goto out;
    }
    /* an expired version's objects may be gone: refused whole, never
     * answered in part */
    if ((rc = checkUnexpired(r, id, ns, name, version, err))) goto out;
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    /* the schema it reads with: its own (an older version's may differ) */
    if (version != current && (rc = versionSchema(r, id, version, &schema, err))) goto out;
    sqlStmt *st = prep(r, err,
                            "SELECT location, size, sha256, rows, stats, columns FROM segments "
                            "WHERE table_id = ? AND version <= CAST(? AS BIGINT)"
                            " AND (removed_in IS NULL OR removed_in > CAST(? AS BIGINT)) ORDER BY version, seq",
                            id, vbuf, vbuf, NULL);
    if (!st) { rc = err->code; goto out; }
    cJSON *a = cJSON_CreateObject(), *segs = cJSON_CreateArray();
    cJSON_AddStringToObject(a, "id", id);
    cJSON_AddStringToObject(a, "namespace", ns);
    cJSON_AddStringToObject(a, "name", name);
    cJSON_AddNumberToObject(a, "version", (double)version);
    cJSON_AddNumberToObject(a, "oldest", (double)oldest);
    cJSON *sch = cJSON_Parse(schema);
    cJSON_AddItemToObject(a, "schema", sch ? sch : cJSON_CreateArray());
    cJSON_AddItemToObject(a, "segments", segs);
    segmentSchema *parsed = NULL;
    lakeError pe = {0};
    segmentSchemaParse(schema, &parsed, &pe); /* (stored canonical; NULL: nothing is stripped) */
    int s;
    while ((s = sqlStep(st)) == SQL_ROW) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddStringToObject(g, "location", sqlColumnText(st, 0));
        cJSON_AddNumberToObject(g, "size", (double)sqlColumnInt64(st, 1));
        cJSON_AddStringToObject(g, "sha256", sqlColumnText(st, 2));
        cJSON_AddNumberToObject(g, "rows", (double)sqlColumnInt64(st, 3));
        /* as append stored it (canonical); absent for older segments */
        const char *stats = sqlColumnText(st, 4);
        if (stats) cJSON_AddItemToObject(g, "stats", cJSON_Parse(stats));
        /* its columns' ids, when not 1 to n (catalog/schema.h) */
        const char *columns = sqlColumnText(st, 5);
        if (columns) cJSON_AddItemToObject(g, "columns", cJSON_Parse(columns));
        stripDroppedBounds(g, parsed);
        cJSON_AddItemToArray(segs, g);
    }
    if (s != SQL_DONE) rc = sqlErr(r, err, "read segments");
    sqlFinalize(st);
    segmentSchemaFree(parsed);
    if (rc) cJSON_Delete(a);
    else *answer = a;
out:
    exec(r, "COMMIT", NULL);
    free(schema);
    return rc;
}

int registryResolve(registry *r, const char *ns, const char *name, int64_t version, cJSON **answer,
                    lakeError *err) {
    return resolveIn(r, ns, name, version, NULL, NULL, 0, answer, err);
}

int registryResolveAt(registry *r, const char *ns, const char *name, const char *at, cJSON **answer,
                      lakeError *err) {
    return resolveIn(r, ns, name, -1, at, NULL, 0, answer, err);
}

/* One version's line of history: the totals after it in total[3]
 * (segments, rows, bytes), carried from the version before. */
static cJSON *historyEntry(sqlStmt *st, int64_t total[3]) {
    int64_t version = sqlColumnInt64(st, 0), add[3], del[3];
    for (int i = 0; i < 3; i++) {
        add[i] = sqlColumnInt64(st, 4 + i);
        del[i] = sqlColumnInt64(st, 7 + i);
        total[i] += add[i] - del[i];
    }
    const char *op = sqlColumnText(st, 3), *principal = sqlColumnText(st, 2);
    /* versions made before schema 3 recorded none: what they did says */
    if (!op) op = version == 0 ? "create" : del[0] == 0 ? "append" : add[1] == del[1] ? "compact" : "rewrite";
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "version", (double)version);
    cJSON_AddStringToObject(e, "committed_at", sqlColumnText(st, 1));
    if (principal && *principal) cJSON_AddStringToObject(e, "principal", principal);
    else cJSON_AddNullToObject(e, "principal");
    cJSON_AddStringToObject(e, "operation", op);
    /* the change of the row count (a compaction or an UPDATE: none) */
    cJSON_AddNumberToObject(e, "rows_added", (double)(add[1] > del[1] ? add[1] - del[1] : 0));
    cJSON_AddNumberToObject(e, "rows_removed", (double)(del[1] > add[1] ? del[1] - add[1] : 0));
    cJSON_AddNumberToObject(e, "segments", (double)total[0]);
    cJSON_AddNumberToObject(e, "rows", (double)total[1]);
    cJSON_AddNumberToObject(e, "bytes", (double)total[2]);
    const char *expired = sqlColumnText(st, 10);
    if (expired) cJSON_AddStringToObject(e, "expired_at", expired);
    else cJSON_AddNullToObject(e, "expired_at");
    return e;
}

int registryHistory(registry *r, const char *ns, const char *name, int64_t after, int64_t limit, cJSON **answer,
                    lakeError *err) {
    *answer = NULL;
    char id[64], abuf[32], lbuf[32];
    int64_t current, total[3] = {0, 0, 0};
    snprintf(abuf, sizeof abuf, "%lld", (long long)after);
    snprintf(lbuf, sizeof lbuf, "%lld", (long long)limit + 1); /* one more: is there more? */
    int rc = exec(r, r->db->dialect->begin_read, err);
    if (rc) return rc;
    if ((rc = findTable(r, ns, name, 0, id, &current, NULL, err))) goto out;
    if (after >= 0) { /* the totals the page starts from: version after's */
        sqlStmt *st = prep(r, err, "SELECT count(*), coalesce(sum(rows), 0), coalesce(sum(size), 0) FROM segments "
                           "WHERE table_id = ? AND version <= CAST(? AS BIGINT) "
                           "AND (removed_in IS NULL OR removed_in > CAST(? AS BIGINT))", id, abuf, abuf, NULL);
        if (!st) { rc = err->code; goto out; }
        if (sqlStep(st) == SQL_ROW)
            for (int i = 0; i < 3; i++) total[i] = sqlColumnInt64(st, i);
        else rc = sqlErr(r, err, "read history");
        sqlFinalize(st);
        if (rc) goto out;
    }
    sqlStmt *st = prep(r, err,
        "SELECT v.version, v.committed_at, v.principal, v.operation,"
        " coalesce(a.n, 0), coalesce(a.rows, 0), coalesce(a.bytes, 0),"
        " coalesce(d.n, 0), coalesce(d.rows, 0), coalesce(d.bytes, 0), v.expired_at FROM versions v"
        " LEFT JOIN (SELECT version, count(*) AS n, sum(rows) AS rows, sum(size) AS bytes FROM segments"
        "  WHERE table_id = ? GROUP BY version) a ON a.version = v.version"
        " LEFT JOIN (SELECT removed_in, count(*) AS n, sum(rows) AS rows, sum(size) AS bytes FROM segments"
        "  WHERE table_id = ? AND removed_in IS NOT NULL GROUP BY removed_in) d ON d.removed_in = v.version"
        " WHERE v.table_id = ? AND v.version > CAST(? AS BIGINT) ORDER BY v.version LIMIT CAST(? AS BIGINT)",
        id, id, id, abuf, lbuf, NULL);
    if (!st) { rc = err->code; goto out; }
    cJSON *a = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(a, "versions");
    int s, n = 0, more = 0;
    while ((s = sqlStep(st)) == SQL_ROW) {
        if (n++ == limit) {
            more = 1;
            break;
        }
        cJSON_AddItemToArray(list, historyEntry(st, total));
    }
    if (s != SQL_ROW && s != SQL_DONE) rc = sqlErr(r, err, "read history");
    sqlFinalize(st);
    cJSON_AddBoolToObject(a, "more", more);
    if (rc) cJSON_Delete(a);
    else *answer = a;
out:
    exec(r, "COMMIT", NULL);
    return rc;
}

int registryResolveChanged(registry *r, const char *ns, const char *name, const char *known_id,
                           int64_t known_version, cJSON **answer, lakeError *err) {
    return resolveIn(r, ns, name, -1, NULL, known_id, known_version, answer, err);
}

int registryReferences(registry *r, const char *after, int64_t limit, int64_t max_bytes, cJSON **answer,
                       lakeError *err) {
    *answer = NULL;
    char lbuf[32];
    snprintf(lbuf, sizeof lbuf, "%lld", (long long)limit + 1);
    /* a segment is one while it is live in an unexpired version (added at
     * or before it, not removed by it); a FILE location while the version
     * that recorded it is unexpired or added a segment that is one (the
     * rows a rewrite kept are recorded again with the rewriting version).
     * A table's expired versions are always its oldest (registryExpire
     * marks the versions below one), so "live in an unexpired version" is
     * "not removed by the table's first unexpired version, k, or before
     * it", and "unexpired" is "k or later": one pass over versions, not
     * one search per segment. */
    sqlStmt *st = prep(r, err,
                            "WITH u AS (SELECT v.table_id, min(v.version) AS k FROM versions v"
                            "  JOIN tables t ON t.id = v.table_id WHERE t.dropped = 0 AND v.expired_at IS NULL"
                            "  GROUP BY v.table_id) "
                            "SELECT location FROM ("
                            " SELECT s.location FROM segments s JOIN u ON u.table_id = s.table_id"
                            "  WHERE s.removed_in IS NULL OR s.removed_in > u.k"
                            " UNION"
                            " SELECT f.location FROM version_files f JOIN u ON u.table_id = f.table_id"
                            "  WHERE f.version >= u.k OR EXISTS (SELECT 1 FROM segments g WHERE g.table_id = f.table_id"
                            "   AND g.version = f.version AND (g.removed_in IS NULL OR g.removed_in > u.k))) AS d"
                            " WHERE location > ? COLLATE \"C\" ORDER BY location COLLATE \"C\" LIMIT CAST(? AS BIGINT)",
                            after ? after : "", lbuf, NULL);
    if (!st) return err->code;
    cJSON *a = cJSON_CreateObject(), *locs = cJSON_AddArrayToObject(a, "locations");
    int64_t n = 0, bytes = 0;
    int s, more = 0, rc = 0;
    while ((s = sqlStep(st)) == SQL_ROW) {
        const char *loc = sqlColumnText(st, 0);
        int64_t len = (int64_t)strlen(loc) + 3; /* quotes and a comma */
        if (n == limit || (n > 0 && bytes + len > max_bytes)) {
            more = 1;
            break;
        }
        cJSON_AddItemToArray(locs, cJSON_CreateString(loc));
        n++;
        bytes += len;
    }
    if (s != SQL_ROW && s != SQL_DONE) rc = sqlErr(r, err, "read references");
    sqlFinalize(st);
    cJSON_AddBoolToObject(a, "more", more);
    if (rc || !locs) {
        cJSON_Delete(a);
        return rc ? rc : errSetErrno(err, LAKE_EFAIL, ENOMEM, "references");
    }
    *answer = a;
    return 0;
}

/* The first unexpired version of the table whose id is the SQL expression T. */
#define FIRST_UNEXPIRED(T) "(SELECT min(v.version) FROM versions v WHERE v.table_id = " T " AND v.expired_at IS NULL)"

/* Erase what the registry keeps of the table id's data (every table's
 * for "") that no unexpired version of a live table holds any more: the
 * location and statistics of each segment removed by its table's first
 * unexpired version or before (every segment of a dropped table), and the
 * FILE locations recorded by an expired version that registryReferences
 * no longer counts (all of a dropped table's).  A statistic is a value of
 * a row (a min or max), a location names an object: after an erasure
 * request (DELETE, expire, gc) neither may outlive the rows.  What stays
 * is each version's history (time, principal, operation, rows and bytes
 * added and removed) and each segment's size, row count and SHA-256; an
 * erased segment's location becomes "erased:TABLE:VERSION:SEQ", which no
 * stage contains.  Inside the caller's write transaction; *erased says
 * whether any row changed.  SQLite's secure_delete zeroes the bytes freed
 * (sqlite.c); eraseCommitted clears the WAL once committed. */
static int eraseUnreferenced(registry *r, const char *id, int *erased, lakeError *err) {
    int rc = run(r, err, "erase segments",
                 "UPDATE segments SET location = 'erased:' || table_id || ':' || CAST(version AS TEXT) || ':'"
                 " || CAST(seq AS TEXT), stats = NULL"
                 " WHERE (CAST(? AS TEXT) = '' OR table_id = ?) AND location NOT LIKE 'erased:%'"
                 " AND (table_id IN (SELECT t.id FROM tables t WHERE t.dropped = 1)"
                 "  OR (removed_in IS NOT NULL AND removed_in <= " FIRST_UNEXPIRED("segments.table_id") "))",
                 id, id, NULL);
    if (rc) return rc;
    *erased = sqlChanges(r->db) > 0;
    rc = run(r, err, "erase file lists",
             "DELETE FROM version_files WHERE (CAST(? AS TEXT) = '' OR table_id = ?)"
             " AND (table_id IN (SELECT t.id FROM tables t WHERE t.dropped = 1)"
             "  OR (version < " FIRST_UNEXPIRED("version_files.table_id") " AND NOT EXISTS (SELECT 1 FROM"
             "   segments g WHERE g.table_id = version_files.table_id AND g.version = version_files.version"
             "   AND (g.removed_in IS NULL OR g.removed_in > " FIRST_UNEXPIRED("version_files.table_id") "))))",
             id, id, NULL);
    if (!rc && sqlChanges(r->db) > 0) *erased = 1;
    return rc;
}

/* Once an erasure that changed rows is committed: what the database keeps
 * of the pages before it (SQLite's WAL) is cleared, where the dialect can.
 * Only then: a checkpoint that truncates waits for the readers, which an
 * expire or a gc that erased nothing has no reason to do. */
static void eraseCommitted(registry *r, int erased) {
    if (erased && r->db->dialect->after_erase) (void)r->db->drv->exec(r->db, r->db->dialect->after_erase);
}

int registryExpire(registry *r, const char *ns, const char *name, int64_t older_than, cJSON **answer,
                   lakeError *err) {
    *answer = NULL;
    char now[32], cutoff[32], id[64] = "";
    int64_t current, n = 0;
    int erased = 0;
    long long t = (long long)time(NULL);
    rfc3339Format(now, t);
    rfc3339Format(cutoff, older_than > t ? 0 : t - older_than);
    int rc = exec(r, r->db->dialect->begin_write, err);
    if (rc) return rc;
    if (name && (rc = findTable(r, ns, name, 1, id, &current, NULL, err))) goto fail;
    /* V expires when V + 1 was committed at or before the cutoff: the
     * versions below the last one committed by then.  So what expires is
     * always a table's oldest versions, never its current one, and a
     * clock set back cannot expire a version whose successor is younger. */
    rc = run(r, err, "expire versions",
             "UPDATE versions SET expired_at = ? WHERE expired_at IS NULL"
             " AND table_id IN (SELECT id FROM tables WHERE dropped = 0 AND (CAST(? AS TEXT) = '' OR id = ?))"
             " AND version < (SELECT max(w.version) FROM versions w WHERE w.table_id = versions.table_id"
             "  AND w.committed_at <= ? COLLATE \"C\")",
             now, id, id, cutoff, NULL);
    if (rc) goto fail;
    n = sqlChanges(r->db);
    if ((rc = eraseUnreferenced(r, id, &erased, err)) || (rc = commit(r, err))) goto fail;
    eraseCommitted(r, erased);
    *answer = cJSON_CreateObject();
    if (!*answer || !cJSON_AddNumberToObject(*answer, "expired", (double)n) ||
        !cJSON_AddStringToObject(*answer, "cutoff", cutoff)) {
        cJSON_Delete(*answer);
        *answer = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "expire");
    }
    return 0;
fail:
    rollback(r);
    return rc;
}

/* Validate one segment object. */
static int checkSegment(const char *what, const cJSON *g, const stage *st, lakeError *err) {
    const cJSON *loc = cJSON_GetObjectItemCaseSensitive(g, "location");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(g, "size");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(g, "sha256");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(g, "rows");
    int64_t n;
    if (!cJSON_IsString(loc) || !jsonWhole(size, 0, &n) || !cJSON_IsString(sha) ||
        !sha256IsHex(sha->valuestring) || !jsonWhole(rows, 0, &n))
        return errSetStatus(err, "invalid_argument",
                            "%s: each segment needs location, size, sha256 and rows", what);
    if (st && stageContains(st, loc->valuestring, NULL))
        return errSetStatus(err, "invalid_argument", "%s: a segment lies outside the managed stage", what);
    return 0;
}

/* Add to *s the columns of every schema table id had that *s lacks (by
 * id): a writer that read an earlier schema wrote them, and dropped ones
 * are carried, unread.  widths[w] is set for each schema of w <
 * SCHEMA_MAX_COLUMNS columns numbered 1 to w (the only shapes a segment
 * without "columns" can have).  0, or an error code. */
static int addEarlierColumns(registry *r, const char *id, segmentSchema *s, unsigned char *widths, lakeError *err) {
    sqlStmt *st = prep(r, err, "SELECT DISTINCT schema FROM versions WHERE table_id = ? AND schema IS NOT NULL", id,
                       NULL);
    if (!st) return err->code;
    int q, rc = 0;
    while (!rc && (q = sqlStep(st)) == SQL_ROW) {
        segmentSchema *o = NULL;
        lakeError e = {0};
        if (segmentSchemaParse(sqlColumnText(st, 0), &o, &e)) continue; /* (none is stored malformed) */
        if (segmentSchemaPositional(o) && o->ncols < SCHEMA_MAX_COLUMNS) widths[o->ncols] = 1;
        for (int i = 0; i < o->ncols && !rc; i++) {
            if (segmentSchemaFindId(s, o->cols[i].id) >= 0) continue;
            segmentColumn *cols = realloc(s->cols, sizeof *cols * ((size_t)s->ncols + 1));
            if (!cols) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
            else {
                s->cols = cols;
                cols[s->ncols] = o->cols[i];
                if (!(cols[s->ncols].name = strdup(o->cols[i].name))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
                else s->ncols++;
            }
        }
        segmentSchemaFree(o);
    }
    if (!rc && q != SQL_DONE) rc = sqlErr(r, err, "read schemas");
    sqlFinalize(st);
    return rc;
}

/* The columns and statistics of each segment, checked against the schemas
 * of table id (catalog/schema.h; schema is its current one) and made
 * canonical: into columns[i] (NULL when the record has none: ids 1 to k)
 * and stats[i] (NULL for none) for segment i; the caller frees each.  A
 * segment written under an earlier schema is taken (a column dropped since
 * is carried, unread).  invalid_argument for malformed statistics or
 * columns the table never had. */
static int checkStats(registry *r, const char *id, const char *what, const cJSON *segments, const char *schema,
                      char **stats, char **columns, lakeError *err) {
    segmentSchema *sch = NULL, *sub = NULL;
    const cJSON *g;
    int i = 0, foreign = 0, all = 0, rc = 0;
    lakeError e = {0};
    if (segmentSchemaParse(schema, &sch, &e)) return errSetStatus(err, "internal", "%s: a stored schema is malformed", what);
    int64_t ids[SCHEMA_MAX_COLUMNS];
    unsigned char widths[SCHEMA_MAX_COLUMNS] = {0};
    int ncur = sch->ncols, current = segmentSchemaPositional(sch) ? ncur : -1; /* (sch may grow below) */
    cJSON_ArrayForEach(g, segments) {
        if (e.code) break;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(g, "stats");
        const cJSON *cols = cJSON_GetObjectItemCaseSensitive(g, "columns");
        int64_t rows = 0; /* checkSegment saw it */
        jsonWhole(cJSON_GetObjectItemCaseSensitive(g, "rows"), 0, &rows);
        /* its columns: listed, or 1 to k (k its statistics' entries) */
        int k = cJSON_IsArray(st) ? cJSON_GetArraySize(st) : ncur;
        int n = segmentRecordColumns(g, k, ids, SCHEMA_MAX_COLUMNS), q;
        if (n <= 0 || (cols && st && n != k)) {
            e.code = LAKE_EDATA;
            break;
        }
        /* 1 to k without a list: the shape of a schema the table had */
        if (!cols && k != current && !all) {
            all = 1;
            if ((rc = addEarlierColumns(r, id, sch, widths, err))) goto out;
        }
        if (!cols && k != current && (k >= SCHEMA_MAX_COLUMNS || !widths[k])) {
            e.code = LAKE_EDATA;
            break;
        }
        while ((q = segmentSchemaSubset(sch, ids, n, &sub)) > 0 && !all) {
            all = 1; /* a column the current schema lacks: every schema's, once */
            if ((rc = addEarlierColumns(r, id, sch, widths, err))) goto out;
        }
        if (q) {
            foreign = q > 0;
            e.code = q > 0 ? LAKE_EDATA : LAKE_EFAIL;
            break;
        }
        if (st && segmentStatsCheck(st, sub, rows, &stats[i], &e)) break;
        if (cols && !(columns[i] = cJSON_PrintUnformatted(cols))) e.code = LAKE_EFAIL;
        segmentSchemaFree(sub);
        sub = NULL;
        i++;
    }
    if (e.code == LAKE_EFAIL) rc = errSetStatus(err, "internal", "%s: out of memory", what);
    else if (foreign) rc = errSetStatus(err, "invalid_argument", "%s: a segment's columns were never the table's", what);
    else if (e.code) rc = errSetStatus(err, "invalid_argument", "%s: malformed segment statistics", what);
out:
    segmentSchemaFree(sub);
    segmentSchemaFree(sch);
    return rc;
}

/* 0 when version of table id added exactly segments (by location, in
 * order); invalid_argument otherwise. */
static int sameSegments(registry *r, const char *id, int64_t version, const cJSON *segments,
                        lakeError *err) {
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    sqlStmt *st = prep(r, err, "SELECT location FROM segments WHERE table_id = ? AND "
                            "version = CAST(? AS BIGINT) ORDER BY seq", id, vbuf, NULL);
    if (!st) return err->code;
    const cJSON *g = segments->child;
    int same = 1, s;
    while ((s = sqlStep(st)) == SQL_ROW) {
        const cJSON *loc = cJSON_GetObjectItemCaseSensitive(g, "location");
        if (!g || strcmp(loc->valuestring, sqlColumnText(st, 0)) != 0) same = 0;
        if (g) g = g->next;
    }
    int rc = s != SQL_DONE ? sqlErr(r, err, "read segments") : 0;
    sqlFinalize(st);
    if (!rc && (!same || g))
        rc = errSetStatus(err, "invalid_argument", "a segment of this append is already committed in version %lld",
                          (long long)version);
    return rc;
}

/* A write transaction for DDL: the directory marker's row is locked
 * first, so DDL from every instance is serialised and the generation only
 * rises. */
static int beginDdl(registry *r, lakeError *err) {
    int rc = exec(r, r->db->dialect->begin_write, err);
    if (rc) return rc;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT generation FROM directory_marker WHERE singleton = 1%s",
             r->db->dialect->for_update);
    int64_t g;
    if ((rc = queryInt(r, &g, err, sql, NULL)) > 0) {
        rollback(r);
        return rc;
    }
    return 0;
}

static int bumpGeneration(registry *r, int64_t *generation, lakeError *err) {
    int rc = exec(r, "UPDATE directory_marker SET generation = generation + 1 WHERE singleton = 1", err);
    if (!rc) rc = readGeneration(r, generation, err);
    if (!rc && *generation < 0) *generation = 0; /* unmarked: as its snapshots say */
    return rc;
}

/* The checks append and compact make of their new segments and FILE
 * locations before any transaction; what names the action in messages. */
static int checkNewSegments(const char *what, const stage *stg, const cJSON *segments, const cJSON *files,
                            int none_ok, lakeError *err) {
    const cJSON *g, *f;
    if (!cJSON_IsArray(segments) || (cJSON_GetArraySize(segments) == 0 && !none_ok))
        return errSetStatus(err, "invalid_argument", "%s: at least one segment is needed", what);
    if (files && !cJSON_IsArray(files))
        return errSetStatus(err, "invalid_argument", "%s: files must be an array of locations", what);
    cJSON_ArrayForEach(g, segments) if (checkSegment(what, g, stg, err)) return err->code;
    cJSON_ArrayForEach(f, files) {
        if (!cJSON_IsString(f))
            return errSetStatus(err, "invalid_argument", "%s: files must be locations", what);
        if (stg && stageContains(stg, f->valuestring, NULL))
            return errSetStatus(err, "invalid_argument",
                                "%s: a referenced FILE lies outside the managed stage", what);
    }
    return 0;
}

/* Inside a write transaction on table id: has a version already committed
 * these segments (a retry after a lost answer)?  0 with *version set when
 * exactly they were (sameSegments), -1 when the first is not committed,
 * else an error code. */
static int committedAlready(registry *r, const char *id, const cJSON *segments, int64_t *version,
                            lakeError *err) {
    if (!segments->child) return -1; /* (a rewrite that writes none: see removedAlready) */
    const char *first = cJSON_GetObjectItemCaseSensitive(segments->child, "location")->valuestring;
    int rc = queryInt(r, version, err, "SELECT version FROM segments WHERE location = ? AND table_id = ?", first,
                      id, NULL);
    if (rc) return rc;
    return sameSegments(r, id, *version, segments, err);
}

/* Inside a write transaction on table id: did a version already remove
 * exactly the segments of replace, adding none (a retry of a rewrite
 * that wrote no segment, after a lost answer)?  0 with *version set when
 * one did, -1 when not, else an error code. */
static int removedAlready(registry *r, const char *id, const cJSON *replace, int64_t *version, lakeError *err) {
    int rc = queryInt(r, version, err, "SELECT removed_in FROM segments WHERE table_id = ? AND location = ? "
                      "AND removed_in IS NOT NULL", id, replace->child->valuestring, NULL);
    if (rc) return rc;
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)*version);
    int64_t removed, added;
    if ((rc = queryInt(r, &removed, err, "SELECT count(*) FROM segments WHERE table_id = ? AND "
                       "removed_in = CAST(? AS BIGINT)", id, vbuf, NULL)) ||
        (rc = queryInt(r, &added, err, "SELECT count(*) FROM segments WHERE table_id = ? AND "
                       "version = CAST(? AS BIGINT)", id, vbuf, NULL)))
        return rc;
    if (added || removed != cJSON_GetArraySize(replace)) return -1;
    const cJSON *g;
    cJSON_ArrayForEach(g, replace) {
        int64_t in;
        rc = queryInt(r, &in, err, "SELECT 1 FROM segments WHERE table_id = ? AND location = ? AND "
                      "removed_in = CAST(? AS BIGINT)", id, g->valuestring, vbuf, NULL);
        if (rc) return rc;
    }
    return 0;
}

/* Inside a write transaction on table id: version `version` made by
 * operation (append, compact, delete, update) of principal, holding
 * segments (seq order, stats[i] the canonical statistics of segment i or
 * NULL) and the FILE locations files; with replace (compact, delete,
 * update), those live segments get removed_in = version.  The table's
 * current version becomes version; the caller commits. */
static int commitVersion(registry *r, const char *id, int64_t version, const char *operation,
                         const char *principal, const char *schema, const cJSON *segments, char *const *stats,
                         char *const *columns, const cJSON *files, const cJSON *replace, lakeError *err) {
    char vbuf[32], now[32], seq[32];
    const cJSON *g, *f;
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)version);
    rfc3339Now(now);
    int rc = run(r, err, "insert version", "INSERT INTO versions(table_id, version, committed_at, principal, operation, "
                 "schema) VALUES (?, CAST(? AS BIGINT), ?, ?, ?, ?)", id, vbuf, now, principal ? principal : "",
                 operation, schema, NULL);
    int n = 0;
    cJSON_ArrayForEach(g, segments) {
        if (rc) return rc;
        snprintf(seq, sizeof seq, "%d", n++);
        sqlStmt *st = prep(r, err, "INSERT INTO segments(table_id, version, seq, location, size, sha256, rows, stats, "
                                     "columns) VALUES (?, CAST(? AS BIGINT), CAST(? AS BIGINT), ?, ?, ?, ?, ?, ?)",
                  id, vbuf, seq, cJSON_GetObjectItemCaseSensitive(g, "location")->valuestring, NULL);
        if (!st) return err->code;
        sqlBindInt64(st, 5, (int64_t)cJSON_GetObjectItemCaseSensitive(g, "size")->valuedouble);
        sqlBindText(st, 6, cJSON_GetObjectItemCaseSensitive(g, "sha256")->valuestring);
        sqlBindInt64(st, 7, (int64_t)cJSON_GetObjectItemCaseSensitive(g, "rows")->valuedouble);
        sqlBindText(st, 8, stats[n - 1]); /* NULL: none */
        sqlBindText(st, 9, columns[n - 1]); /* NULL: 1 to k */
        rc = done(r, st, err, "insert segment");
    }
    cJSON_ArrayForEach(g, replace) {
        if (rc) return rc;
        rc = run(r, err, "remove segment", "UPDATE segments SET removed_in = CAST(? AS BIGINT) "
                 "WHERE table_id = ? AND location = ? AND removed_in IS NULL", vbuf, id, g->valuestring, NULL);
    }
    cJSON_ArrayForEach(f, files) {
        if (rc) return rc;
        rc = run(r, err, "insert file", "INSERT INTO version_files VALUES (?, CAST(? AS BIGINT), ?) ON CONFLICT DO NOTHING",
                 id, vbuf, f->valuestring, NULL);
    }
    if (!rc) rc = run(r, err, "update version", "UPDATE tables SET version = CAST(? AS BIGINT) WHERE id = ?", vbuf, id, NULL);
    return rc;
}

/* Inside a write transaction on table id: every location in replace is
 * a live segment of ns.name (409 when an earlier compaction or rewrite
 * removed it, 400 when it is none), and, for what (compact), their rows
 * add up to those of segments (400). */
static int checkReplace(registry *r, const char *id, const char *what, const char *ns, const char *name,
                        const cJSON *replace, const cJSON *segments, lakeError *err) {
    int64_t newRows = 0, oldRows = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, segments) newRows += (int64_t)cJSON_GetObjectItemCaseSensitive(g, "rows")->valuedouble;
    cJSON_ArrayForEach(g, replace) {
        int64_t live; /* its rows, or -1 when an earlier compaction removed it */
        /* (a rollback may have made a removed segment live again: its
         * live row first) */
        int rc = queryInt(r, &live, err, "SELECT CASE WHEN removed_in IS NULL THEN rows ELSE -1 END FROM segments "
                          "WHERE table_id = ? AND location = ? ORDER BY removed_in IS NULL DESC", id, g->valuestring,
                          NULL);
        /* no location in a message: it is a path (DESIGN §5) */
        if (rc < 0)
            return errSetStatus(err, "invalid_argument", "%s: replace names a location that is no segment of %s.%s",
                                what, ns, name);
        if (rc) return rc;
        if (live < 0)
            return errSetStatus(err, "conflict", "%s.%s: a segment to replace was compacted or rewritten meanwhile",
                                ns, name);
        oldRows += live;
    }
    if (strcmp(what, "compact") == 0 && oldRows != newRows)
        return errSetStatus(err, "invalid_argument", "compact: the new segments hold %lld rows, the replaced ones %lld",
                            (long long)newRows, (long long)oldRows);
    return 0;
}

/* append (replace NULL), compact, or a rewrite (delete, update): a new
 * version of ns.name holding segments, in one transaction (see
 * registryAppend, registryCompact, registryRewrite); what is the
 * operation, named in messages. */
static int newVersion(registry *r, const stage *stg, const char *what, const char *ns, const char *name,
                      int64_t expected, const cJSON *replace, const cJSON *segments, const cJSON *files,
                      const char *principal, cJSON **answer, lakeError *err) {
    *answer = NULL;
    int rewrite = replace && strcmp(what, "compact") != 0;
    if (checkNewSegments(what, stg, segments, files, rewrite, err)) return err->code;

    int nseg = cJSON_GetArraySize(segments);
    char **stats = calloc((size_t)nseg + 1, sizeof *stats), *schema = NULL;
    char **columns = calloc((size_t)nseg + 1, sizeof *columns);
    if (!stats || !columns) {
        free(stats);
        free(columns);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", what);
    }
    int rc = exec(r, r->db->dialect->begin_write, err);
    if (rc) goto out;
    char id[64];
    int64_t current, committed;
    if ((rc = findTable(r, ns, name, 1, id, &current, &schema, err)) ||
        (rc = checkStats(r, id, what, segments, schema, stats, columns, err)))
        goto fail;
    rc = segments->child ? committedAlready(r, id, segments, &committed, err)
                         : removedAlready(r, id, replace, &committed, err);
    if (rc >= 0) {
        rollback(r); /* 0: a retry of a request that already committed */
        if (rc) goto out;
        goto answer;
    }
    rc = 0;
    /* a compaction's expected version is the one the client read: appends
     * since then commute with it, only the replaced segments must still
     * be live */
    if (replace ? expected > current : expected != current) {
        rc = errSetStatus(err, "conflict", "%s.%s is at version %lld, not %lld", ns, name,
                          (long long)current, (long long)expected);
        goto fail;
    }
    committed = current + 1;
    if ((replace && (rc = checkReplace(r, id, what, ns, name, replace, segments, err))) ||
        (rc = commitVersion(r, id, committed, what, principal, schema, segments, stats, columns, files, replace,
                            err)) ||
        (rc = commit(r, err)))
        goto fail;
answer:
    *answer = cJSON_CreateObject();
    cJSON_AddNumberToObject(*answer, "version", (double)committed);
    goto out;
fail:
    rollback(r);
out:
    for (int i = 0; i < nseg; i++) {
        free(stats[i]);
        free(columns[i]);
    }
    free(stats);
    free(columns);
    free(schema);
    return rc;
}

int registryAppend(registry *r, const stage *stg, const char *ns, const char *name,
                   int64_t expected, const cJSON *segments, const cJSON *files,
                   const char *principal, cJSON **answer, lakeError *err) {
    return newVersion(r, stg, "append", ns, name, expected, NULL, segments, files, principal, answer, err);
}

/* compact or a rewrite (what): replace must name segments, each once. */
static int replaceVersion(registry *r, const stage *stg, const char *what, const char *ns, const char *name,
                          int64_t expected, const cJSON *replace, const cJSON *segments, const cJSON *files,
                          const char *principal, cJSON **answer, lakeError *err) {
    *answer = NULL;
    const cJSON *g, *h;
    if (!cJSON_IsArray(replace) || cJSON_GetArraySize(replace) == 0)
        return errSetStatus(err, "invalid_argument", "%s: replace must name at least one segment", what);
    cJSON_ArrayForEach(g, replace) {
        if (!cJSON_IsString(g))
            return errSetStatus(err, "invalid_argument", "%s: replace must be segment locations", what);
        for (h = replace->child; h != g; h = h->next) /* a repeat would count its rows twice */
            if (strcmp(h->valuestring, g->valuestring) == 0)
                return errSetStatus(err, "invalid_argument", "%s: replace names a segment twice", what);
    }
    return newVersion(r, stg, what, ns, name, expected, replace, segments, files, principal, answer, err);
}

int registryCompact(registry *r, const stage *stg, const char *ns, const char *name, int64_t expected,
                    const cJSON *replace, const cJSON *segments, const cJSON *files, const char *principal,
                    cJSON **answer, lakeError *err) {
    return replaceVersion(r, stg, "compact", ns, name, expected, replace, segments, files, principal, answer, err);
}

int registryRewrite(registry *r, const stage *stg, const char *ns, const char *name, int64_t expected,
                    const char *operation, const cJSON *replace, const cJSON *segments, const cJSON *files,
                    const char *principal, cJSON **answer, lakeError *err) {
    *answer = NULL;
    if (!operation || (strcmp(operation, "delete") != 0 && strcmp(operation, "update") != 0))
        return errSetStatus(err, "invalid_argument", "rewrite: operation must be delete or update");
    return replaceVersion(r, stg, operation, ns, name, expected, replace, segments, files, principal, answer, err);
}

int registryRollback(registry *r, const char *ns, const char *name, int64_t expected, int64_t to,
                     const char *principal, cJSON **answer, lakeError *err) {
    *answer = NULL;
    char id[64], tbuf[32], vbuf[32], now[32];
    char *schema = NULL, *was = NULL;
    int64_t current, generation;
    int rc = exec(r, r->db->dialect->begin_write, err);
    if (rc) return rc;
    if ((rc = findTable(r, ns, name, 1, id, &current, &schema, err))) goto fail;
    if (expected != current) {
        rc = errSetStatus(err, "conflict", "%s.%s is at version %lld, not %lld", ns, name, (long long)current,
                          (long long)expected);
        goto fail;
    }
    if (to > current) {
        rc = errSetStatus(err, "invalid_argument", "%s.%s: no version %lld (current is %lld)", ns, name,
                          (long long)to, (long long)current);
        goto fail;
    }
    /* its segments and files may be gone already: nothing to roll back to */
    if ((rc = checkUnexpired(r, id, ns, name, to, err))) goto fail;
    /* and version to's schema (the table's changes when it differs) */
    if (!(was = strdup(schema))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
        goto fail;
    }
    if ((rc = versionSchema(r, id, to, &schema, err))) goto fail;
    if (strcmp(was, schema) != 0 &&
        ((rc = run(r, err, "update schema", "UPDATE tables SET schema = ? WHERE id = ?", schema, id, NULL)) ||
         (rc = bumpGeneration(r, &generation, err))))
        goto fail;
    snprintf(tbuf, sizeof tbuf, "%lld", (long long)to);
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)(current + 1));
    rfc3339Now(now);
    /* live at `to`: added at or before it, not removed by it */
#define LIVE_AT "version <= CAST(? AS BIGINT) AND (removed_in IS NULL OR removed_in > CAST(? AS BIGINT))"
    if ((rc = run(r, err, "insert version", "INSERT INTO versions(table_id, version, committed_at, principal, operation, "
                  "schema) VALUES (?, CAST(? AS BIGINT), ?, ?, 'rollback', ?)", id, vbuf, now,
                  principal ? principal : "", schema, NULL)) ||
        /* those live at `to` but not now: live again, as rows of the new
         * version (the same objects, their columns' ids kept) */
        (rc = run(r, err, "revive segments",
                  "INSERT INTO segments(table_id, version, seq, location, size, sha256, rows, stats, columns) "
                  "SELECT table_id, CAST(? AS BIGINT), row_number() OVER (ORDER BY version, seq) - 1, location, size, "
                  "sha256, rows, stats, columns FROM segments s WHERE table_id = ? AND " LIVE_AT " AND removed_in IS NOT NULL "
                  "AND NOT EXISTS (SELECT 1 FROM segments l WHERE l.table_id = s.table_id AND l.location = s.location "
                  "AND l.removed_in IS NULL)", vbuf, id, tbuf, tbuf, NULL)) ||
        /* those live now but not at `to`: removed by the new version */
        (rc = run(r, err, "remove segments",
                  "UPDATE segments SET removed_in = CAST(? AS BIGINT) WHERE table_id = ? AND removed_in IS NULL "
                  "AND version < CAST(? AS BIGINT) AND location NOT IN (SELECT location FROM segments WHERE "
                  "table_id = ? AND " LIVE_AT ")", vbuf, id, vbuf, id, tbuf, tbuf, NULL)) ||
        /* the FILE locations of the versions whose segments it holds */
        (rc = run(r, err, "insert files",
                  "INSERT INTO version_files SELECT table_id, CAST(? AS BIGINT), location FROM version_files "
                  "WHERE table_id = ? AND version IN (SELECT version FROM segments WHERE table_id = ? AND " LIVE_AT ") "
                  "ON CONFLICT DO NOTHING", vbuf, id, id, tbuf, tbuf, NULL)) ||
        (rc = run(r, err, "update version", "UPDATE tables SET version = CAST(? AS BIGINT) WHERE id = ?", vbuf, id,
                  NULL)) ||
        (rc = commit(r, err)))
        goto fail;
#undef LIVE_AT
    *answer = cJSON_CreateObject();
    cJSON_AddNumberToObject(*answer, "version", (double)(current + 1));
    free(schema);
    free(was);
    return 0;
fail:
    rollback(r);
    free(schema);
    free(was);
    return rc;
}

int registryAlter(registry *r, const char *ns, const char *name, const char *op, const char *a, const char *b,
                  const char *principal, cJSON **answer, int64_t *generation, lakeError *err) {
    *answer = NULL;
    char id[64], vbuf[32], now[32];
    char *schema = NULL, *altered = NULL;
    int64_t current, maxId = 0;
    lakeError e = {0};
    int rc = exec(r, r->db->dialect->begin_write, err);
    if (rc) return rc;
    if ((rc = findTable(r, ns, name, 1, id, &current, &schema, err))) goto fail;
    /* ids are never reused: the next is past every column the table had */
    segmentSchema *all = NULL;
    unsigned char widths[SCHEMA_MAX_COLUMNS];
    if (segmentSchemaParse(schema, &all, &e)) {
        rc = errSetStatus(err, "internal", "%s.%s: a stored schema is malformed", ns, name);
        goto fail;
    }
    rc = addEarlierColumns(r, id, all, widths, err);
    for (int i = 0; !rc && i < all->ncols; i++)
        if (all->cols[i].id > maxId) maxId = all->cols[i].id;
    segmentSchemaFree(all);
    if (rc) goto fail;
    if (schemaAlter(schema, op, a, b, maxId + 1, &altered, &e)) {
        rc = errSetStatus(err, e.code == LAKE_ENOINPUT ? "not_found" : e.code == LAKE_EFAIL ? "internal"
                                                                                          : "invalid_argument",
                          "%s.%s: %s", ns, name, e.msg);
        goto fail;
    }
    snprintf(vbuf, sizeof vbuf, "%lld", (long long)(current + 1));
    rfc3339Now(now);
    if ((rc = run(r, err, "insert version", "INSERT INTO versions(table_id, version, committed_at, principal, operation, "
                  "schema) VALUES (?, CAST(? AS BIGINT), ?, ?, 'alter', ?)", id, vbuf, now, principal ? principal : "",
                  altered, NULL)) ||
        (rc = run(r, err, "update table", "UPDATE tables SET version = CAST(? AS BIGINT), schema = ? WHERE id = ?",
                  vbuf, altered, id, NULL)) ||
        (rc = bumpGeneration(r, generation, err)) || (rc = commit(r, err)))
        goto fail;
    *answer = cJSON_CreateObject();
    cJSON *sch = cJSON_Parse(altered);
    if (!*answer || !sch || !cJSON_AddNumberToObject(*answer, "version", (double)(current + 1)) ||
        !cJSON_AddItemToObject(*answer, "schema", sch)) {
        cJSON_Delete(*answer);
        *answer = NULL;
        rc = errSetStatus(err, "internal", "alter: out of memory");
    }
    free(schema);
    free(altered);
    return rc;
fail:
    rollback(r);
    free(schema);
    free(altered);
    return rc;
}

int registryCreateNamespace(registry *r, const char *ns, int64_t *generation, lakeError *err) {
    int64_t exists;
    char now[32];
    rfc3339Now(now);
    int rc = beginDdl(r, err);
    if (rc) return rc;
    rc = queryInt(r, &exists, err, "SELECT 1 FROM namespaces WHERE name = ?", ns, NULL);
    if (rc == 0) {
        rc = errSetStatus(err, "failed_precondition", "%s: namespace exists", ns);
        goto fail;
    }
    if (rc > 0) goto fail;
    rc = run(r, err, "create namespace", "INSERT INTO namespaces VALUES (?, ?)", ns, now, NULL);
    if (rc || (rc = bumpGeneration(r, generation, err)) || (rc = commit(r, err))) goto fail;
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
    if (rc || (rc = beginDdl(r, err))) return rc;
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
    if (!rc) rc = run(r, err, "create version 0", "INSERT INTO versions(table_id, version, committed_at, principal, "
                      "operation, schema) VALUES (?, 0, ?, NULL, 'create', ?)", id, now, schema, NULL);
    if (rc || (rc = bumpGeneration(r, generation, err)) || (rc = commit(r, err))) goto fail;
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryDropTable(registry *r, const char *ns, const char *name, int64_t *generation,
                      lakeError *err) {
    char id[64];
    int64_t current;
    int erased = 0, rc = beginDdl(r, err);
    if (rc) return rc;
    if (!(rc = findTable(r, ns, name, 1, id, &current, NULL, err)))
        rc = run(r, err, "drop table", "UPDATE tables SET dropped = 1 WHERE id = ?", id, NULL);
    /* its grants go with it: a table made later under the name is another */
    char scope[2 * NAME_BUF];
    snprintf(scope, sizeof scope, "%s.%s", ns, name);
    if (!rc) rc = run(r, err, "drop grants", "DELETE FROM grants WHERE scope = ?", scope, NULL);
    /* and what it held (its own rows only): its objects are garbage from now (gc) */
    if (!rc) rc = eraseUnreferenced(r, id, &erased, err);
    if (rc || (rc = bumpGeneration(r, generation, err)) || (rc = commit(r, err))) goto fail;
    eraseCommitted(r, erased);
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryAddPrincipal(registry *r, const char *name, const char *role, const char *token_sha256,
                         const char *expires_at, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    /* a new name, or a revoked one issued again (rotation) */
    sqlStmt *st = prep(r, err, "INSERT INTO principals(name, role, token_sha256, created_at, expires_at) "
                            "VALUES (?, ?, ?, ?, NULLIF(?, '')) ON CONFLICT(name) DO UPDATE SET role = excluded.role, "
                            "token_sha256 = excluded.token_sha256, created_at = excluded.created_at, "
                            "revoked_at = NULL, expires_at = excluded.expires_at, last_used_at = NULL "
                            "WHERE principals.revoked_at IS NOT NULL",
                            name, role, token_sha256, now, expires_at ? expires_at : "", NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    if (s == SQL_ERROR && sqlErrorClass(r->db) == SQLC_CONSTRAINT)
        rc = errSetStatus(err, "failed_precondition", "role %s is unknown", role);
    else if (s != SQL_DONE)
        rc = sqlErr(r, err, "add principal");
    else if (sqlChanges(r->db) == 0)
        rc = errSetStatus(err, "failed_precondition", "principal %s exists; revoke it first to issue a new token",
                          name);
    sqlFinalize(st);
    return rc;
}

int registryFindPrincipal(registry *r, const char *name, registryPrincipal *p, lakeError *err) {
    memset(p, 0, sizeof *p);
    sqlStmt *st = prep(r, err, "SELECT role, token_sha256, CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END, "
                            "expires_at, last_used_at FROM principals WHERE name = ?", name, NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    if (s == SQL_ROW) {
        snprintf(p->name, sizeof p->name, "%s", name);
        snprintf(p->role, sizeof p->role, "%s", sqlColumnText(st, 0));
        snprintf(p->token_sha256, sizeof p->token_sha256, "%s", sqlColumnText(st, 1));
        p->revoked = (int)sqlColumnInt64(st, 2);
        const char *expires = sqlColumnText(st, 3), *used = sqlColumnText(st, 4);
        snprintf(p->expires_at, sizeof p->expires_at, "%s", expires ? expires : "");
        snprintf(p->last_used_at, sizeof p->last_used_at, "%s", used ? used : "");
    } else if (s == SQL_DONE) {
        rc = errSetStatus(err, "not_found", "no principal %s", name);
    } else {
        rc = sqlErr(r, err, "find principal");
    }
    sqlFinalize(st);
    return rc;
}

int registryListPrincipals(registry *r, struct cJSON **list, lakeError *err) {
    *list = NULL;
    sqlStmt *st = prep(r, err, "SELECT name, role, created_at, revoked_at, expires_at, last_used_at FROM principals "
                            "ORDER BY name", NULL);
    if (!st) return err->code;
    cJSON *arr = cJSON_CreateArray();
    int s = SQL_DONE;
    while (arr && (s = sqlStep(st)) == SQL_ROW) {
        static const char *const keys[] = {"name", "role", "created_at", "revoked_at", "expires_at", "last_used_at"};
        cJSON *o = cJSON_CreateObject();
        rowInto(st, 0, keys, 6, o);
        cJSON_AddItemToArray(arr, o);
    }
    int rc = arr && s == SQL_DONE ? 0 : arr ? sqlErr(r, err, "list principals")
                                               : errSetErrno(err, LAKE_EFAIL, ENOMEM, "principals");
    sqlFinalize(st);
    if (rc) cJSON_Delete(arr);
    else *list = arr;
    return rc;
}

int registryRevokePrincipal(registry *r, const char *name, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    int rc = run(r, err, "revoke principal",
                 "UPDATE principals SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", now, name, NULL);
    if (!rc && sqlChanges(r->db) == 0)
        rc = errSetStatus(err, "not_found", "no active principal %s", name);
    return rc;
}

/* --- grants (issue 29) ---------------------------------------------------- */

/* The table or namespace a scope names must exist ('*' always does). */
static int scopeExists(registry *r, const char *scope, lakeError *err) {
    if (strcmp(scope, "*") == 0) return 0;
    const char *dot = strchr(scope, '.');
    char ns[NAME_BUF];
    snprintf(ns, sizeof ns, "%.*s", dot ? (int)(dot - scope) : (int)strlen(scope), scope);
    int64_t one;
    int rc = dot ? queryInt(r, &one, err, "SELECT 1 FROM tables WHERE namespace = ? AND name = ? AND dropped = 0",
                            ns, dot + 1, NULL)
                 : queryInt(r, &one, err, "SELECT 1 FROM namespaces WHERE name = ?", ns, NULL);
    if (rc < 0) return errSetStatus(err, "not_found", "%s: no such %s", scope, dot ? "table" : "namespace");
    return rc;
}

int registryGrant(registry *r, int revoke, const char *privilege, const char *scope, const char *grantee,
                  const char *by, int64_t *generation, int *changed, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    *changed = 0;
    int rc = beginDdl(r, err);
    if (rc) return rc;
    if (!revoke && (rc = scopeExists(r, scope, err))) goto fail;
    if (!revoke && strcmp(grantee, "PUBLIC") != 0 && strncmp(grantee, "role:", 5) != 0) {
        int64_t one;
        rc = queryInt(r, &one, err, "SELECT 1 FROM principals WHERE name = ?", grantee, NULL);
        if (rc < 0) rc = errSetStatus(err, "invalid_argument", "%s: no such principal", grantee);
        if (rc) goto fail;
    }
    rc = revoke ? run(r, err, "revoke", "DELETE FROM grants WHERE scope = ? AND privilege = ? AND grantee = ?",
                      scope, privilege, grantee, NULL)
                : run(r, err, "grant", "INSERT INTO grants VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", scope,
                      privilege, grantee, now, by, NULL);
    if (rc) goto fail;
    *changed = sqlChanges(r->db) > 0;
    /* a change raises the generation, so caches see it at their next
     * refresh; one that changed nothing leaves the catalog as it was */
    if (*changed ? (rc = bumpGeneration(r, generation, err)) : (rc = readGeneration(r, generation, err))) goto fail;
    if ((rc = commit(r, err))) goto fail;
    return 0;
fail:
    rollback(r);
    return rc;
}

int registryGrants(registry *r, const char *ns, const char *name, const char *principal, const char *role,
                   cJSON **answer, lakeError *err) {
    *answer = NULL;
    char table[2 * NAME_BUF], lo[NAME_BUF + 2], hi[NAME_BUF + 2], grole[40];
    snprintf(table, sizeof table, "%s.%s", ns ? ns : "", name ? name : "");
    snprintf(lo, sizeof lo, "%s.", ns ? ns : "");
    snprintf(hi, sizeof hi, "%s/", ns ? ns : "");
    roleGrantee(role, grole);
    /* on NS.T: what applies to it; on NS: to it and its tables; else all.
     * NS's tables are the scopes that begin with exactly "NS.": those from
     * "NS." up to "NS/" ('/' follows '.'), compared byte by byte (SQLite's
     * BINARY, PostgreSQL's "C") -- not LIKE, for which '_' is a wildcard
     * and, in SQLite, 'A' is 'a'.  For a principal (not NULL): only the
     * grants to it, its role or PUBLIC, so no other principal's access is
     * shown to it. */
    sqlStmt *st = prep(r, err,
                       "SELECT scope, privilege, grantee, granted_at, granted_by FROM grants"
                       " WHERE (? = '' OR scope = '*' OR scope = ? OR (? = '' AND scope >= ? AND scope < ?)"
                       " OR scope = ?)"
                       " AND (? = '' OR grantee IN (?, ?, 'PUBLIC'))"
                       " ORDER BY scope COLLATE \"C\", grantee COLLATE \"C\", privilege",
                       ns ? ns : "", ns ? ns : "", name ? name : "", lo, hi, table,
                       principal ? principal : "", principal ? principal : "", grole, NULL);
    if (!st) return err->code;
    cJSON *arr = cJSON_CreateArray();
    int s = SQL_DONE;
    while (arr && (s = sqlStep(st)) == SQL_ROW) {
        static const char *const keys[] = {"on", "privilege", "grantee", "granted_at", "granted_by"};
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        rowInto(st, 0, keys, 5, o);
    }
    int rc = arr && s == SQL_DONE ? 0 : arr ? sqlErr(r, err, "list grants") : errSetErrno(err, LAKE_EFAIL, ENOMEM, "grants");
    sqlFinalize(st);
    if (rc) cJSON_Delete(arr);
    else *answer = arr;
    return rc;
}

void registrySetScope(registry *r, const char *principal, const char *role, const char *privilege) {
    r->scope_principal = principal;
    r->scope_role = role;
    r->scope_privilege = privilege;
}

int registryHolds(registry *r, const char *principal, const char *role, const char *privilege, const char *ns,
                  const char *name, lakeError *err) {
    char table[2 * NAME_BUF], grole[40];
    roleGrantee(role, grole);
    int64_t one;
    int rc;
    if (!ns) { /* on anything */
        rc = queryInt(r, &one, err, "SELECT 1 FROM grants WHERE privilege = ? AND grantee IN (?, ?, 'PUBLIC') LIMIT 1",
                      privilege, principal, grole, NULL);
    } else {
        snprintf(table, sizeof table, "%s.%s", ns, name ? name : "");
        rc = queryInt(r, &one, err,
                      "SELECT 1 FROM grants WHERE privilege = ? AND scope IN ('*', ?, ?)"
                      " AND grantee IN (?, ?, 'PUBLIC') LIMIT 1",
                      privilege, ns, name ? table : ns, principal, grole, NULL);
    }
    return rc < 0 ? 0 : rc > 0 ? -rc : 1;
}

/* The live references to a location (as registryReferences defines them)
 * from tables that principal (of role) may read, or its own upload while
 * it holds what the upload needed (mayUpload in actions.c): write or
 * modify on the table whose segments directory holds it, write on some
 * table for any other (files/).  Looked up from the location (its
 * indexes), then the few tables that refer to it: a presign costs the
 * same however many tables there are. */
int registryMayGet(registry *r, const char *principal, const char *role, const char *location,
                   const char *table_id, lakeError *err) {
    char grole[40];
    roleGrantee(role, grole);
    const char *tid = table_id ? table_id : "";
    int64_t one;
    /* k: the table's first unexpired version (its expired ones are its
     * oldest); a reader may read the table: a read grant names it */
#define READABLE                                                                                                 \
    " AND EXISTS (SELECT 1 FROM tables t WHERE t.id = x.table_id AND t.dropped = 0 AND EXISTS (SELECT 1 FROM"     \
    " grants g WHERE g.privilege = 'read' AND g.grantee IN (?, ?, 'PUBLIC')"                                       \
    " AND g.scope IN ('*', t.namespace, t.namespace || '.' || t.name)))"
    int rc = queryInt(r, &one, err,
                      "SELECT 1 FROM uploads u WHERE u.location = ? AND u.principal = ? AND EXISTS (SELECT 1"
                      "  FROM grants g WHERE g.grantee IN (?, ?, 'PUBLIC') AND ((? = '' AND g.privilege = 'write')"
                      "  OR (g.privilege IN ('write', 'modify') AND EXISTS (SELECT 1 FROM tables t WHERE t.id = ?"
                      "   AND t.dropped = 0 AND g.scope IN ('*', t.namespace, t.namespace || '.' || t.name)))))"
                      " UNION ALL SELECT 1 FROM segments x WHERE x.location = ?"
                      "  AND (x.removed_in IS NULL OR x.removed_in > " FIRST_UNEXPIRED("x.table_id") ")" READABLE
                      " UNION ALL SELECT 1 FROM version_files x WHERE x.location = ?"
                      "  AND (x.version >= " FIRST_UNEXPIRED("x.table_id") " OR EXISTS (SELECT 1 FROM segments s"
                      "   WHERE s.table_id = x.table_id AND s.version = x.version AND (s.removed_in IS NULL"
                      "   OR s.removed_in > " FIRST_UNEXPIRED("x.table_id") ")))" READABLE
                      " LIMIT 1",
                      location, principal, principal, grole, tid, tid, location, principal, grole, location,
                      principal, grole, NULL);
#undef READABLE
#undef FIRST_UNEXPIRED
    return rc < 0 ? 0 : rc > 0 ? -rc : 1;
}

int registryTableById(registry *r, const char *id, char ns[NAME_BUF], char name[NAME_BUF], lakeError *err) {
    sqlStmt *st = prep(r, err, "SELECT namespace, name FROM tables WHERE id = ? AND dropped = 0", id, NULL);
    if (!st) return err->code;
    int s = sqlStep(st), rc = 0;
    if (s == SQL_ROW) {
        snprintf(ns, NAME_BUF, "%s", sqlColumnText(st, 0));
        snprintf(name, NAME_BUF, "%s", sqlColumnText(st, 1));
    } else {
        rc = s == SQL_DONE ? errSetStatus(err, "not_found", "no such table") : sqlErr(r, err, "find table");
    }
    sqlFinalize(st);
    return rc;
}

int registryUploaded(registry *r, const char *principal, const char *location, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    return run(r, err, "record upload", "INSERT INTO uploads VALUES (?, ?, ?) ON CONFLICT DO NOTHING", location,
               principal, now, NULL);
}

int registryUploadsPrune(registry *r, const char *before, int64_t *removed, lakeError *err) {
    *removed = 0;
    int rc = run(r, err, "forget old uploads", "DELETE FROM uploads WHERE created_at < ? COLLATE \"C\"", before,
                 NULL);
    if (!rc) *removed = sqlChanges(r->db);
    return rc;
}

int registryGeneration(registry *r, int64_t *generation, lakeError *err) {
    return readGeneration(r, generation, err);
}

int registryHasMarker(const registry *r) { return r->authority != NULL; }

/* --- list_tables (issue 29): the tables a principal may read ------------- */

/* One page of the scan; *more when a row beyond it exists. */
static int listPage(registry *r, const char *principal, const char *grole, const char *ns, const char *after_ns,
                    const char *after_name, int64_t limit, int64_t max_bytes, cJSON *tables, int *more,
                    lakeError *err) {
    char lbuf[32];
    snprintf(lbuf, sizeof lbuf, "%lld", (long long)limit + 1);
    /* one statement however many grants there are: a table is listed
     * when a read grant to the principal, its role or PUBLIC names the
     * catalog, its namespace or itself (the grants' primary key finds
     * each); principal "" lists every table */
    sqlStmt *st = prep(r, err,
                       "SELECT t.namespace, t.name, t.id, t.schema FROM tables t"
                       " WHERE t.dropped = 0 AND (? = '' OR t.namespace = ?)"
                       " AND (t.namespace > ? COLLATE \"C\" OR (t.namespace = ? AND t.name > ? COLLATE \"C\"))"
                       " AND (? = '' OR EXISTS (SELECT 1 FROM grants g WHERE g.privilege = 'read'"
                       "  AND g.grantee IN (?, ?, 'PUBLIC')"
                       "  AND g.scope IN ('*', t.namespace, t.namespace || '.' || t.name)))"
                       " ORDER BY t.namespace COLLATE \"C\", t.name COLLATE \"C\" LIMIT CAST(? AS BIGINT)",
                       ns, ns, after_ns, after_ns, after_name, principal, principal, grole, lbuf, NULL);
    if (!st) return err->code;
    int64_t n = 0, bytes = 2;
    int s, rc = 0;
    *more = 0;
    while ((s = sqlStep(st)) == SQL_ROW) {
        cJSON *e = cJSON_CreateObject();
        cJSON *schema = cJSON_Parse(sqlColumnText(st, 3));
        if (!schema) schema = cJSON_CreateArray();
        if (!e || !schema || !cJSON_AddStringToObject(e, "namespace", sqlColumnText(st, 0)) ||
            !cJSON_AddStringToObject(e, "name", sqlColumnText(st, 1)) ||
            !cJSON_AddStringToObject(e, "id", sqlColumnText(st, 2))) {
            cJSON_Delete(e);
            cJSON_Delete(schema);
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "list_tables");
            break;
        }
        cJSON_AddItemToObject(e, "schema", schema);
        char *text = cJSON_PrintUnformatted(e);
        int64_t len = text ? (int64_t)strlen(text) + 1 : 0;
        free(text);
        /* accounted before it is kept; one table always fits */
        if (n == limit || (n > 0 && bytes + len > max_bytes)) {
            cJSON_Delete(e);
            *more = 1;
            break;
        }
        cJSON_AddItemToArray(tables, e);
        n++;
        bytes += len;
    }
    if (!rc && s != SQL_ROW && s != SQL_DONE) rc = sqlErr(r, err, "list tables");
    sqlFinalize(st);
    return rc;
}

int registryListTables(registry *r, const char *principal, const char *role, const char *ns, const char *after_ns,
                       const char *after_name, int64_t known, int64_t limit, int64_t max_bytes, int allow_unmarked,
                       cJSON **answer, lakeError *err) {
    *answer = NULL;
    char grole[40];
    roleGrantee(role, grole);
    int rc;
    /* marker, scan, marker again, as a snapshot: a page is of one generation */
    for (int scan = 1; scan <= REGISTRY_SNAPSHOT_SCANS; scan++) {
        int64_t g1, g2;
        if ((rc = readGeneration(r, &g1, err))) return rc;
        if (g1 < 0 && !allow_unmarked)
            return errSetStatus(err, "failed_precondition", "registry has no directory marker; not authoritative");
        cJSON *a = cJSON_CreateObject();
        if (!a) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "list_tables");
        if (g1 >= 0 && known == g1) {
            cJSON_AddStringToObject(a, "status", "not_modified");
            cJSON_AddNumberToObject(a, "generation", (double)g1);
            if (r->authority) cJSON_AddStringToObject(a, "authority", r->authority);
            *answer = a;
            return 0;
        }
        cJSON *tables = cJSON_AddArrayToObject(a, "tables");
        int more = 0;
        rc = tables ? listPage(r, principal ? principal : "", grole, ns ? ns : "", after_ns ? after_ns : "",
                               after_name ? after_name : "", limit, max_bytes, tables, &more, err)
                    : errSetErrno(err, LAKE_EFAIL, ENOMEM, "list_tables");
        if (!rc) rc = readGeneration(r, &g2, err);
        if (rc) {
            cJSON_Delete(a);
            return rc;
        }
        if (g1 == g2) {
            cJSON_AddNumberToObject(a, "generation", (double)(g1 < 0 ? 0 : g1));
            if (r->authority) cJSON_AddStringToObject(a, "authority", r->authority);
            cJSON_AddBoolToObject(a, "more", more);
            *answer = a;
            return 0;
        }
        cJSON_Delete(a);
    }
    return errSetStatus(err, "unavailable", "catalog changed during %d scans; retry", REGISTRY_SNAPSHOT_SCANS);
}

/* --- tokens' last use and the audit trail (issue 29) ----------------------- */

int registryTouchPrincipal(registry *r, const registryPrincipal *p, lakeError *err) {
    long long now = (long long)time(NULL), last;
    if (p->last_used_at[0] && rfc3339Parse(p->last_used_at, &last, NULL, NULL) == 0 && last <= now &&
        now - last < REGISTRY_LAST_USED_EVERY)
        return 0;
    char at[32], cutoff[32];
    rfc3339Format(at, now);
    rfc3339Format(cutoff, now - REGISTRY_LAST_USED_EVERY + 1);
    /* conditional, so requests racing here, from any instance, write once */
    return run(r, err, "record last use",
               "UPDATE principals SET last_used_at = ? WHERE name = ?"
               " AND (last_used_at IS NULL OR last_used_at < ? COLLATE \"C\")",
               at, p->name, cutoff, NULL);
}

void registrySetAudit(registry *r, const registryAudit *a) {
    r->auditing = a != NULL;
    r->audit_written = 0;
    if (a) r->audit = *a;
}

int registryAuditWritten(const registry *r) { return r->audit_written; }

int registryAuditWrite(registry *r, const registryAudit *a, const char *result, lakeError *err) {
    char now[32];
    rfc3339Now(now);
    return run(r, err, "write the audit trail",
               "INSERT INTO audit(at, principal, role, action, target, result, request_id)"
               " VALUES (?, NULLIF(?, ''), NULLIF(?, ''), ?, NULLIF(?, ''), ?, NULLIF(?, ''))",
               now, a->principal, a->role, a->action, a->target, result, a->request_id, NULL);
}

int registryAuditPrune(registry *r, const char *before, int64_t *removed, lakeError *err) {
    *removed = 0;
    int rc = run(r, err, "prune the audit trail", "DELETE FROM audit WHERE at < ? COLLATE \"C\"", before, NULL);
    if (!rc) *removed = sqlChanges(r->db);
    return rc;
}

int registryAuditList(registry *r, const registryAuditFilter *f, cJSON **list, lakeError *err) {
    *list = NULL;
    /* '' is "any": a NULL filter binds as '' */
    sqlStmt *st = prep(r, err,
                       "SELECT seq, at, principal, role, action, target, result, request_id FROM audit"
                       " WHERE (? = '' OR at >= ? COLLATE \"C\") AND (? = '' OR principal = ?)"
                       " AND (? = '' OR action = ?) AND (? = '' OR result = ?) ORDER BY seq",
                       f->since ? f->since : "", f->since ? f->since : "", f->principal ? f->principal : "",
                       f->principal ? f->principal : "", f->action ? f->action : "", f->action ? f->action : "",
                       f->result ? f->result : "", f->result ? f->result : "", NULL);
    if (!st) return err->code;
    cJSON *arr = cJSON_CreateArray();
    int s = SQL_DONE, ok = arr != NULL;
    while (ok && (s = sqlStep(st)) == SQL_ROW) {
        static const char *const keys[] = {"at", "principal", "role", "action", "target", "result", "request_id"};
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(arr, o) && cJSON_AddNumberToObject(o, "seq", (double)sqlColumnInt64(st, 0)) &&
             rowInto(st, 1, keys, 7, o);
    }
    int rc = !ok ? errSetErrno(err, LAKE_EFAIL, ENOMEM, "audit") : s == SQL_DONE ? 0 : sqlErr(r, err, "read the audit trail");
    sqlFinalize(st);
    if (rc) cJSON_Delete(arr);
    else *list = arr;
    return rc;
}
