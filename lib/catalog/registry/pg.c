/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pg.c - the PostgreSQL driver of the registry (sqldb.h), through libpq.
 *
 * Statements are sent with their arguments as text (the server infers the
 * types) and their rows streamed one at a time (single-row mode), so a
 * large catalog is never held whole.  A connection found broken is
 * re-established on the next use; a statement that failed because the
 * connection was lost, outside a transaction, is sent once more on the new
 * connection, so a PostgreSQL that went away and came back costs a client
 * at most one `unavailable` answer and the server no restart.
 *
 * A connection is only ever to a server that takes writes.  Unless the URL
 * says otherwise, libpq is asked for target_session_attrs=read-write, so
 * of a multi-host URL (postgresql://u@db1,db2/lake) it takes the server
 * that is the primary now; a connection that is (or becomes) read-only, a
 * standby or a primary fenced with default_transaction_read_only, is
 * dropped before its next transaction and made again, and a write refused
 * as read-only (SQLSTATE 25006) is SQLC_READONLY: the registry answers
 * `unavailable` and the next use finds the new primary.  TCP keepalives
 * and a user timeout notice a server whose host died without a word.  Each
 * connection prepares a statement the first time it runs it, and reuses
 * it.  The URL's password never reaches a message: they name the redacted
 * form.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "catalog/registry.h"
#include "catalog/registry/sqldb.h"

#define MAX_PARAMS 16
#define CONNECT_TIMEOUT_S "5"
/* a silent peer (a host that died, a cable pulled) is given up after about
 * ten seconds, not the kernel's quarter of an hour */
#define KEEPALIVES_IDLE_S "5"
#define KEEPALIVES_INTERVAL_S "2"
#define KEEPALIVES_COUNT "3"
#define TCP_USER_TIMEOUT_MS "10000"
#define MAX_PREPARED 48 /* the registry has fewer statements than this */

typedef struct pgDb {
    sqlDb base;
    PGconn *conn;
    int64_t changes;
    sqlClass cls;
    int drop;        /* found read-only: made again before the next transaction */
    int any;         /* any_server: a read-only server will do */
    char detail[256];
    /* the connection's socket, for pgCut from another thread: -1 while
     * the connection is being made again or closed, so a cut never
     * reaches a descriptor that was reused */
    pthread_mutex_t mu;
    int fd;
    int cut;         /* pgCut ended the call in progress: it is not sent again */
    /* statements prepared on this connection ("lk<i>"), by text: parsed
     * and planned once per connection, not per call */
    char *prepared[MAX_PREPARED];
    int nprepared;
} pgDb;

typedef struct pgStmt {
    sqlStmt base;
    char *sql;            /* with $1… placeholders */
    int nparams;
    char *params[MAX_PARAMS];
    PGresult *row;        /* the current row */
    int started, finished;
} pgStmt;

/* migrations[v] takes a registry from version v to v + 1; 0 is empty.
 * Text compares bytewise (COLLATE "C") whatever the database's locale. */
static const char *const migrations[REGISTRY_SCHEMA_VERSION] = {
    "CREATE TABLE lake_meta(key TEXT COLLATE \"C\" PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE directory_marker(singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    "  authority_id TEXT NOT NULL, generation BIGINT NOT NULL);"
    "CREATE TABLE namespaces(name TEXT COLLATE \"C\" PRIMARY KEY, created_at TEXT NOT NULL);"
    "CREATE TABLE tables(id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  namespace TEXT COLLATE \"C\" NOT NULL REFERENCES namespaces(name),"
    "  name TEXT COLLATE \"C\" NOT NULL, schema TEXT NOT NULL, version BIGINT NOT NULL DEFAULT 0,"
    "  dropped INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);"
    "CREATE UNIQUE INDEX tables_live ON tables(namespace, name) WHERE dropped = 0;"
    "CREATE TABLE versions(table_id TEXT COLLATE \"C\" NOT NULL REFERENCES tables(id),"
    "  version BIGINT NOT NULL, committed_at TEXT NOT NULL, principal TEXT,"
    "  PRIMARY KEY (table_id, version));"
    "CREATE TABLE segments(table_id TEXT COLLATE \"C\" NOT NULL, version BIGINT NOT NULL,"
    "  seq BIGINT NOT NULL, location TEXT COLLATE \"C\" NOT NULL, size BIGINT NOT NULL,"
    "  sha256 TEXT NOT NULL, rows BIGINT NOT NULL, PRIMARY KEY (table_id, version, seq),"
    "  FOREIGN KEY (table_id, version) REFERENCES versions(table_id, version));"
    "CREATE INDEX segments_location ON segments(location);"
    "CREATE TABLE version_files(table_id TEXT COLLATE \"C\" NOT NULL, version BIGINT NOT NULL,"
    "  location TEXT COLLATE \"C\" NOT NULL, PRIMARY KEY (table_id, version, location),"
    "  FOREIGN KEY (table_id, version) REFERENCES versions(table_id, version));"
    "CREATE INDEX version_files_location ON version_files(location);"
    "CREATE TABLE principals(name TEXT COLLATE \"C\" PRIMARY KEY, role TEXT NOT NULL"
    "  CHECK (role IN ('admin', 'query-service', 'metadata-peer', 'user')),"
    "  token_sha256 TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT);"
    "INSERT INTO lake_meta VALUES ('format', 'lake-registry');",
    /* 2 (issue 18): per-column statistics of a segment (JSON, see
     * query/segment.h), and the version that compacted it away */
    ("ALTER TABLE segments ADD COLUMN stats TEXT;"
     "ALTER TABLE segments ADD COLUMN removed_in BIGINT;"),
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
    ("CREATE TABLE grants(scope TEXT COLLATE \"C\" NOT NULL, privilege TEXT COLLATE \"C\" NOT NULL"
     "  CHECK (privilege IN ('read', 'write', 'modify')), grantee TEXT COLLATE \"C\" NOT NULL,"
     "  granted_at TEXT NOT NULL, granted_by TEXT, PRIMARY KEY (scope, privilege, grantee));"
     "CREATE INDEX grants_grantee ON grants(grantee);"
     "CREATE TABLE uploads(location TEXT COLLATE \"C\" NOT NULL, principal TEXT COLLATE \"C\" NOT NULL,"
     "  created_at TEXT NOT NULL, PRIMARY KEY (location, principal));"
     "CREATE TABLE audit(seq BIGSERIAL PRIMARY KEY, at TEXT NOT NULL, principal TEXT, role TEXT,"
     "  action TEXT NOT NULL, target TEXT, result TEXT NOT NULL, request_id TEXT);"
     "CREATE INDEX audit_at ON audit(at);"
     "ALTER TABLE principals ADD COLUMN expires_at TEXT;"
     "ALTER TABLE principals ADD COLUMN last_used_at TEXT;"),
};

static const sqlDialect dialect = {
    .name = "postgresql",
    .migrations = migrations,
    .count_tables = "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
    .count_named_table = "SELECT count(*) FROM pg_catalog.pg_tables "
                         "WHERE schemaname = current_schema() AND tablename = ?",
    .after_check = NULL,
    /* one instance at a time checks and migrates (7700: lake's port) */
    .schema_lock = "SELECT pg_advisory_lock(7700)",
    .schema_unlock = "SELECT pg_advisory_unlock(7700)",
    .begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    .begin_write = "BEGIN",
    .for_update = " FOR UPDATE",
    .writable = "SELECT CASE WHEN pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' "
                "THEN 0 ELSE 1 END",
};

/* The first line of a libpq message, for one-line errors. */
static void firstLine(char *out, size_t n, const char *msg) {
    snprintf(out, n, "%.*s", (int)strcspn(msg ? msg : "", "\n"), msg ? msg : "");
}

/* Sort a failed result (or a failure without one) into a class and keep
 * its detail. */
static void failed(pgDb *p, const PGresult *res) {
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    char line[200];
    firstLine(line, sizeof line, res ? PQresultErrorMessage(res) : PQerrorMessage(p->conn));
    if (!line[0]) firstLine(line, sizeof line, PQerrorMessage(p->conn));
    snprintf(p->detail, sizeof p->detail, "postgresql %s: %s", state ? state : "-", line);
    if (PQstatus(p->conn) == CONNECTION_BAD || !state || strncmp(state, "08", 2) == 0 ||
        strcmp(state, "57P01") == 0 || strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0)
        p->cls = SQLC_GONE;
    else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 ||
             strcmp(state, "57014") == 0)
        p->cls = SQLC_BUSY;
    else if (strncmp(state, "23", 2) == 0)
        p->cls = SQLC_CONSTRAINT;
    else if (strcmp(state, "53100") == 0)
        p->cls = SQLC_FULL;
    else if (strcmp(state, "25006") == 0) { /* read_only_sql_transaction: made again before the next */
        p->cls = SQLC_READONLY;
        p->drop = 1;
    } else {
        p->cls = SQLC_OTHER;
    }
}

static void quiet(void *arg, const char *message) {
    (void)arg;
    (void)message; /* notices are not the registry's to print */
}

/* Forget the prepared statements (they die with their session). */
static void forgetPrepared(pgDb *p) {
    for (int i = 0; i < p->nprepared; i++) free(p->prepared[i]);
    p->nprepared = 0;
}

/* 1 when the server said (ParameterStatus, PostgreSQL 14 and later, at
 * every change) that it takes no writes: a standby, or a primary whose
 * default_transaction_read_only was turned on. */
static int readOnly(pgDb *p) {
    const char *standby = PQparameterStatus(p->conn, "in_hot_standby");
    const char *ro = PQparameterStatus(p->conn, "default_transaction_read_only");
    return (standby && strcmp(standby, "on") == 0) || (ro && strcmp(ro, "on") == 0);
}

static void readOnlyFailure(pgDb *p) {
    p->cls = SQLC_READONLY;
    p->drop = 1;
    snprintf(p->detail, sizeof p->detail, "postgresql 25006: the server takes no writes (a standby?)");
}

/* Publish the connection's socket for pgCut (live) or withdraw it. */
static void setSocket(pgDb *p, int live) {
    pthread_mutex_lock(&p->mu);
    p->fd = live && PQstatus(p->conn) == CONNECTION_OK ? PQsocket(p->conn) : -1;
    if (live) p->cut = 0; /* a new connection: no cut of its own yet */
    pthread_mutex_unlock(&p->mu);
}

/* Re-establish a connection found broken, or found read-only between
 * transactions (never inside one: its statements must all run on one
 * session).  0 when it is usable. */
static int revive(pgDb *p) {
    int ok = PQstatus(p->conn) == CONNECTION_OK;
    if (ok && (PQtransactionStatus(p->conn) != PQTRANS_IDLE || (!p->drop && (p->any || !readOnly(p))))) return 0;
    forgetPrepared(p);
    setSocket(p, 0);
    PQreset(p->conn);
    setSocket(p, 1);
    if (PQstatus(p->conn) != CONNECTION_OK) {
        failed(p, NULL);
        return -1;
    }
    if (!p->any && readOnly(p)) { /* target_session_attrs=any, and the first host is a standby */
        readOnlyFailure(p);
        return -1;
    }
    p->drop = 0;
    return 0;
}

/* A statement may be sent again on a new connection only when the old one
 * was lost outside a transaction: nothing of it can have committed. */
static int mayRetry(pgDb *p, int idle) {
    pthread_mutex_lock(&p->mu);
    int cut = p->cut;
    p->cut = 0;
    pthread_mutex_unlock(&p->mu);
    /* a cut call's server is silent: a new connection would only wait */
    return !cut && idle && PQstatus(p->conn) == CONNECTION_BAD && revive(p) == 0;
}

static int pgExec(sqlDb *d, const char *sql) {
    pgDb *p = (pgDb *)d;
    for (int attempt = 0;; attempt++) {
        if (revive(p)) return -1;
        int idle = PQtransactionStatus(p->conn) == PQTRANS_IDLE;
        PGresult *res = PQexec(p->conn, sql);
        ExecStatusType s = PQresultStatus(res);
        if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
            const char *n = PQcmdTuples(res);
            p->changes = n && *n ? strtoll(n, NULL, 10) : 0;
            PQclear(res);
            return 0;
        }
        failed(p, res);
        PQclear(res);
        if (attempt > 0 || !mayRetry(p, idle)) return -1;
    }
}

static sqlStmt *pgPrepare(sqlDb *d, const char *sql) {
    pgStmt *s = calloc(1, sizeof *s);
    size_t n = strlen(sql);
    if (!s || !(s->sql = malloc(n * 3 + 1))) { /* "?" becomes at most "$16" */
        free(s);
        ((pgDb *)d)->cls = SQLC_OTHER;
        snprintf(((pgDb *)d)->detail, sizeof ((pgDb *)d)->detail, "out of memory");
        return NULL;
    }
    s->base.db = d;
    size_t o = 0;
    int quoted = 0;
    for (size_t i = 0; i < n; i++) {
        if (sql[i] == '\'') quoted = !quoted;
        if (sql[i] == '?' && !quoted && s->nparams < MAX_PARAMS)
            o += (size_t)sprintf(s->sql + o, "$%d", ++s->nparams);
        else
            s->sql[o++] = sql[i];
    }
    s->sql[o] = '\0';
    return &s->base;
}

static void setParam(pgStmt *s, int i, char *v) {
    if (i < 1 || i > MAX_PARAMS) {
        free(v);
        return;
    }
    free(s->params[i - 1]);
    s->params[i - 1] = v;
    if (i > s->nparams) s->nparams = i;
}

static void pgBindText(sqlStmt *st, int i, const char *v) { setParam((pgStmt *)st, i, v ? strdup(v) : NULL); }

static void pgBindInt64(sqlStmt *st, int i, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    setParam((pgStmt *)st, i, strdup(buf));
}

/* Read the results left on the connection. */
static void drain(pgDb *p) {
    PGresult *res;
    while ((res = PQgetResult(p->conn))) PQclear(res);
}

/* The name of sql prepared on this connection, preparing it on first use;
 * "" when there is no room to keep it (sent unnamed), NULL on failure. */
static const char *preparedName(pgDb *p, const char *sql, char name[16]) {
    int i;
    for (i = 0; i < p->nprepared; i++)
        if (strcmp(p->prepared[i], sql) == 0) break;
    snprintf(name, 16, "lk%d", i);
    if (i < p->nprepared) return name;
    if (i == MAX_PREPARED) return "";
    char *copy = strdup(sql);
    PGresult *res = copy ? PQprepare(p->conn, name, sql, 0, NULL) : NULL;
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        failed(p, res);
        PQclear(res);
        free(copy);
        return NULL;
    }
    PQclear(res);
    p->prepared[p->nprepared++] = copy;
    return name;
}

static int sendStmt(pgStmt *s) {
    pgDb *p = (pgDb *)s->base.db;
    for (int attempt = 0;; attempt++) {
        if (revive(p)) return -1;
        int idle = PQtransactionStatus(p->conn) == PQTRANS_IDLE;
        char buf[16];
        const char *name = preparedName(p, s->sql, buf);
        const char *const *values = (const char *const *)s->params;
        if (name &&
            (name[0] ? PQsendQueryPrepared(p->conn, name, s->nparams, values, NULL, NULL, 0)
                     : PQsendQueryParams(p->conn, s->sql, s->nparams, NULL, values, NULL, NULL, 0)) &&
            PQsetSingleRowMode(p->conn))
            return 0;
        if (name) failed(p, NULL); /* (a failed prepare said why) */
        drain(p);
        if (attempt > 0 || !mayRetry(p, idle)) return -1;
    }
}

static int pgStep(sqlStmt *st) {
    pgStmt *s = (pgStmt *)st;
    pgDb *p = (pgDb *)st->db;
    PQclear(s->row);
    s->row = NULL;
    if (s->finished) return SQL_DONE;
    int first = !s->started;
    int idle = first && PQtransactionStatus(p->conn) == PQTRANS_IDLE;
    if (first) {
        s->started = 1;
        if (sendStmt(s)) {
            s->finished = 1;
            return SQL_ERROR;
        }
    }
    PGresult *res = PQgetResult(p->conn);
    ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_SINGLE_TUPLE) {
        s->row = res;
        return SQL_ROW;
    }
    s->finished = 1;
    if (res && (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)) {
        const char *n = PQcmdTuples(res);
        p->changes = n && *n ? strtoll(n, NULL, 10) : 0;
        PQclear(res);
        drain(p);
        return SQL_DONE;
    }
    failed(p, res);
    PQclear(res);
    drain(p);
    if (first && mayRetry(p, idle)) { /* lost before anything ran: once more */
        s->started = s->finished = 0;
        return pgStep(st);
    }
    return SQL_ERROR;
}

static const char *pgColumnText(sqlStmt *st, int i) {
    pgStmt *s = (pgStmt *)st;
    if (!s->row || PQgetisnull(s->row, 0, i)) return NULL;
    return PQgetvalue(s->row, 0, i);
}

static int64_t pgColumnInt64(sqlStmt *st, int i) {
    const char *v = pgColumnText(st, i);
    return v ? strtoll(v, NULL, 10) : 0;
}

static void pgFinalize(sqlStmt *st) {
    pgStmt *s = (pgStmt *)st;
    PQclear(s->row);
    if (s->started && !s->finished) drain((pgDb *)st->db); /* rows not read */
    for (int i = 0; i < MAX_PARAMS; i++) free(s->params[i]);
    free(s->sql);
    free(s);
}

static int64_t pgChanges(sqlDb *d) { return ((pgDb *)d)->changes; }
static sqlClass pgErrorClass(sqlDb *d) { return ((pgDb *)d)->cls; }
static const char *pgErrorText(sqlDb *d) { return ((pgDb *)d)->detail; }

static void pgClose(sqlDb *d) {
    pgDb *p = (pgDb *)d;
    forgetPrepared(p);
    setSocket(p, 0);
    PQfinish(p->conn);
    pthread_mutex_destroy(&p->mu);
    free(d);
}

/* From any thread: end the call in progress on d, if any, by shutting its
 * socket down (libpq then sees the server gone: SQLC_GONE, and the next
 * use connects again).  For a server that stopped answering without
 * closing, which neither keepalives nor the user timeout notice while its
 * host's kernel still acknowledges. */
static void pgCut(sqlDb *d) {
    pgDb *p = (pgDb *)d;
    pthread_mutex_lock(&p->mu);
    if (p->fd >= 0) {
        shutdown(p->fd, SHUT_RDWR);
        p->cut = 1;
    }
    pthread_mutex_unlock(&p->mu);
}

/* a server's failures are its own: no local errno */
static int pgErrorErrno(sqlDb *d) {
    (void)d;
    return 0;
}

static const sqlDriver driver = {pgExec,    pgPrepare,    pgBindText,   pgBindInt64,
                                 pgStep,    pgColumnText, pgColumnInt64, pgFinalize,
                                 pgChanges, pgErrorClass, pgErrorText,  pgErrorErrno, pgClose,
                                 pgCut};

static int pgDbOpen(const char *url, const char *shown, int any_server, sqlDb **out, lakeError *err) {
    *out = NULL;
    pgDb *p = calloc(1, sizeof *p);
    if (!p) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    p->base.drv = &driver;
    p->base.dialect = &dialect;
    p->any = any_server;
    p->fd = -1;
    pthread_mutex_init(&p->mu, NULL);
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &why);
    if (!opts) {
        char line[200];
        firstLine(line, sizeof line, why ? why : "out of memory");
        PQfreemem(why);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return errSet(err, LAKE_EUSAGE, "%s: not a PostgreSQL URL: %s", shown, line);
    }
    PQconninfoFree(opts);
    /* later keywords win: the URL's own settings, where it has them, over
     * these defaults; any_server over the URL */
    const char *const keys[] = {"connect_timeout", "keepalives_idle", "keepalives_interval", "keepalives_count",
                                "tcp_user_timeout", "target_session_attrs", "fallback_application_name",
                                "dbname", any_server ? "target_session_attrs" : NULL, NULL};
    const char *const values[] = {CONNECT_TIMEOUT_S, KEEPALIVES_IDLE_S, KEEPALIVES_INTERVAL_S, KEEPALIVES_COUNT,
                                  TCP_USER_TIMEOUT_MS, "read-write", "lake-metasrv", url, "any", NULL};
    p->conn = PQconnectdbParams(keys, values, 1);
    if (!p->conn) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "registry");
    }
    if (PQstatus(p->conn) != CONNECTION_OK) {
        char line[200];
        firstLine(line, sizeof line, PQerrorMessage(p->conn));
        /* libpq's message names host and user, never the password; the
         * URL is shown redacted */
        int rc = errSet(err, LAKE_EUNAVAIL, "%s: cannot connect to the registry: %s", shown, line);
        pgClose(&p->base);
        return rc;
    }
    PQsetNoticeProcessor(p->conn, quiet, NULL);
    setSocket(p, 1);
    if (!any_server && readOnly(p)) { /* the URL asked for any server, and got a standby */
        int rc = errSet(err, LAKE_EUNAVAIL, "%s: the registry's server takes no writes (a standby?)", shown);
        pgClose(&p->base);
        return rc;
    }
    *out = &p->base;
    return 0;
}

void registryEnablePostgres(void) { sqlPgOpen = pgDbOpen; }
