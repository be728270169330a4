/*
 * lake-query - SQL (SQLite's engine) over lake tables.
 *
 *   lake-query [-f tsv|csv|json|jsonl|table] [-H] [-c SQL | SQL-FILE | -]
 *   lake-query --import NS.T [--csv | --jsonl] < DATA
 *
 * Tables are named namespace.table.  Each statement of the script runs in
 * turn, its rows printed as they come (the aligned table format measures
 * its columns over the first TABLE_SAMPLE rows).  INSERT and --import
 * append one new table version each (query/vtab, query/segment).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/cache.h"
#include "catalog/names.h"
#include "catalog/source.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/log.h"
#include "query/filefn.h"
#include "query/import.h"
#include "query/segcache.h"
#include "query/segment.h"
#include "query/vtab.h"

/* The largest SQL script read from a file or stdin. */
#define SCRIPT_MAX (16 * 1024 * 1024)
/* The aligned table format sizes its columns over this many rows. */
#define TABLE_SAMPLE 1000

enum { OPT_FORMAT = 'f', OPT_HEADER = 'H', OPT_SQL = 'c', OPT_IMPORT = 0x100, OPT_CSV, OPT_JSONL };

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings"},
    {OPT_FORMAT, 'f', "format", "FMT", "output: tsv, csv, json, jsonl or table (default: table on a terminal, else tsv)"},
    {OPT_HEADER, 'H', "header", NULL, "print a header row (tsv, csv)"},
    {OPT_SQL, 'c', "command", "SQL", "run SQL instead of reading a script"},
    {OPT_IMPORT, 0, "import", "NS.T", "append the rows of CSV or JSON Lines on stdin to a table"},
    {OPT_CSV, 0, "csv", NULL, "with --import: the input is CSV with a header row"},
    {OPT_JSONL, 0, "jsonl", NULL, "with --import: the input is JSON Lines"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "[-f tsv|csv|json|jsonl|table] [-H] [-c SQL | SQL-FILE | -]\n"
    "--import NS.T [--csv | --jsonl] < DATA",
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

/* TSV: tabs, newlines and backslashes escaped as \t \n \\; NULL is empty. */
static void tsvField(const char *s) {
    for (; s && *s; s++) {
        if (*s == '\t') fputs("\\t", stdout);
        else if (*s == '\n') fputs("\\n", stdout);
        else if (*s == '\r') fputs("\\r", stdout);
        else if (*s == '\\') fputs("\\\\", stdout);
        else putchar(*s);
    }
}

/* CSV (RFC 4180): quoted when it holds a comma, quote or line break, or
 * is empty (so "" is the empty string and an empty field NULL, as
 * --import reads them). */
static void csvField(const char *s) {
    if (!s) return;
    if (*s && !strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* A BLOB as lowercase hex, like SQLite's hex() (malloc'd). */
static char *blobHex(sqlite3_stmt *st, int i) {
    const unsigned char *b = sqlite3_column_blob(st, i);
    int n = sqlite3_column_bytes(st, i);
    char *hex = malloc((size_t)n * 2 + 1);
    if (!hex) return NULL;
    static const char digit[] = "0123456789abcdef";
    for (int k = 0; k < n; k++) {
        hex[2 * k] = digit[b[k] >> 4];
        hex[2 * k + 1] = digit[b[k] & 15];
    }
    hex[2 * n] = '\0';
    return hex;
}

/* A value as text for tsv, csv and table: SQLite's text of it, a BLOB in
 * hex (so NUL bytes and binary never reach the terminal or the next
 * program raw).  *own is what to free. */
static const char *cellText(sqlite3_stmt *st, int i, char **own) {
    *own = NULL;
    if (sqlite3_column_type(st, i) == SQLITE_BLOB) return *own = blobHex(st, i);
    return (const char *)sqlite3_column_text(st, i);
}

static cJSON *jsonValue(sqlite3_stmt *st, int i) {
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return cJSON_CreateNull();
    case SQLITE_INTEGER: {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)sqlite3_column_int64(st, i));
        return cJSON_CreateRaw(num);
    }
    case SQLITE_FLOAT: return cJSON_CreateNumber(sqlite3_column_double(st, i));
    case SQLITE_BLOB: {
        char *hex = blobHex(st, i);
        cJSON *j = hex ? cJSON_CreateString(hex) : NULL;
        free(hex);
        return j;
    }
    default: {
        const char *t = (const char *)sqlite3_column_text(st, i);
        cJSON *file = isFileColumn(st, i) ? cJSON_Parse(t) : NULL;
        return file ? file : cJSON_CreateString(t); /* a FILE value as an object */
    }
    }
}

static int printJsonRow(sqlite3_stmt *st, int first, int array) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < sqlite3_column_count(st); i++)
        cJSON_AddItemToObject(o, sqlite3_column_name(st, i), jsonValue(st, i));
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return -1;
    if (array) printf("%s%s", first ? "[\n" : ",\n", text);
    else puts(text);
    cJSON_free(text);
    return 0;
}

typedef struct tableSample {
    char **cells; /* rows x cols, owned */
    int rows, cols;
    int *width;
} tableSample;

static void tablePrintRow(const tableSample *t, char *const *cells) {
    for (int i = 0; i < t->cols; i++)
        printf("%s%-*s", i ? "  " : "", i == t->cols - 1 ? 0 : t->width[i], cells[i] ? cells[i] : "");
    putchar('\n');
}

static void tableFlush(tableSample *t, sqlite3_stmt *st) {
    if (!t->width) return;
    char **names = calloc((size_t)t->cols, sizeof *names);
    for (int i = 0; names && i < t->cols; i++) names[i] = (char *)sqlite3_column_name(st, i);
    if (names) tablePrintRow(t, names);
    for (int i = 0; i < t->cols; i++) {
        for (int k = 0; k < t->width[i]; k++) putchar('-');
        putchar(i == t->cols - 1 ? '\n' : ' ');
        if (i != t->cols - 1) putchar(' ');
    }
    for (int r = 0; r < t->rows; r++) {
        tablePrintRow(t, t->cells + (size_t)r * (size_t)t->cols);
        for (int i = 0; i < t->cols; i++) free(t->cells[(size_t)r * (size_t)t->cols + (size_t)i]);
    }
    free(names);
    t->rows = 0;
}

/* Run one prepared statement, printing its rows. */
static int emit(run *r, sqlite3_stmt *st, int *printedHeader) {
    int cols = sqlite3_column_count(st), first = 1, s;
    tableSample t = {0};
    if (r->fmt == FMT_TABLE && cols) {
        t.cols = cols;
        t.width = calloc((size_t)cols, sizeof *t.width);
        t.cells = calloc((size_t)TABLE_SAMPLE * (size_t)cols, sizeof *t.cells);
        if (!t.width || !t.cells) return SQLITE_NOMEM;
        for (int i = 0; i < cols; i++) t.width[i] = (int)strlen(sqlite3_column_name(st, i));
    }
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (first && r->header && !*printedHeader && (r->fmt == FMT_TSV || r->fmt == FMT_CSV)) {
            for (int i = 0; i < cols; i++) {
                if (i) putchar(r->fmt == FMT_TSV ? '\t' : ',');
                if (r->fmt == FMT_TSV) tsvField(sqlite3_column_name(st, i));
                else csvField(sqlite3_column_name(st, i));
            }
            putchar('\n');
            *printedHeader = 1;
        }
        switch (r->fmt) {
        case FMT_TSV:
        case FMT_CSV:
            for (int i = 0; i < cols; i++) {
                if (i) putchar(r->fmt == FMT_TSV ? '\t' : ',');
                char *own;
                const char *v = cellText(st, i, &own);
                if (r->fmt == FMT_TSV) tsvField(v);
                else csvField(v);
                free(own);
            }
            putchar('\n');
            break;
        case FMT_JSON:
        case FMT_JSONL:
            if (printJsonRow(st, first, r->fmt == FMT_JSON)) return SQLITE_NOMEM;
            break;
        case FMT_TABLE: {
            char **row = t.rows < TABLE_SAMPLE ? t.cells + (size_t)t.rows * (size_t)cols : NULL;
            char *tmp[64];
            char **cells = row ? row : (cols <= 64 ? tmp : NULL);
            if (!cells) return SQLITE_NOMEM;
            for (int i = 0; i < cols; i++) {
                char *own;
                const char *v = cellText(st, i, &own);
                cells[i] = own ? own : v ? strdup(v) : NULL;
                int w = v ? (int)strlen(v) : 0;
                if (row && w > t.width[i]) t.width[i] = w;
            }
            if (row) {
                t.rows++;
            } else {
                if (t.rows) tableFlush(&t, st);
                tablePrintRow(&t, cells);
                for (int i = 0; i < cols; i++) free(cells[i]);
            }
            break;
        }
        }
        first = 0;
    }
    if (r->fmt == FMT_JSON && !first) puts("\n]");
    if (r->fmt == FMT_JSON && first && cols) puts("[]");
    if (r->fmt == FMT_TABLE && t.rows) tableFlush(&t, st);
    free(t.cells);
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
    int rc = cacheResolve(r->cache, ns, name, -1, &reg, err);
    if (!rc) rc = cacheMayRun(r->cache, "append", err); /* before any segment is stored */
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(reg, "id");
    char *schema = rc ? NULL : cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(reg, "schema"));
    if (!rc && (!cJSON_IsString(id) || !schema)) rc = errSet(err, LAKE_EFAIL, "%s: malformed registration", r->import);
    if (!rc) rc = segmentWriterOpen(r->stage, id->valuestring, schema, &opt, &w, err);
    if (!rc) rc = importRun(&in, r->importFmt, w, &rows, err);
    if (!rc) rc = segmentWriterFinish(w, &segs, &files, err);
    if (!rc && rows > 0)
        rc = cacheAppendCommuting(r->cache, ns, name,
                                  (int64_t)cJSON_GetObjectItemCaseSensitive(reg, "version")->valuedouble, segs,
                                  files, &version, err);
    if (!rc) logWarn("%s: %lld row%s appended", r->import, (long long)rows, rows == 1 ? "" : "s");
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
        case 'q': logSetQuiet(1); break;
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
        }
    }
    int operands = argc - first;
    if (r.import && (r.sql || operands)) cliUsageError(&spec, "--import reads data on stdin, not SQL");
    if (!r.import && r.importFmt != IMPORT_AUTO) cliUsageError(&spec, "--csv and --jsonl go with --import");
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
