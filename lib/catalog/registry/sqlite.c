/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqlite.c - the SQLite driver of the registry (sqldb.h): WAL,
 * synchronous=FULL, foreign keys on, a busy timeout so that concurrent
 * writers queue on SQLite's lock, and BEGIN IMMEDIATE for writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/registry.h"
#include "catalog/registry/sqldb.h"

#define BUSY_TIMEOUT_MS 10000
/* Statements kept prepared per connection, for the next call of the same
 * SQL: parsing and planning cost a resolve more than running it does. */
#define STMT_CACHE 32

typedef struct liteDb {
    sqlDb base;
    sqlite3 *db;
    char detail[256];
    char dir[PATH_MAX]; /* the database's directory, where -wal and -shm go */
    sqlite3_stmt *kept[STMT_CACHE]; /* reset, bindings cleared; NULL: a free slot */
} liteDb;

typedef struct liteStmt {
    sqlStmt base;
    sqlite3_stmt *st;
} liteStmt;

/* migrations[v] takes a registry from version v to v + 1; 0 is empty. */
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
    /* 2 (issue 18): per-column statistics of a segment (JSON, see
     * query/segment.h), and the version that compacted it away */
    ("ALTER TABLE segments ADD COLUMN stats TEXT;"
     "ALTER TABLE segments ADD COLUMN removed_in INTEGER;"),
    /* 3 (issue 28): what made a version (create, append, compact, delete,
     * update; NULL in versions made before, which history infers) */
    "ALTER TABLE versions ADD COLUMN operation TEXT;",
    /* 4 (issue 28): the schema a version reads with (canonical JSON; the
     * versions made before take their table's, the only one there was),
     * when a version expired (NULL: it has not), and the stable column
     * ids of a segment's columns in its file's order (JSON array; NULL:
     * 1 to n, as a table's columns were numbered before) */
    ("ALTER TABLE versions ADD COLUMN schema TEXT;"
     "ALTER TABLE versions ADD COLUMN expired_at TEXT;"
     "ALTER TABLE segments ADD COLUMN columns TEXT;"
     "UPDATE versions SET schema = (SELECT t.schema FROM tables t WHERE t.id = versions.table_id);"),
    /* 5 (issue 29): grants of read, write and modify on the catalog ('*'),
     * a namespace ('NS') or a table ('NS.T') to a principal, a role
     * ('role:user') or PUBLIC; the objects the server began uploading for
     * each principal (which its appends may reference); the audit trail;
     * when a token expires and was last used.  An upgraded registry's
     * PUBLIC grants (keeping users' access as it was) are added by
     * checkAndMigrate, not here: a new registry grants users nothing. */
    ("CREATE TABLE grants(scope TEXT NOT NULL, privilege TEXT NOT NULL"
     "  CHECK (privilege IN ('read', 'write', 'modify')), grantee TEXT NOT NULL,"
     "  granted_at TEXT NOT NULL, granted_by TEXT, PRIMARY KEY (scope, privilege, grantee));"
     "CREATE INDEX grants_grantee ON grants(grantee);"
     "CREATE TABLE uploads(location TEXT NOT NULL, principal TEXT NOT NULL,"
     "  created_at TEXT NOT NULL, PRIMARY KEY (location, principal));"
     "CREATE TABLE audit(seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, principal TEXT, role TEXT,"
     "  action TEXT NOT NULL, target TEXT, result TEXT NOT NULL, request_id TEXT);"
     "CREATE INDEX audit_at ON audit(at);"
     "ALTER TABLE principals ADD COLUMN expires_at TEXT;"
     "ALTER TABLE principals ADD COLUMN last_used_at TEXT;"),
};

static const sqlDialect dialect = {
    .name = "sqlite",
    .migrations = migrations,
    .count_tables = "SELECT count(*) FROM sqlite_master",
    .count_named_table = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
    /* secure_delete: the bytes a delete or an update frees are zeroed, so
     * that an erased value leaves no copy in the file (registry.c's
     * eraseUnreferenced) */
    .after_check = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"
                   " PRAGMA secure_delete = ON",
    .schema_lock = NULL,
    .schema_unlock = NULL,
    .begin_read = "BEGIN",
    .begin_write = "BEGIN IMMEDIATE",
    .for_update = "",
    .writable = "SELECT 1", /* a file it may not write fails its open */
    /* the WAL's frames hold the pages before the erasure: copied into the
     * file (zeroed there) and the WAL emptied, unless a reader still needs
     * them (then at a later erasure's, or the last connection's close) */
    .after_erase = "PRAGMA wal_checkpoint(TRUNCATE)",
};

static int liteExec(sqlDb *d, const char *sql) {
    return sqlite3_exec(((liteDb *)d)->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static sqlStmt *litePrepare(sqlDb *d, const char *sql) {
    liteDb *l = (liteDb *)d;
    liteStmt *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.db = d;
    for (int i = 0; i < STMT_CACHE; i++)
        if (l->kept[i] && strcmp(sqlite3_sql(l->kept[i]), sql) == 0) {
            s->st = l->kept[i];
            l->kept[i] = NULL;
            return &s->base;
        }
    if (sqlite3_prepare_v3(l->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st, NULL) != SQLITE_OK) {
        free(s);
        return NULL;
    }
    return &s->base;
}

static void liteBindText(sqlStmt *s, int i, const char *v) {
    if (v) sqlite3_bind_text(((liteStmt *)s)->st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(((liteStmt *)s)->st, i);
}

static void liteBindInt64(sqlStmt *s, int i, int64_t v) {
    sqlite3_bind_int64(((liteStmt *)s)->st, i, (sqlite3_int64)v);
}

static int liteStep(sqlStmt *s) {
    int rc = sqlite3_step(((liteStmt *)s)->st);
    return rc == SQLITE_ROW ? SQL_ROW : rc == SQLITE_DONE ? SQL_DONE : SQL_ERROR;
}

static const char *liteColumnText(sqlStmt *s, int i) {
    return (const char *)sqlite3_column_text(((liteStmt *)s)->st, i);
}

static int64_t liteColumnInt64(sqlStmt *s, int i) { return sqlite3_column_int64(((liteStmt *)s)->st, i); }

/* Kept for the next prepare of its SQL while a slot is free; its error,
 * if any, has been read by then. */
static void liteFinalize(sqlStmt *s) {
    liteDb *l = (liteDb *)s->db;
    sqlite3_stmt *st = ((liteStmt *)s)->st;
    free(s);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    for (int i = 0; i < STMT_CACHE; i++)
        if (!l->kept[i]) {
            l->kept[i] = st;
            return;
        }
    sqlite3_finalize(st);
}

static int64_t liteChanges(sqlDb *d) { return sqlite3_changes(((liteDb *)d)->db); }

/* The system's errno behind the last failure.  SQLite reports a -wal or
 * -shm file it could not make (a read-only mount, a directory this user
 * may not write) as "cannot open" with the errno of its first, read-only
 * attempt (ENOENT); the directory then says why. */
static int liteErrorErrno(sqlDb *d) {
    liteDb *l = (liteDb *)d;
    int sys = sqlite3_system_errno(l->db), code = sqlite3_extended_errcode(l->db) & 0xff;
    if ((code == SQLITE_CANTOPEN || code == SQLITE_READONLY) && (sys == 0 || sys == ENOENT) &&
        access(l->dir, W_OK) != 0)
        sys = errno;
    return sys;
}

static sqlClass liteErrorClass(sqlDb *d) {
    int sys = liteErrorErrno(d);
    switch (sqlite3_extended_errcode(((liteDb *)d)->db) & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return SQLC_BUSY;
    case SQLITE_CONSTRAINT: return SQLC_CONSTRAINT;
    case SQLITE_FULL: return SQLC_FULL;
    case SQLITE_NOTADB: return SQLC_NOTADB;
    case SQLITE_READONLY:
    case SQLITE_PERM: return SQLC_DENIED;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
        /* the -wal or -shm file could not be made or written: say why */
        if (sys == ENOSPC || sys == EDQUOT) return SQLC_FULL;
        if (sys == EACCES || sys == EPERM || sys == EROFS) return SQLC_DENIED;
        return SQLC_OTHER;
    default: return SQLC_OTHER;
    }
}

static const char *liteErrorText(sqlDb *d) {
    liteDb *l = (liteDb *)d;
    snprintf(l->detail, sizeof l->detail, "sqlite %d: %s", sqlite3_extended_errcode(l->db),
             sqlite3_errmsg(l->db));
    return l->detail;
}

static void liteClose(sqlDb *d) {
    liteDb *l = (liteDb *)d;
    for (int i = 0; i < STMT_CACHE; i++) sqlite3_finalize(l->kept[i]);
    sqlite3_close_v2(l->db);
    free(d);
}

static const sqlDriver driver = {liteExec,       litePrepare,    liteBindText,    liteBindInt64,
                                 liteStep,       liteColumnText, liteColumnInt64, liteFinalize,
                                 liteChanges,    liteErrorClass, liteErrorText,   liteErrorErrno,
                                 liteClose,      NULL};

static int bytewise(void *ctx, int na, const void *a, int nb, const void *b) {
    (void)ctx;
    int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
    return c ? c : na - nb;
}

int sqliteDbOpen(const char *path, int create, sqlDb **out, lakeError *err) {
    *out = NULL;
    liteDb *l = calloc(1, sizeof *l);
    if (!l) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    l->base.drv = &driver;
    l->base.dialect = &dialect;
    snprintf(l->dir, sizeof l->dir, "%s", path);
    char *slash = strrchr(l->dir, '/');
    if (slash && slash != l->dir) *slash = '\0';
    else snprintf(l->dir, sizeof l->dir, "%s", slash ? "/" : ".");
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    /* a new registry is its owner's alone (0600, whatever the umask
     * widens to): SQLite would make it 0644, and gives its WAL and shared
     * memory the database file's mode.  O_EXCL: an existing one is left
     * as it is (the open fails, and SQLite opens it).  Not SQLite's names
     * that are no file: "" (a temporary database) and ":memory:" (the fuzz
     * harness's) */
    if (create && *path && strcmp(path, ":memory:") != 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) close(fd);
    }
    if (sqlite3_open_v2(path, &l->db, flags, NULL) != SQLITE_OK) {
        /* missing is 66 only where it must exist (lake-metasrv serve) */
        int sys = l->db ? sqlite3_system_errno(l->db) : 0, rc;
        if (!create && l->db && sqlite3_errcode(l->db) == SQLITE_CANTOPEN && (sys == ENOENT || !sys))
            rc = errSet(err, LAKE_ENOINPUT, "%s: no such registry", path);
        else if (sys == EACCES || sys == EPERM || sys == EROFS)
            rc = errSet(err, LAKE_EPERM, "%s: cannot open registry: %s", path, strerror(sys));
        else if (sys == ENOSPC || sys == EDQUOT)
            rc = errSet(err, LAKE_ETEMP, "%s: cannot open registry: %s; retry once space is freed", path,
                        strerror(sys));
        else
            rc = errSet(err, LAKE_EFAIL, "%s: cannot open registry%s%s", path, sys ? ": " : "",
                        sys ? strerror(sys) : "");
        liteClose(&l->base);
        return rc;
    }
    sqlite3_busy_timeout(l->db, BUSY_TIMEOUT_MS);
    /* the registry's queries order text bytewise with COLLATE "C", which
     * PostgreSQL knows; here it is memcmp, as SQLite's BINARY */
    sqlite3_create_collation(l->db, "C", SQLITE_UTF8, NULL, bytewise);
    *out = &l->base;
    return 0;
}
