/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake-query - SQL (SQLite's engine) over lake tables.
 *
 *   lake-query [-f tsv|csv|json|jsonl|table] [-H] [-c SQL]... [SQL-FILE | -]
 *   lake-query --import NS.T [--csv | --jsonl] [--strict] < DATA
 *
 * Tables are named namespace.table.  Each statement of the script (each
 * -c in order, else the file or stdin) runs in turn, its rows printed as
 * they come (the aligned table format measures its columns over the first
 * TABLE_SAMPLE rows).  INSERT and --import append one new table version
 * each (query/vtab, query/segment).  The catalog, the stage and the
 * segment cache are opened only when a statement names a lake table (or
 * calls a FILE function).  A failing statement is reported as
 * "SCRIPT:LINE: message"; SQL's own errors are bad input (65), a table
 * that does not exist 66, DDL on lake tables a usage error (64).
 * SIGINT, SIGTERM and SIGHUP stop the run cleanly (core/interrupt.h).
 * With no SQL at a terminal, the interactive shell (shell.c).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/cache.h"
#include "catalog/vend.h"
#include "catalog/names.h"
#include "catalog/source.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/realtext.h"
#include "core/utf8.h"
#include "query/filefn.h"
#include "query/aggregate.h"
#include "query/at.h"
#include "query/compact.h"
#include "query/import.h"
#include "query/rewrite.h"
#include "query/segcache.h"
#include "query/segment.h"
#include "query/vtab.h"
#include "query.h"

/* The largest SQL script read from a file or stdin. */
#define SCRIPT_MAX (16 * 1024 * 1024)
/* The aligned table format sizes its columns over this many rows. */
#define TABLE_SAMPLE 1000

enum { OPT_FORMAT = 'f', OPT_HEADER = 'H', OPT_SQL = 'c', OPT_IMPORT = 0x100, OPT_CSV, OPT_JSONL,
       OPT_STRICT, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_EXPLAIN };

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings or progress"},
    {OPT_FORMAT, 'f', "format", "FMT", "output: tsv, csv, json, jsonl or table (default: table on a terminal, else tsv)"},
    {OPT_HEADER, 'H', "header", NULL, "print a header row (tsv, csv)"},
    {OPT_SQL, 'c', "command", "SQL", "run SQL instead of reading a script (repeatable: run in order)"},
    {OPT_EXPLAIN, 0, "explain", NULL, "read no row: list per table the segments (and row ranges) each scan keeps and prunes, and why"},
    {OPT_IMPORT, 0, "import", "NS.T", "append the rows of CSV or JSON Lines on stdin to a table"},
    {OPT_CSV, 0, "csv", NULL, "with --import: the input is CSV with a header row"},
    {OPT_JSONL, 0, "jsonl", NULL, "with --import: the input is JSON Lines"},
    {OPT_STRICT, 0, "strict", NULL, "with --import: a quote or lone CR in an unquoted CSV field is an error, not data"},
    {OPT_PROGRESS, 0, "progress", NULL, "with --import: draw a progress bar even if stderr is no terminal"},
    {OPT_NO_PROGRESS, 0, "no-progress", NULL, "with --import: never draw a progress bar"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "[-f tsv|csv|json|jsonl|table] [-H] [--explain] [-c SQL]... [SQL-FILE | -]\n"
    "--import NS.T [--csv | --jsonl] [--strict] < DATA",
    "Run SQL over lake tables (namespace.table); INSERT and --import append new table versions.\n"
    "With no SQL at a terminal: an interactive shell (.help lists its commands).",
    options,
    0,
    1,
};

int formatParse(const char *name, format *f) {
    static const struct {
        const char *name;
        format fmt;
    } names[] = {{"tsv", FMT_TSV}, {"csv", FMT_CSV}, {"json", FMT_JSON}, {"jsonl", FMT_JSONL}, {"table", FMT_TABLE}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *f = names[i].fmt;
            return 0;
        }
    return -1;
}

/* --- output ------------------------------------------------------------ */

static int isFileColumn(sqlite3_stmt *st, int i) {
    const char *d = sqlite3_column_decltype(st, i);
    return d && strncmp(d, "FILE", 4) == 0;
}

/* One value of a row as the text formats write it (see FORMATS in
 * lake-query(1)): p == NULL for SQL NULL, else n bytes (TEXT may hold NUL
 * bytes; a BLOB is its lowercase hex, like SQLite's hex(), so binary never
 * reaches the terminal or the next program raw; a REAL the shortest text
 * that reads back as the same double, core/realtext.h).  own is what to
 * free, num the room for a number. */
typedef struct cell {
    const char *p;
    size_t n;
    char *own;
    char num[REAL_TEXT_MAX];
} cell;

static int cellGet(sqlite3_stmt *st, int i, cell *c) {
    c->own = NULL;
    c->p = NULL;
    c->n = 0;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return 0;
    case SQLITE_FLOAT:
        c->p = realText(sqlite3_column_double(st, i), c->num);
        c->n = strlen(c->p);
        return 0;
    case SQLITE_BLOB: {
        const unsigned char *b = sqlite3_column_blob(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);
        static const char digit[] = "0123456789abcdef";
        if (!(c->own = malloc(n * 2 + 1))) return -1;
        for (size_t k = 0; k < n; k++) {
            c->own[2 * k] = digit[b[k] >> 4];
            c->own[2 * k + 1] = digit[b[k] & 15];
        }
        c->own[2 * n] = '\0';
        c->p = c->own;
        c->n = 2 * n;
        return 0;
    }
    default: /* INTEGER, TEXT: SQLite's text, with its length */
        c->p = (const char *)sqlite3_column_text(st, i);
        c->n = (size_t)sqlite3_column_bytes(st, i);
        if (!c->p) return -1; /* out of memory */
        return 0;
    }
}

/* TSV: tab, newline, carriage return, backslash and NUL escaped as \t \n
 * \r \\ \0; NULL is an empty field (as is ''). */
static void tsvField(const char *s, size_t n) {
    for (size_t i = 0; s && i < n; i++) {
        if (s[i] == '\t') fputs("\\t", stdout);
        else if (s[i] == '\n') fputs("\\n", stdout);
        else if (s[i] == '\r') fputs("\\r", stdout);
        else if (s[i] == '\\') fputs("\\\\", stdout);
        else if (s[i] == '\0') fputs("\\0", stdout);
        else putchar(s[i]);
    }
}

/* CSV (RFC 4180): NULL (s == NULL) is an empty unquoted field; a value is
 * quoted when it is empty or holds a comma, quote, line break or NUL, so
 * "" is the empty string, as --import reads them.  Bytes go out as they
 * are. */
static void csvField(const char *s, size_t n) {
    if (!s) return;
    int quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++) quote = strchr(",\"\r\n", s[i]) != NULL; /* NUL too */
    if (!quote) {
        fwrite(s, 1, n, stdout);
        return;
    }
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') putchar('"');
        putchar(s[i]);
    }
    putchar('"');
}

/* A JSON string literal of s[0..n) (malloc'd): " \ and control characters
 * escaped (NUL as \u0000), a byte that starts no well-formed UTF-8
 * sequence (only SQL expressions make such TEXT) as \ufffd. */
static char *jsonQuote(const char *s, size_t n) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        size_t k = ch < 0x80 ? 1 : utf8SeqLen((const unsigned char *)s + i, n - i);
        if (k == 0) {
            fputs("\\ufffd", f);
            k = 1;
        } else if (ch == '"' || ch == '\\') {
            fprintf(f, "\\%c", ch);
        } else if (ch == '\n') {
            fputs("\\n", f);
        } else if (ch == '\r') {
            fputs("\\r", f);
        } else if (ch == '\t') {
            fputs("\\t", f);
        } else if (ch < 0x20) {
            fprintf(f, "\\u%04x", ch);
        } else {
            fwrite(s + i, 1, k, f);
        }
        i += k;
    }
    fputc('"', f);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* JSON: NULL is null, an INTEGER a number of all its digits, a REAL the
 * shortest number that reads back as the same double (always with a '.'
 * or an exponent; Inf and NaN, which JSON lacks, are null), TEXT a
 * string, a BLOB a string of hex digits, a FILE value an object. */
static cJSON *jsonValue(sqlite3_stmt *st, int i) {
    int type = sqlite3_column_type(st, i);
    if (type == SQLITE_NULL) return cJSON_CreateNull();
    if (type == SQLITE_FLOAT && !isfinite(sqlite3_column_double(st, i))) return cJSON_CreateNull();
    if (type == SQLITE_TEXT && isFileColumn(st, i)) {
        cJSON *file = cJSON_Parse((const char *)sqlite3_column_text(st, i));
        if (file) return file;
    }
    cell c;
    if (cellGet(st, i, &c)) return NULL;
    cJSON *j = NULL;
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
        j = cJSON_CreateRaw(c.p);
    } else {
        char *q = jsonQuote(c.p, c.n);
        j = q ? cJSON_CreateRaw(q) : NULL;
        free(q);
    }
    free(c.own);
    return j;
}

static int printJsonRow(sqlite3_stmt *st, int first, int array) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < sqlite3_column_count(st); i++) {
        cJSON *v = jsonValue(st, i);
        if (!v || !cJSON_AddItemToObject(o, sqlite3_column_name(st, i), v)) {
            cJSON_Delete(v);
            cJSON_Delete(o);
            return -1;
        }
    }
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return -1;
    if (array) printf("%s%s", first ? "[\n" : ",\n", text);
    else puts(text);
    cJSON_free(text);
    return 0;
}

/* The aligned table shows a value on one line, as the terminal draws it:
 * \n \t \r and NUL as those escapes, any other control character (C0,
 * DEL, C1) and any byte that starts no well-formed UTF-8 sequence as
 * \xNN; everything else as is.  NULL is an empty cell.  Returns the text
 * (malloc'd, NUL-terminated) and its width in terminal columns
 * (core/utf8.h: wide characters count 2). */
static char *tableCell(const char *s, size_t n, int *width) {
    char *out = NULL;
    size_t len = 0;
    int w = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    for (size_t i = 0; s && i < n;) {
        unsigned cp = (unsigned char)s[i];
        size_t k = utf8Decode((const unsigned char *)s + i, n - i, &cp);
        if (k == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
            const char *esc = cp == '\n' ? "\\n" : cp == '\t' ? "\\t" : cp == '\r' ? "\\r" : cp == 0 ? "\\0" : NULL;
            if (esc) w += fprintf(f, "%s", esc);
            else w += fprintf(f, "\\x%02x", k ? cp : (unsigned char)s[i]);
            i += k ? k : 1;
            continue;
        }
        fwrite(s + i, 1, k, f);
        w += utf8Width(cp);
        i += k;
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    *width = w;
    return out;
}

typedef struct tableSample {
    char **cells; /* rows x cols, owned: tableCell text */
    int *cw;      /* rows x cols: their widths */
    int rows, cols;
    int *width;
} tableSample;

static void tablePrintRow(const tableSample *t, char *const *cells, const int *cw) {
    for (int i = 0; i < t->cols; i++) {
        if (i) fputs("  ", stdout);
        if (cells[i]) fputs(cells[i], stdout);
        for (int k = cw[i]; i != t->cols - 1 && k < t->width[i]; k++) putchar(' ');
    }
    putchar('\n');
}

/* The header, the rule and the sampled rows. */
static void tableFlush(tableSample *t, char *const *names, const int *nw) {
    if (!t->width) return;
    tablePrintRow(t, names, nw);
    for (int i = 0; i < t->cols; i++) {
        for (int k = 0; k < t->width[i]; k++) putchar('-');
        putchar(i == t->cols - 1 ? '\n' : ' ');
        if (i != t->cols - 1) putchar(' ');
    }
    for (int r = 0; r < t->rows; r++) {
        size_t at = (size_t)r * (size_t)t->cols;
        tablePrintRow(t, t->cells + at, t->cw + at);
        for (int i = 0; i < t->cols; i++) free(t->cells[at + (size_t)i]);
    }
    t->rows = 0;
}

/* Run one prepared statement, printing its rows. */
static int emit(run *r, sqlite3_stmt *st, int *printedHeader) {
    int cols = sqlite3_column_count(st), first = 1, s = SQLITE_NOMEM;
    tableSample t = {0};
    char **names = NULL;
    int *nw = NULL;
    if (r->fmt == FMT_TABLE && cols) {
        t.cols = cols;
        t.width = calloc((size_t)cols, sizeof *t.width);
        t.cells = calloc((size_t)TABLE_SAMPLE * (size_t)cols, sizeof *t.cells);
        t.cw = calloc((size_t)TABLE_SAMPLE * (size_t)cols, sizeof *t.cw);
        names = calloc((size_t)cols, sizeof *names);
        nw = calloc((size_t)cols, sizeof *nw);
        if (!t.width || !t.cells || !t.cw || !names || !nw) goto out;
        for (int i = 0; i < cols; i++) {
            const char *name = sqlite3_column_name(st, i);
            if (!(names[i] = tableCell(name, strlen(name), &nw[i]))) goto out;
            t.width[i] = nw[i];
        }
    }
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (first && r->header && !*printedHeader && (r->fmt == FMT_TSV || r->fmt == FMT_CSV)) {
            for (int i = 0; i < cols; i++) {
                const char *name = sqlite3_column_name(st, i);
                if (i) putchar(r->fmt == FMT_TSV ? '\t' : ',');
                if (r->fmt == FMT_TSV) tsvField(name, strlen(name));
                else csvField(name, strlen(name));
            }
            putchar('\n');
            *printedHeader = 1;
        }
        switch (r->fmt) {
        case FMT_TSV:
        case FMT_CSV:
            for (int i = 0; i < cols; i++) {
                cell c;
                if (i) putchar(r->fmt == FMT_TSV ? '\t' : ',');
                if (cellGet(st, i, &c)) { s = SQLITE_NOMEM; goto out; }
                if (r->fmt == FMT_TSV) tsvField(c.p, c.n);
                else csvField(c.p, c.n);
                free(c.own);
            }
            putchar('\n');
            break;
        case FMT_JSON:
        case FMT_JSONL:
            if (printJsonRow(st, first, r->fmt == FMT_JSON)) { s = SQLITE_NOMEM; goto out; }
            break;
        case FMT_TABLE: {
            size_t at = (size_t)t.rows * (size_t)cols;
            int sampled = t.rows < TABLE_SAMPLE;
            char *tmp[64];
            int tmpw[64];
            char **cells = sampled ? t.cells + at : (cols <= 64 ? tmp : NULL);
            int *cw = sampled ? t.cw + at : tmpw;
            if (!cells) { s = SQLITE_NOMEM; goto out; }
            for (int i = 0; i < cols; i++) {
                cell c;
                cells[i] = NULL;
                if (cellGet(st, i, &c) || !(cells[i] = tableCell(c.p, c.n, &cw[i]))) {
                    free(c.own);
                    for (int k = 0; k < i; k++) free(cells[k]);
                    s = SQLITE_NOMEM;
                    goto out;
                }
                free(c.own);
                if (sampled && cw[i] > t.width[i]) t.width[i] = cw[i];
            }
            if (sampled) {
                t.rows++;
            } else {
                if (t.rows) tableFlush(&t, names, nw);
                tablePrintRow(&t, cells, cw);
                for (int i = 0; i < cols; i++) free(cells[i]);
            }
            break;
        }
        }
        first = 0;
    }
    if (r->fmt == FMT_JSON && !first) puts("\n]");
    if (r->fmt == FMT_JSON && first && cols) puts("[]");
    if (r->fmt == FMT_TABLE && t.rows) tableFlush(&t, names, nw);
out:
    for (int r0 = 0; t.cells && r0 < t.rows; r0++)
        for (int i = 0; i < cols; i++) free(t.cells[(size_t)r0 * (size_t)cols + (size_t)i]);
    for (int i = 0; names && i < cols; i++) free(names[i]);
    free(names);
    free(nw);
    free(t.cells);
    free(t.cw);
    free(t.width);
    return s == SQLITE_DONE ? SQLITE_OK : s;
}

/* --- running ------------------------------------------------------------- */

/* What a DELETE or UPDATE committed, as --import says what it appended. */
static void changedHook(void *arg, const char *ns, const char *name, const char *operation, int64_t rows) {
    (void)arg;
    logWarn("%s.%s: %lld row%s %s", ns, name, (long long)rows, rows == 1 ? "" : "s",
            strcmp(operation, "delete") == 0 ? "deleted" : "updated");
}

/* SQLite stops a statement that runs when a stop signal has arrived. */
static int onProgress(void *arg) {
    (void)arg;
    return interruptPending() != 0;
}

static long lineAt(const char *text, const char *at) {
    long line = 1;
    for (const char *p = text; p < at && *p; p++) line += *p == '\n';
    return line;
}

/* Where a failure of the statement at stmt (tail: its text with what
 * precedes it) happened: the line of SQLite's error offset while
 * compiling, else of the statement's first token. */
static void locate(run *r, const script *sc, const char *tail, int compiling, lakeError *err) {
    if (!sc->located) return;
    int off = compiling ? sqlite3_error_offset(r->s.db) : -1;
    const char *at = off >= 0 && (size_t)off <= strlen(tail) ? tail + off : querySkipBlank(tail);
    errPrefix(err, "%s:%ld", sc->name ? sc->name : sc->label, lineAt(sc->text, at));
}

/* --explain: run the statement with scans that read nothing, then print
 * the statement and what each scan kept and pruned (lake-query(1),
 * EXPLAIN).  Only statements that change nothing: 64 for others. */
static int explain(run *r, sqlite3_stmt *st, const char *text, const char *end, lakeError *err) {
    text = querySkipBlank(text);
    size_t n = end ? (size_t)(end - text) : strlen(text);
    while (n && (text[n - 1] == ';' || text[n - 1] == ' ' || text[n - 1] == '\n' || text[n - 1] == '\t')) n--;
    if (!sqlite3_stmt_readonly(st)) {
        sqlite3_free(sqlite3_str_finish(r->s.q.explain));
        r->s.q.explain = NULL;
        return errSet(err, LAKE_EUSAGE, "--explain shows what a query reads; run statements that write without it");
    }
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {}
    /* the tables a join looks up (their scans are never reached here:
     * the outer ones read nothing), from SQLite's plan */
    sqlite3_stmt *eqp = NULL;
    char *sql = sqlite3_mprintf("EXPLAIN QUERY PLAN %.*s", (int)n, text);
    if (s == SQLITE_DONE && sql && sqlite3_prepare_v2(r->s.db, sql, -1, &eqp, NULL) == SQLITE_OK)
        while (sqlite3_step(eqp) == SQLITE_ROW) {
            const char *d = (const char *)sqlite3_column_text(eqp, 3), *m = d ? strstr(d, QUERY_LOOKUP_MARK) : NULL;
            const char *e = m ? strstr(m, " */") : NULL;
            if (e)
                sqlite3_str_appendf(r->s.q.explain, "%.*s (a join), in a temporary index of its kept rows built once\n",
                                    (int)(e - m - strlen(QUERY_LOOKUP_MARK)), m + strlen(QUERY_LOOKUP_MARK));
        }
    sqlite3_finalize(eqp);
    sqlite3_free(sql);
    char *report = sqlite3_str_finish(r->s.q.explain);
    r->s.q.explain = NULL;
    if (s == SQLITE_DONE) {
        printf("%.*s\n", (int)n, text);
        fputs(report && *report ? report : "no lake table read\n", stdout);
    }
    sqlite3_free(report);
    return s == SQLITE_DONE ? 0 : querySessionFailure(&r->s, text, 0, err);
}

int runScript(run *r, const script *sc, lakeError *err) {
    int attempt = 1; /* of the statement at tail (a DELETE or UPDATE runs again after a lost race) */
    for (const char *tail = sc->text; tail && *tail;) {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        if (interruptPending()) return errSet(err, LAKE_EFAIL, "interrupted");
        r->s.q.replan = 0;
        if (r->explain) r->s.q.explain = sqlite3_str_new(NULL); /* the scans' report, see explain() */
        int rc = querySessionCompile(&r->s, tail, &st, &next, err);
        if (rc || !st) {
            sqlite3_free(sqlite3_str_finish(r->s.q.explain));
            r->s.q.explain = NULL;
        }
        if (rc) {
            locate(r, sc, tail, 1, err);
            return rc;
        }
        if (!st) break; /* only white space or comments left */
        errClear(&r->s.q.err);
        rc = r->explain ? explain(r, st, tail, next, err) : emit(r, st, &r->printedHeader);
        sqlite3_finalize(st);
        if (rc != SQLITE_OK && !r->explain) rc = querySessionFailure(&r->s, querySkipBlank(tail), 0, err); /* before SQLite's message goes */
        queryUnpin(&r->s.q); /* the next statement resolves afresh */
        if (rc && r->s.q.replan) {
            /* another writer replaced a segment this DELETE or UPDATE
             * read: nothing was committed; plan it again on the new version */
            if (querySessionRetry(&r->s, attempt, err)) {
                attempt++;
                continue;
            }
            rc = err->code;
        }
        attempt = 1;
        if (rc) { /* with --explain, explain's own failure: a lake code */
            locate(r, sc, tail, 0, err);
            return rc;
        }
        if (fflush(stdout) == EOF) return errSetErrno(err, LAKE_EFAIL, errno, "stdout");
        tail = next;
    }
    return 0;
}

/* --import NS.T: stdin through the import reader into new segments, then
 * one append (querySessionImport).  A stop signal makes the read give up:
 * nothing is appended and the temporary segment is removed. */
static int runImport(run *r, lakeError *err) {
    char *ns, *name;
    if (nameSplitTable(r->import, &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    free(ns);
    free(name);
    int fd = STDIN_FILENO;
    lakeReader in = {interruptRead, &fd, "stdin"};
    progress prog;
    struct stat sb; /* stdin a file: its size, for the percentage */
    int64_t total = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? sb.st_size - lseek(fd, 0, SEEK_CUR) : -1;
    progressStart(&prog, r->progress, r->import, total < 0 ? -1 : total);
    return querySessionImport(&r->s, r->import, &in, r->strict ? r->importFmt | IMPORT_STRICT : r->importFmt, &prog,
                              interruptFlag(), NULL, err);
}

/* Might this operand be SQL rather than a file name?  White space, a
 * semicolon, or a lone SQL keyword. */
static int looksLikeSql(const char *s) {
    static const char *const kw[] = {"SELECT", "INSERT", "WITH", "VALUES", "PRAGMA", "EXPLAIN",
                                     "CREATE", "DROP", "ALTER", "UPDATE", "DELETE"};
    if (strpbrk(s, " \t\n;")) return 1;
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strcasecmp(s, kw[i]) == 0) return 1;
    return 0;
}

/* The whole script of a file or stdin ("-"), bounded; a NUL byte is
 * refused (65, naming its line) rather than silently ending the script. */
char *readScript(const char *path, lakeError *err) {
    const char *what = strcmp(path, "-") == 0 ? "stdin" : path;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f && errno == ENOENT && looksLikeSql(path)) {
        errSet(err, LAKE_EUSAGE, "%s: no such file; to run SQL, give it with -c", path);
        return NULL;
    }
    if (!f) {
        errSetErrno(err, errCodeForErrno(errno), errno, "%s", path);
        return NULL;
    }
    char *buf = malloc(SCRIPT_MAX + 1);
    size_t n = buf ? fread(buf, 1, SCRIPT_MAX + 1, f) : 0;
    int failed = buf && ferror(f), e = errno;
    if (f != stdin) fclose(f);
    char *nul = buf && !failed ? memchr(buf, '\0', n < SCRIPT_MAX ? n : SCRIPT_MAX) : NULL;
    if (!buf) errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", what);
    else if (failed && interruptPending()) errSet(err, LAKE_EFAIL, "%s: interrupted", what);
    else if (failed) errSetErrno(err, LAKE_EFAIL, e, "%s", what);
    else if (n > SCRIPT_MAX) errSet(err, LAKE_EDATA, "%s: a script of more than %d bytes", what, SCRIPT_MAX);
    else if (nul) errSet(err, LAKE_EDATA, "%s:%ld: a NUL byte in the script", what, lineAt(buf, nul));
    else {
        buf[n] = '\0';
        return buf;
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    logInit(argv[0]);
    /* people at a terminal get the aligned table, scripts TSV */
    run r = {.fmt = isatty(STDOUT_FILENO) ? FMT_TABLE : FMT_TSV, .importFmt = IMPORT_AUTO};
    const char *arg;
    int c, first, fmtGiven = 0;
    if (!(r.sqls = calloc((size_t)argc, sizeof *r.sqls))) {
        logErrorf("out of memory");
        return LAKE_EFAIL;
    }
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) {
        switch (c) {
        case 'q': logSetQuiet(1); r.progress = PROGRESS_OFF; break;
        case OPT_PROGRESS: if (!logQuiet()) r.progress = PROGRESS_ON; break;
        case OPT_NO_PROGRESS: r.progress = PROGRESS_OFF; break;
        case OPT_FORMAT:
            if (formatParse(arg, &r.fmt)) cliUsageError(&spec, "--format: '%s' is not tsv, csv, json, jsonl or table", arg);
            fmtGiven = 1;
            break;
        case OPT_HEADER: r.header = 1; break;
        case OPT_SQL: r.sqls[r.nsql++] = arg; break;
        case OPT_IMPORT: r.import = arg; break;
        case OPT_CSV: r.importFmt = IMPORT_CSV; break;
        case OPT_JSONL: r.importFmt = IMPORT_JSONL; break;
        case OPT_STRICT: r.strict = 1; break;
        case OPT_EXPLAIN: r.explain = 1; break;
        }
    }
    int operands = argc - first;
    if (r.import && (r.nsql || operands)) cliUsageError(&spec, "--import reads data on stdin, not SQL");
    if (!r.import && (r.importFmt != IMPORT_AUTO || r.strict))
        cliUsageError(&spec, "--csv, --jsonl and --strict go with --import");
    if (r.strict && r.importFmt == IMPORT_JSONL) cliUsageError(&spec, "--strict is for CSV; JSON Lines are always strict");
    if (r.nsql && operands) cliUsageError(&spec, "give SQL with -c or as a file, not both");
    if (operands > 1) cliUsageError(&spec, "one SQL file at most");
    /* no SQL at a terminal: the interactive shell, the aligned table
     * unless -f says otherwise (wherever stdout goes) */
    int interactive = !r.import && !r.nsql && !operands && isatty(STDIN_FILENO);
    if (interactive && !fmtGiven) r.fmt = FMT_TABLE;
    interruptCatch(1); /* stop cleanly: statements and imports look */

    lakeError err = {0};
    char *text = NULL;
    int rc = 0;
    /* no allocation statistics: their global mutex serialises the threads
     * of a split aggregate (query/aggregate.h), and nothing reads them */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    rc = querySessionOpen(&r.s, &err);
    if (!rc) {
        r.s.q.changed = changedHook;
        sqlite3_progress_handler(r.s.db, 1000, onProgress, NULL);
    }
    if (!rc && r.import) rc = runImport(&r, &err);
    for (int i = 0; !rc && i < r.nsql; i++) {
        /* -c: located when there are several, or lines to count */
        script sc = {.text = r.sqls[i], .located = r.nsql > 1 || strchr(r.sqls[i], '\n') != NULL};
        snprintf(sc.label, sizeof sc.label, r.nsql > 1 ? "-c#%d" : "-c", i + 1);
        rc = runScript(&r, &sc, &err);
    }
    if (!rc && interactive) rc = shellRun(&r, &err);
    else if (!rc && !r.import && !r.nsql) {
        const char *path = operands ? argv[first] : "-";
        script sc = {.located = 1};
        if (!(text = readScript(path, &err))) rc = err.code;
        snprintf(sc.label, sizeof sc.label, "stdin");
        sc.name = strcmp(path, "-") == 0 ? NULL : path;
        sc.text = text;
        if (!rc) rc = runScript(&r, &sc, &err);
    }
    if (rc && !interruptPending()) logError(&err);
    querySessionClose(&r.s); /* compacts what INSERT and --import appended */
    free(text);
    free(r.sqls);
    interruptExit(); /* cleaned up: now die of the signal, as the caller expects */
    return rc;
}
