/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * query.h - what lake-query's parts share: the run (its options and the
 * lake it opened on first use), running a script of statements, and the
 * interactive shell over them (shell.c).
 */
#ifndef LAKE_QUERY_CMD_H
#define LAKE_QUERY_CMD_H

#include <sqlite3.h>

#include "catalog/cache.h"
#include "catalog/source.h"
#include "core/config.h"
#include "core/error.h"
#include "core/progress.h"
#include "query/import.h"
#include "query/segcache.h"
#include "query/session.h"
#include "query/vtab.h"
#include "stage/stage.h"

typedef enum { FMT_TSV, FMT_CSV, FMT_JSON, FMT_JSONL, FMT_TABLE } format;

typedef struct run {
    format fmt;
    int header, printedHeader;
    const char **sqls; /* the -c arguments, in order */
    int nsql;
    const char *import;
    importFormat importFmt;
    int strict;
    int explain;       /* --explain */
    progressMode progress;
    querySession s;    /* the connection and the lake, opened on first use */
} run;


/* One script: its text and the name errors give it ("report.sql",
 * "stdin", "-c" or "-c#2"); located: errors carry SCRIPT:LINE. */
typedef struct script {
    const char *text;
    char label[64];
    const char *name; /* the file name, when longer than label */
    int located;
} script;

/* Parse an output format's name into *f; -1 when it is none. */
int formatParse(const char *name, format *f);

/* Run each statement of sc in turn, printing rows as they come; the first
 * failure stops it (located as SCRIPT:LINE when sc->located). */
int runScript(run *r, const script *sc, lakeError *err);

/* The whole script of a file or stdin ("-"), bounded (SCRIPT_MAX); NULL
 * with err set on failure.  The caller frees it. */
char *readScript(const char *path, lakeError *err);

/* The interactive shell on a terminal (lake-query(1), INTERACTIVE USE):
 * statements and meta-commands read with line editing until .quit or an
 * end of input; each failure is printed and the shell goes on.  0 at the
 * end of the session, else a failure of the shell itself in err. */
int shellRun(run *r, lakeError *err);

#endif
