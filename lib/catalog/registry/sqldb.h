/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqldb.h - the small SQL driver interface under the registry: one
 * connection, statements with ? placeholders, text and integer binds,
 * rows stepped one at a time, and failures sorted into the classes the
 * registry answers differently.  Two drivers: SQLite (sqlite.c, the
 * embedded default) and PostgreSQL through libpq (pg.c).
 *
 * The registry's logic (lib/catalog/registry.c) exists once, over this
 * interface; what differs between the databases is the schema text and a
 * few statements, which each driver gives in its sqlDialect.
 *
 * A connection is used by one thread at a time.  A statement must be
 * finalized before the next one is prepared on its connection (PostgreSQL
 * streams a statement's rows over the connection).
 */
#ifndef LAKE_REGISTRY_SQLDB_H
#define LAKE_REGISTRY_SQLDB_H

#include <stdint.h>

#include "core/error.h"

typedef struct sqlDb sqlDb;
typedef struct sqlStmt sqlStmt;

/* What sqlStep answers. */
enum { SQL_ERROR = -1, SQL_DONE = 0, SQL_ROW = 1 };

/* The classes of failure the registry tells apart. */
typedef enum sqlClass {
    SQLC_OTHER,      /* anything else: internal */
    SQLC_BUSY,       /* locked, serialization failure, deadlock: retry later */
    SQLC_GONE,       /* the database is unreachable or the connection lost */
    SQLC_CONSTRAINT, /* a constraint refused the change */
    SQLC_FULL,       /* out of disk */
    SQLC_DENIED,     /* the file or its directory may not be written (permissions, a read-only mount) */
    SQLC_NOTADB,     /* the file is not a database */
    SQLC_READONLY,   /* the server takes no writes (a standby, or a primary made read-only) */
} sqlClass;

/* What differs between the databases, as SQL text. */
typedef struct sqlDialect {
    const char *name;                   /* "sqlite", "postgresql" */
    const char *const *migrations;      /* [REGISTRY_SCHEMA_VERSION] */
    const char *count_tables;           /* the registry's tables; no argument */
    const char *count_named_table;      /* tables named ?1 */
    const char *after_check;            /* run once the file is known good, or NULL */
    const char *schema_lock;            /* held across check and migration, or NULL */
    const char *schema_unlock;
    const char *begin_read;             /* a read transaction */
    const char *begin_write;            /* a write transaction */
    const char *for_update;             /* appended to a SELECT that locks its rows */
    const char *writable;               /* one row, 1 when the database takes writes, else 0 */
    const char *after_erase;            /* run after a committed erasure (registry.c), or NULL */
} sqlDialect;

typedef struct sqlDriver {
    int (*exec)(sqlDb *db, const char *sql); /* statements without arguments */
    sqlStmt *(*prepare)(sqlDb *db, const char *sql);
    void (*bindText)(sqlStmt *st, int i, const char *v); /* 1-based; NULL binds NULL */
    void (*bindInt64)(sqlStmt *st, int i, int64_t v);
    int (*step)(sqlStmt *st);
    const char *(*columnText)(sqlStmt *st, int i); /* 0-based; NULL for NULL */
    int64_t (*columnInt64)(sqlStmt *st, int i);
    void (*finalize)(sqlStmt *st);
    int64_t (*changes)(sqlDb *db); /* rows the last statement changed */
    sqlClass (*errorClass)(sqlDb *db);
    const char *(*errorText)(sqlDb *db); /* the detail, for logs only */
    int (*errorErrno)(sqlDb *db);        /* the system's errno behind the failure, or 0 */
    void (*close)(sqlDb *db);
    /* From any thread: end the call in progress on db (it fails as the
     * server gone); NULL where a call cannot hang (SQLite's wait for a
     * lock is bounded by its busy timeout). */
    void (*cut)(sqlDb *db);
} sqlDriver;

/* Every driver's connection starts with this. */
struct sqlDb {
    const sqlDriver *drv;
    const sqlDialect *dialect;
};

/* Every driver's statement starts with this. */
struct sqlStmt {
    sqlDb *db;
};

/* Open a SQLite file.  create=0 requires it to exist (66 otherwise). */
int sqliteDbOpen(const char *path, int create, sqlDb **out, lakeError *err);
/* Connect to PostgreSQL: url is a postgresql:// URL; shown is its
 * redacted form for messages.  69 when the server cannot be reached, or
 * when the one reached takes no writes (SQLC_READONLY's connections are
 * never used).  With any_server, the first server of the URL that answers
 * is taken, writable or not (target_session_attrs=any): for telling a
 * registry whose servers are all standbys from one that is unreachable.
 * NULL until registryEnablePostgres (pg.c) sets it, so that only the
 * programs that call that link pg.c and libpq. */
extern int (*sqlPgOpen)(const char *url, const char *shown, int any_server, sqlDb **out, lakeError *err);

/* The calls, through the driver. */
static inline int sqlExec(sqlDb *db, const char *sql) { return db->drv->exec(db, sql); }
static inline sqlStmt *sqlPrepare(sqlDb *db, const char *sql) { return db->drv->prepare(db, sql); }
static inline sqlClass sqlErrorClass(sqlDb *db) { return db->drv->errorClass(db); }
static inline const char *sqlErrorText(sqlDb *db) { return db->drv->errorText(db); }
static inline int sqlErrorErrno(sqlDb *db) { return db->drv->errorErrno(db); }
static inline int64_t sqlChanges(sqlDb *db) { return db->drv->changes(db); }
static inline void sqlBindText(sqlStmt *st, int i, const char *v) { st->db->drv->bindText(st, i, v); }
static inline void sqlBindInt64(sqlStmt *st, int i, int64_t v) { st->db->drv->bindInt64(st, i, v); }
static inline int sqlStep(sqlStmt *st) { return st->db->drv->step(st); }
static inline const char *sqlColumnText(sqlStmt *st, int i) { return st->db->drv->columnText(st, i); }
static inline int64_t sqlColumnInt64(sqlStmt *st, int i) { return st->db->drv->columnInt64(st, i); }
static inline void sqlFinalize(sqlStmt *st) {
    if (st) st->db->drv->finalize(st);
}
static inline void sqlClose(sqlDb *db) {
    if (db) db->drv->close(db);
}

#endif
