/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * session.h - a query session: the in-memory SQLite connection lake's SQL
 * runs on, with the lake module (query/vtab.h) registered, DDL on lake
 * tables refused, and the lake itself (configuration, catalog cache,
 * stage, segment cache, FILE functions) opened on first use.  lake-query
 * and liblake's lake_query (lib/api) both compile their statements here,
 * so a statement means the same, and fails with the same status, in
 * either.
 *
 * Promises:
 *  - SQL that names no lake table and calls no FILE function needs no
 *    configuration, catalog or cache directory.
 *  - querySessionCompile prepares one statement: its lake tables declared,
 *    AT clauses rewritten (query/at.h), "SELECT count(*) FROM NS.T" and
 *    split aggregates (query/aggregate.h) planned, and an unknown NS.T
 *    answered by one catalog refresh per session.
 *  - A failure is a lake status as lake-query(1)'s EXIT STATUS gives it
 *    (querySessionFailure).
 *  - No signal handler, no output: the caller installs SQLite's progress
 *    handler if it wants statements stopped, and warnings go through
 *    core/log.
 * One thread at a time per session.
 */
#ifndef LAKE_QUERY_SESSION_H
#define LAKE_QUERY_SESSION_H

#include <signal.h>
#include <sqlite3.h>

#include "catalog/cache.h"
#include "catalog/source.h"
#include "core/config.h"
#include "core/error.h"
#include "core/progress.h"
#include "query/import.h"
#include "query/segcache.h"
#include "query/vtab.h"
#include "stage/stage.h"

typedef struct querySession {
    /* set by the caller before querySessionOpen (borrowed; may be none):
     * the configuration overrides the lake is opened with */
    const configOverride *overrides;
    int noverrides;
    /* the rest is the session's */
    int lakeRc; /* querySessionLake: 0 not yet, -1 open, else its failure */
    lakeError lakeErr;
    int refreshed; /* the one catalog refresh on an unknown table done */
    int guard;     /* a statement is being compiled: DDL checks */
    lakeConfig cfg;
    catalogSource *src;
    catalogCache *cache;
    stage *stage;
    segcache *segs;
    queryContext q;
    sqlite3 *db;
} querySession;

/* Open s's connection (":memory:", no mutex) with the lake module and the
 * DDL guard; s is zeroed first but for overrides and noverrides.  s must
 * stay where it is until querySessionClose (the module keeps &s->q).  On
 * failure s is closed again. */
int querySessionOpen(querySession *s, lakeError *err);

/* Open the lake on first use: configLoad with s's overrides, the catalog
 * cache, the stage, the segment cache, the FILE functions.  A failure is
 * kept and returned again. */
int querySessionLake(querySession *s, lakeError *err);

/* Compile the statement at sql into *st (NULL when only blanks and
 * comments are left), *next the text after it.  See the promises above. */
int querySessionCompile(querySession *s, const char *sql, sqlite3_stmt **st, const char **next, lakeError *err);

/* The lake status of the SQL failure the connection reports now, of the
 * statement at stmt while compiling it or (compiling 0) running it: the
 * lake error behind it if any; a table that does not exist 66; DDL naming
 * a lake namespace or table 64; SQLite's own errors (syntax, an unknown
 * column or function, a constraint, a type, a parameter) 65; resource
 * failures (memory, I/O, an interrupted statement) 1. */
int querySessionFailure(querySession *s, const char *stmt, int compiling, lakeError *err);

/* After a statement failed with s->q.replan set (a DELETE or UPDATE lost
 * a race with another writer; nothing was committed) on its attempt-th
 * try: 1 after a short random pause when it should be run again, else 0
 * with err set to lake-query's 75 when the attempts are used up. */
int querySessionRetry(querySession *s, int attempt, lakeError *err);

/* Append the records read from in (query/import.h, fmt as importRun
 * takes it) to table ("NS.T") as exactly one new version, as lake-query
 * --import and liblake's lake_import do: the registration resolved and
 * the append allowed before any segment is stored, the records streamed
 * into new segments, then one append (commuting with other appends).
 * 64 for a name that is no NS.T, 66 for an unknown table, 65 for bad
 * input naming its line (nothing appended; the segments written are
 * removed).  stop (may be NULL) is polled once the input is read: set,
 * nothing is appended ("NS.T: interrupted", 1); a read that gives up on
 * it fails as the reader says.  prog (may be NULL; started by the
 * caller) counts the input and is ended here.  No rows is not an error:
 * nothing is appended.  Warns what was appended ("NS.T: 3 rows
 * appended", or "no rows: nothing appended"); *rows (may be NULL) their
 * number. */
int querySessionImport(querySession *s, const char *table, lakeReader *in, importFormat fmt, progress *prog,
                       const volatile sig_atomic_t *stop, int64_t *rows, lakeError *err);

/* Where a statement really starts: p past white space and comments. */
const char *querySkipBlank(const char *p);

/* Compact what the session appended to (query/compact.h: warns, never
 * fails), then close everything.  A zeroed s is fine. */
void querySessionClose(querySession *s);

#endif
