/*
 * lake-query - SQL (SQLite's engine) over lake tables.
 *
 *   lake-query [-f tsv|csv|json|jsonl|table] [-H] [-c SQL | SQL-FILE | -]
 *   lake-query --import NS.T [--csv | --jsonl] [--strict] < DATA
 *
 * Tables are named namespace.table.  Each statement of the script runs in
 * turn, its rows printed as they come (the aligned table format measures
 * its columns over the first TABLE_SAMPLE rows).  INSERT and --import
 * append one new table version each (query/vtab, query/segment).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/cache.h"
#include "catalog/names.h"
#include "catalog/source.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/realtext.h"
#include "core/utf8.h"
#include "query/filefn.h"
#include "query/import.h"
#include "query/segcache.h"
#include "query/segment.h"
#include "query/vtab.h"

/* The largest SQL script read from a file or stdin. */
#define SCRIPT_MAX (16 * 1024 * 1024)
/* The aligned table format sizes its columns over this many rows. */
#define TABLE_SAMPLE 1000

enum { OPT_FORMAT = 'f', OPT_HEADER = 'H', OPT_SQL = 'c', OPT_IMPORT = 0x100, OPT_CSV, OPT_JSONL,
       OPT_STRICT, OPT_PROGRESS, OPT_NO_PROGRESS };

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings or progress"},
    {OPT_FORMAT, 'f', "format", "FMT", "output: tsv, csv, json, jsonl or table (default: table on a terminal, else tsv)"},
    {OPT_HEADER, 'H', "header", NULL, "print a header row (tsv, csv)"},
    {OPT_SQL, 'c', "command", "SQL", "run SQL instead of reading a script"},
    {OPT_IMPORT, 0, "import", "NS.T", "append the rows of CSV or JSON Lines on stdin to a table"},
    {OPT_CSV, 0, "csv", NULL, "with --import: the input is CSV with a header row"},
    {OPT_JSONL, 0, "jsonl", NULL, "with --import: the input is JSON Lines"},
    {OPT_STRICT, 0, "strict", NULL, "with --import: a quote or lone CR in an unquoted CSV field is an error, not data"},
    {OPT_PROGRESS, 0, "progress", NULL, "with --import: draw a progress bar even if stderr is no terminal"},
    {OPT_NO_PROGRESS, 0, "no-progress", NULL, "with --import: never draw a progress bar"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "[-f tsv|csv|json|jsonl|table] [-H] [-c SQL | SQL-FILE | -]\n"
    "--import NS.T [--csv | --jsonl] [--strict] < DATA",
    "Run SQL over lake tables (namespace.table); INSERT and --import append new table versions.",
    options,
    0,
    1,
};

typedef enum { FMT_TSV, FMT_CSV, FMT_JSON, FMT_JSONL, FMT_TABLE } format;

typedef struct run {
    format fmt;
    int header;
    const char *sql, *import;
    importFormat importFmt;
    int strict;
    progressMode progress;
    lakeConfig cfg;
    catalogSource *src;
    catalogCache *cache;
    stage *stage;
    segcache *segs;
    queryContext q;
    sqlite3 *db;
} run;

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

/* The lake error behind a failed statement, else an SQL one (1). */
static int sqlFailure(run *r, lakeError *err) {
    if (r->q.err.code) {
        *err = r->q.err;
        return err->code;
    }
    return errSet(err, LAKE_EFAIL, "%s", sqlite3_errmsg(r->db));
}

static int runScript(run *r, const char *sql, lakeError *err) {
    int printedHeader = 0;
    for (const char *tail = sql; tail && *tail;) {
        sqlite3_stmt *st = NULL;
        errClear(&r->q.err);
        /* declare the lake tables this statement names, from the cache */
        const char *next = NULL;
        int rc = queryDeclare(r->db, &r->q, tail, err);
        if (rc) return rc;
        if (sqlite3_prepare_v2(r->db, tail, -1, &st, &next) != SQLITE_OK) {
            /* a statement SQLite cannot compile is bad input (65), one
             * naming a table that does not exist a missing input (66) */
            if (r->q.err.code) return sqlFailure(r, err);
            const char *m = sqlite3_errmsg(r->db);
            return errSet(err, strncmp(m, "no such table", 13) == 0 ? LAKE_ENOINPUT : LAKE_EDATA, "%s", m);
        }
        if (!st) break; /* only white space or comments left */
        rc = emit(r, st, &printedHeader);
        sqlite3_finalize(st);
        queryUnpin(&r->q); /* the next statement resolves afresh */
        if (rc != SQLITE_OK) return sqlFailure(r, err);
        if (fflush(stdout) == EOF) return errSetErrno(err, LAKE_EFAIL, errno, "stdout");
        tail = next;
    }
    return 0;
}

/* --import NS.T: stdin through the import reader into new segments, then
 * one append. */
static int runImport(run *r, lakeError *err) {
    char *ns, *name;
    if (nameSplitTable(r->import, &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    cJSON *reg = NULL, *segs = NULL, *files = NULL;
    segmentWriter *w = NULL;
    int64_t rows = 0, version;
    int fd = STDIN_FILENO;
    lakeReader in = {fdRead, &fd, "stdin"};
    segmentWriterOptions opt = {.hex_blobs = 1};
    progress prog;
    struct stat sb; /* stdin a file: its size, for the percentage */
    int64_t total = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? sb.st_size - lseek(fd, 0, SEEK_CUR) : -1;
    progressStart(&prog, r->progress, r->import, total < 0 ? -1 : total);
    int rc = cacheResolve(r->cache, ns, name, -1, &reg, err);
    if (!rc) rc = cacheMayRun(r->cache, "append", err); /* before any segment is stored */
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(reg, "id");
    char *schema = rc ? NULL : cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reg, "schema"));
    if (!rc && (!cJSON_IsString(id) || !schema)) rc = errSet(err, LAKE_EFAIL, "%s: malformed registration", r->import);
    if (!rc) rc = segmentWriterOpen(r->stage, id->valuestring, schema, &opt, &w, err);
    if (!rc) rc = importRun(&in, r->strict ? r->importFmt | IMPORT_STRICT : r->importFmt, w, &rows, &prog, err);
    progressEnd(&prog);
    if (!rc) rc = segmentWriterFinish(w, &segs, &files, err);
    if (!rc && rows > 0)
        rc = cacheAppendCommuting(r->cache, ns, name,
                                  (int64_t)cJSON_GetObjectItemCaseSensitive(reg, "version")->valuedouble, segs,
                                  files, &version, err);
    /* no rows is not an error: nothing is appended and no version made */
    if (!rc && rows == 0) logWarn("%s: no rows: nothing appended", r->import);
    else if (!rc) logWarn("%s: %lld row%s appended", r->import, (long long)rows, rows == 1 ? "" : "s");
    segmentWriterFree(w);
    cJSON_Delete(reg);
    cJSON_Delete(segs);
    cJSON_Delete(files);
    cJSON_free(schema);
    free(ns);
    free(name);
    return rc;
}

/* The whole script: -c, a file, or stdin; bounded. */
static char *readScript(const char *path, lakeError *err) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        errSetErrno(err, errCodeForErrno(errno), errno, "%s", path);
        return NULL;
    }
    char *buf = malloc(SCRIPT_MAX + 1);
    size_t n = buf ? fread(buf, 1, SCRIPT_MAX + 1, f) : 0;
    if (f != stdin) fclose(f);
    if (!buf) errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", path);
    else if (n > SCRIPT_MAX) errSet(err, LAKE_EDATA, "%s: a script of more than %d bytes", path, SCRIPT_MAX);
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
    int c, first;
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) {
        switch (c) {
        case 'q': logSetQuiet(1); r.progress = PROGRESS_OFF; break;
        case OPT_PROGRESS: if (!logQuiet()) r.progress = PROGRESS_ON; break;
        case OPT_NO_PROGRESS: r.progress = PROGRESS_OFF; break;
        case OPT_FORMAT:
            if (strcmp(arg, "tsv") == 0) r.fmt = FMT_TSV;
            else if (strcmp(arg, "csv") == 0) r.fmt = FMT_CSV;
            else if (strcmp(arg, "json") == 0) r.fmt = FMT_JSON;
            else if (strcmp(arg, "jsonl") == 0) r.fmt = FMT_JSONL;
            else if (strcmp(arg, "table") == 0) r.fmt = FMT_TABLE;
            else cliUsageError(&spec, "--format: '%s' is not tsv, csv, json, jsonl or table", arg);
            break;
        case OPT_HEADER: r.header = 1; break;
        case OPT_SQL: r.sql = arg; break;
        case OPT_IMPORT: r.import = arg; break;
        case OPT_CSV: r.importFmt = IMPORT_CSV; break;
        case OPT_JSONL: r.importFmt = IMPORT_JSONL; break;
        case OPT_STRICT: r.strict = 1; break;
        }
    }
    int operands = argc - first;
    if (r.import && (r.sql || operands)) cliUsageError(&spec, "--import reads data on stdin, not SQL");
    if (!r.import && (r.importFmt != IMPORT_AUTO || r.strict))
        cliUsageError(&spec, "--csv, --jsonl and --strict go with --import");
    if (r.strict && r.importFmt == IMPORT_JSONL) cliUsageError(&spec, "--strict is for CSV; JSON Lines are always strict");
    if (r.sql && operands) cliUsageError(&spec, "give SQL with -c or as a file, not both");
    if (operands > 1) cliUsageError(&spec, "one SQL file at most");

    lakeError err = {0};
    char *script = NULL, *stageUrl = NULL;
    int64_t segMax = 0;
    int rc = configLoad(&r.cfg, NULL, 0, &err);
    cacheOptions copt = {r.cfg.catalog_ttl, 0, 0};
    if (!rc) rc = sourceOpen(&r.cfg, &r.src, &err);
    if (!rc) rc = cacheOpen(&r.cfg, r.src, &copt, &r.cache, &err);
    if (!rc) rc = catalogStageUrl(&r.cfg, r.cache, &stageUrl, &err);
    if (!rc) rc = stageOpen(stageUrl, &r.stage, &err);
    if (!rc) rc = segcacheMaxFromEnv(&segMax, &err);
    if (!rc) rc = segcacheOpen(r.cfg.cache_dir, segMax, &r.segs, &err);
    if (!rc && !r.import) {
        script = r.sql ? strdup(r.sql) : readScript(operands ? argv[first] : "-", &err);
        if (!script && !err.code) rc = errSetErrno(&err, LAKE_EFAIL, ENOMEM, "script");
        else if (!script) rc = err.code;
    }
    if (!rc) {
        r.q = (queryContext){.cache = r.cache, .stage = r.stage, .segs = r.segs};
        if (sqlite3_open_v2(":memory:", &r.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) rc = errSet(&err, LAKE_EFAIL, "sqlite: cannot open");
        if (!rc) rc = queryRegister(r.db, &r.q, &err);
        if (!rc) rc = fileFunctionsRegister(r.db, r.stage, &err);
    }
    if (!rc) rc = r.import ? runImport(&r, &err) : runScript(&r, script, &err);
    if (rc) logError(&err);
    sqlite3_close(r.db);
    segcacheClose(r.segs);
    cacheClose(r.cache);
    stageClose(r.stage);
    sourceClose(r.src);
    configFree(&r.cfg);
    free(script);
    free(stageUrl);
    return rc;
}
