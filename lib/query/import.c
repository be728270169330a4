/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * import.c - CSV and JSON Lines record readers (see import.h).
 *
 * Both read through one 64 KiB input buffer.  CSV is a small state machine
 * over bytes (no Debian CSV library is among the dependencies); JSON Lines
 * collects one line at a time and hands it to jsonStrictParse (one
 * validating pass, which also notes where the numbers are, then cJSON).
 */
#include "query/import.h"

#include "catalog/names.h"
#include "core/jsonstrict.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUT_BUF (64 * 1024)
/* A header names distinct columns, so no valid record has more fields than
 * a table has columns: this bounds the field index arrays too. */
#define SCHEMA_FIELDS_MAX SCHEMA_MAX_COLUMNS
#define NAME_FIELD_MAX NAME_MAX_LEN

enum { BYTE_EOF = -1, BYTE_ERR = -2 };

struct importReader {
    lakeReader *in;
    importFormat fmt;
    int strict;       /* CSV: IMPORT_STRICT was given */
    const segmentSchema *schema;
    int64_t max;
    char *buf;
    size_t len, pos;
    int eof;
    int64_t line;     /* the line of the next byte, from 1 */
    int64_t rec_line; /* the line the last record started on */
    lakeValue *vals;  /* one per column */
    /* CSV: the record's fields, as (offset, length, quoted) into fld */
    char *fld;
    size_t fld_len, fld_cap;
    size_t *off, *flen;
    int *quoted;
    int nf, nf_cap;
    int nhdr;
    int *map;         /* header field -> column */
    /* JSON Lines */
    char *lbuf;
    size_t llen, lcap;
    cJSON *obj;
    char **printed;   /* per column: FILE objects printed as text */
    char *seen;       /* per column: named on this line */
    size_t *num;      /* the offsets of the line's numbers, in order */
    size_t nnum, num_cap;
};

/* The next input byte, BYTE_EOF, or BYTE_ERR with err set. */
static int nextByte(importReader *r, lakeError *err) {
    if (r->pos == r->len) {
        if (r->eof) return BYTE_EOF;
        ssize_t n = r->in->read(r->in->ctx, r->buf, INPUT_BUF);
        if (n < 0) {
            errSetErrno(err, LAKE_EFAIL, errno, "%s", r->in->what);
            return BYTE_ERR;
        }
        r->pos = 0;
        r->len = (size_t)n;
        if (n == 0) {
            r->eof = 1;
            return BYTE_EOF;
        }
    }
    unsigned char c = (unsigned char)r->buf[r->pos++];
    if (c == '\n') r->line++;
    return c;
}

/* The next byte without consuming it (BYTE_EOF / BYTE_ERR likewise). */
static int peekByte(importReader *r, lakeError *err) {
    int c = nextByte(r, err);
    if (c >= 0) {
        r->pos--;
        if (c == '\n') r->line--;
    }
    return c;
}

static int dataErr(importReader *r, lakeError *err, int64_t line, const char *what) {
    return errSet(err, LAKE_EDATA, "%s: line %lld: %s", r->in->what, (long long)line, what);
}

/* --- CSV ----------------------------------------------------------------- */

static int fldPut(importReader *r, int c, lakeError *err) {
    if ((int64_t)r->fld_len + 1 > r->max) {
        char what[96];
        snprintf(what, sizeof what, "a record longer than %lld bytes", (long long)r->max);
        return dataErr(r, err, r->rec_line, what);
    }
    if (r->fld_len == r->fld_cap) {
        size_t cap = r->fld_cap ? r->fld_cap * 2 : 4096;
        char *f = realloc(r->fld, cap);
        if (!f) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
        r->fld = f;
        r->fld_cap = cap;
    }
    r->fld[r->fld_len++] = (char)c;
    return 0;
}

/* End the field that started at start.  Every field points into fld,
 * even an empty one of a record that had no bytes yet (a NULL fld plus
 * an offset is undefined, however few bytes are then read). */
static int fldEnd(importReader *r, size_t start, int quoted, lakeError *err) {
    if (!r->fld) {
        if (!(r->fld = malloc(4096))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
        r->fld_cap = 4096;
    }
    if (r->nf == r->nf_cap) {
        int cap = r->nf_cap ? r->nf_cap * 2 : 16;
        size_t *o = realloc(r->off, (size_t)cap * sizeof *o);
        if (o) r->off = o;
        size_t *l = o ? realloc(r->flen, (size_t)cap * sizeof *l) : NULL;
        if (l) r->flen = l;
        int *q = l ? realloc(r->quoted, (size_t)cap * sizeof *q) : NULL;
        if (!q) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
        r->quoted = q;
        r->nf_cap = cap;
    }
    if (r->nf >= SCHEMA_FIELDS_MAX)
        return dataErr(r, err, r->rec_line, "more fields than a table may have columns");
    r->off[r->nf] = start;
    r->flen[r->nf] = r->fld_len - start;
    r->quoted[r->nf++] = quoted;
    return 0;
}

/* 1 when the byte after a CR is LF (and consumes it); 0 otherwise; <0 on a
 * read error. */
static int crlf(importReader *r, lakeError *err) {
    int c = peekByte(r, err);
    if (c == BYTE_ERR) return -1;
    if (c == '\n') {
        nextByte(r, err);
        return 1;
    }
    return 0;
}

/* With --strict, a quote or a lone carriage return c inside an unquoted
 * field is 65; otherwise (and for any other byte) 0. */
static int csvStrictByte(importReader *r, int c, lakeError *err) {
    if (!r->strict) return 0;
    if (c == '"') return dataErr(r, err, r->line, "a quote inside an unquoted field");
    if (c == '\r') return dataErr(r, err, r->line, "a carriage return without a line feed outside quotes");
    return 0;
}

/* Read one CSV record into the field arrays: 1, 0 at the end of input, or
 * an error code.  A line with no bytes is skipped, except after the header
 * of a one-column file, where it is that column's empty unquoted field
 * (NULL): how the -f csv output writes a one-column NULL row.  A quote or a
 * carriage return without its line feed inside an unquoted field is data,
 * as sqlite3's .import and Python's csv read it, unless r->strict (RFC
 * 4180 allows neither there). */
static int csvRecord(importReader *r, lakeError *err) {
    enum { START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED } st = START;
    int rc;
    size_t start = 0;
    int64_t qline = 0;
    r->nf = 0;
    r->fld_len = 0;
    r->rec_line = r->line;
    for (;;) {
        int c = nextByte(r, err);
        if (c == BYTE_ERR) return err->code;
        int eol = c == '\n';
        if (c == '\r' && st != QUOTED) {
            int k = crlf(r, err);
            if (k < 0) return err->code;
            eol = k;
        }
        switch (st) {
        case START:
            if (c == BYTE_EOF || eol) {
                if (r->nf == 0) { /* a blank line, or the end */
                    if (c == BYTE_EOF) return 0;
                    if (r->nhdr == 1) { /* one column: a NULL */
                        if ((rc = fldEnd(r, r->fld_len, 0, err))) return rc;
                        return 1;
                    }
                    r->rec_line = r->line;
                    continue;
                }
                if ((rc = fldEnd(r, r->fld_len, 0, err))) return rc;
                return 1;
            }
            start = r->fld_len;
            if (c == '"') {
                st = QUOTED;
                qline = r->line;
            } else if (c == ',') {
                if ((rc = fldEnd(r, start, 0, err))) return rc;
            } else {
                if ((rc = csvStrictByte(r, c, err))) return rc;
                if ((rc = fldPut(r, c, err))) return rc;
                st = UNQUOTED;
            }
            break;
        case UNQUOTED:
            if (c == BYTE_EOF || eol || c == ',') {
                if ((rc = fldEnd(r, start, 0, err))) return rc;
                if (c != ',') return 1;
                st = START;
            } else if ((rc = csvStrictByte(r, c, err)) || (rc = fldPut(r, c, err))) {
                return rc;
            }
            break;
        case QUOTED:
            if (c == BYTE_EOF) return dataErr(r, err, qline, "unterminated quoted field");
            if (c == '"') st = QUOTE_IN_QUOTED;
            else if ((rc = fldPut(r, c, err))) return rc;
            break;
        case QUOTE_IN_QUOTED:
            if (c == '"') {
                if ((rc = fldPut(r, c, err))) return rc;
                st = QUOTED;
            } else if (c == BYTE_EOF || eol || c == ',') {
                if ((rc = fldEnd(r, start, 1, err))) return rc;
                if (c != ',') return 1;
                st = START;
            } else {
                return dataErr(r, err, r->line, "text after a closing quote");
            }
            break;
        }
    }
}

/* The header field f[0..n) as text for a message: its first
 * NAME_FIELD_MAX bytes, a NUL byte shown as \0.  out holds
 * 2 * NAME_FIELD_MAX + 1 bytes. */
static void csvNameShown(const char *f, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n && i < NAME_FIELD_MAX; i++) {
        if (f[i] == '\0') {
            out[k++] = '\\';
            out[k++] = '0';
        } else {
            out[k++] = f[i];
        }
    }
    out[k] = '\0';
}

/* Read the header row and map its names to columns.  A name holding a NUL
 * byte is 65, as a \u0000 in a JSON key is: read as a C string it would
 * name another column. */
static int csvHeader(importReader *r, lakeError *err) {
    int rc = csvRecord(r, err);
    if (rc != 1) return rc; /* empty input: no header, no records */
    if (!(r->map = calloc((size_t)r->nf, sizeof *r->map)) ||
        !(r->seen = calloc((size_t)r->schema->ncols, 1)))
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
    for (int i = 0; i < r->nf; i++) {
        char name[NAME_FIELD_MAX + 1];
        size_t n = r->flen[i] < NAME_FIELD_MAX ? r->flen[i] : NAME_FIELD_MAX;
        memcpy(name, r->fld + r->off[i], n);
        name[n] = '\0';
        int col = n == r->flen[i] && n ? segmentSchemaFind(r->schema, name) : -1;
        char what[2 * NAME_FIELD_MAX + 64];
        if (memchr(r->fld + r->off[i], '\0', r->flen[i])) {
            char shown[2 * NAME_FIELD_MAX + 1];
            csvNameShown(r->fld + r->off[i], r->flen[i], shown);
            snprintf(what, sizeof what, "header: a NUL byte in the name '%s'", shown);
            return dataErr(r, err, r->rec_line, what);
        }
        if (col < 0 && memchr(r->fld + r->off[i], '\r', r->flen[i]))
            return dataErr(r, err, r->rec_line,
                           "header: a carriage return without a line feed "
                           "(CR-only line ends are not read: end lines with LF or CRLF)");
        if (col < 0) {
            snprintf(what, sizeof what, "header: no column '%s' in the table", name);
            return dataErr(r, err, r->rec_line, what);
        }
        if (r->seen[col]) {
            snprintf(what, sizeof what, "header: column '%s' named twice", name);
            return dataErr(r, err, r->rec_line, what);
        }
        r->seen[col] = 1;
        r->map[i] = col;
    }
    r->nhdr = r->nf;
    return 0;
}

static int csvNext(importReader *r, lakeError *err) {
    if (!r->map) return 0; /* the input had no header */
    int rc = csvRecord(r, err);
    if (rc != 1) return rc;
    if (r->nf != r->nhdr) {
        char what[96];
        snprintf(what, sizeof what, "%d field%s, but the header has %d", r->nf,
                 r->nf == 1 ? "" : "s", r->nhdr);
        return dataErr(r, err, r->rec_line, what);
    }
    for (int c = 0; c < r->schema->ncols; c++) r->vals[c] = (lakeValue){.kind = LAKE_VALUE_NULL};
    for (int i = 0; i < r->nf; i++) {
        if (!r->quoted[i] && r->flen[i] == 0) continue; /* NULL */
        r->vals[r->map[i]] =
            (lakeValue){.kind = LAKE_VALUE_TEXT, .p = r->fld + r->off[i], .n = r->flen[i]};
    }
    return 1;
}

/* --- JSON Lines ---------------------------------------------------------- */

/* Read one line (without its newline) into lbuf: 1, 0 at the end, or an
 * error code. */
static int jsonLine(importReader *r, lakeError *err) {
    r->llen = 0;
    r->rec_line = r->line;
    int any = 0;
    for (;;) {
        int c = nextByte(r, err);
        if (c == BYTE_ERR) return err->code;
        if (c == BYTE_EOF && !any) return 0;
        if (c == BYTE_EOF || c == '\n') break;
        any = 1;
        if ((int64_t)r->llen + 1 > r->max) {
            char what[96];
            snprintf(what, sizeof what, "a line longer than %lld bytes", (long long)r->max);
            return dataErr(r, err, r->rec_line, what);
        }
        if (r->llen + 1 >= r->lcap) {
            size_t cap = r->lcap ? r->lcap * 2 : 4096;
            char *l = realloc(r->lbuf, cap);
            if (!l) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
            r->lbuf = l;
            r->lcap = cap;
        }
        r->lbuf[r->llen++] = (char)c;
    }
    if (!r->lbuf && !(r->lbuf = malloc(r->lcap = 16)))
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
    r->lbuf[r->llen] = '\0';
    return 1;
}

/* 1 when p[0..n) is only blanks and carriage returns (a NUL byte is not
 * one: strchr would find the terminator). */
static int blank(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
    return 1;
}

/* jsonStrictParse's note of a number: its offset, so that an integer is
 * read from its own digits, exact in the whole 64-bit range, and a number
 * written with a '.' or an exponent (2.0, -0.0) stays a REAL. */
static int jsonNoteNumber(void *arg, size_t off) {
    importReader *r = arg;
    if (r->nnum == r->num_cap) {
        size_t cap = r->num_cap ? r->num_cap * 2 : 64;
        size_t *o = realloc(r->num, cap * sizeof *o);
        if (!o) return 1;
        r->num = o;
        r->num_cap = cap;
    }
    r->num[r->nnum++] = off;
    return 0;
}

/* The number member v, the k-th number of the line, as a value. */
static lakeValue jsonNumber(importReader *r, const cJSON *v, size_t k) {
    const char *t = k < r->nnum ? r->lbuf + r->num[k] : NULL;
    size_t len = t ? strspn(t, "+-.eE0123456789") : 0;
    if (t && strspn(t, "-0123456789") == len) { /* an integer literal */
        char *end;
        errno = 0;
        long long x = strtoll(t, &end, 10);
        if (errno == 0 && end == t + len) return (lakeValue){.kind = LAKE_VALUE_INT, .i = x};
    }
    return (lakeValue){.kind = LAKE_VALUE_REAL, .r = v->valuedouble};
}

/* The numbers inside v (a FILE object), to keep the count in step. */
static size_t jsonCountNumbers(const cJSON *v) {
    size_t k = cJSON_IsNumber(v) ? 1 : 0;
    for (const cJSON *c = v->child; c; c = c->next) k += jsonCountNumbers(c);
    return k;
}

static int jsonNext(importReader *r, lakeError *err) {
    int rc;
    const segmentSchema *s = r->schema;
    do {
        if ((rc = jsonLine(r, err)) != 1) return rc;
    } while (blank(r->lbuf, r->llen));
    cJSON_Delete(r->obj);
    r->obj = NULL;
    /* strict JSON (core/jsonstrict.h): a \u0000 that would cut a key or a
     * value short, a raw control character, a number or escape outside
     * RFC 8259, text after the object: all malformed */
    jsonFault f;
    r->nnum = 0;
    if (!(r->obj = jsonStrictParse(r->lbuf, r->llen, jsonNoteNumber, r, &f))) {
        if (f.nomem) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
        char why[128];
        jsonFaultText(&f, why, sizeof why);
        char what[160];
        snprintf(what, sizeof what, "malformed JSON: %s", why);
        return dataErr(r, err, r->rec_line, what);
    }
    if (!cJSON_IsObject(r->obj)) return dataErr(r, err, r->rec_line, "not a JSON object");
    for (int c = 0; c < s->ncols; c++) {
        r->vals[c] = (lakeValue){.kind = LAKE_VALUE_NULL};
        free(r->printed[c]);
        r->printed[c] = NULL;
        r->seen[c] = 0;
    }
    const cJSON *v;
    size_t k = 0; /* numbers so far */
    cJSON_ArrayForEach(v, r->obj) {
        int c = segmentSchemaFind(s, v->string);
        char what[NAME_FIELD_MAX + 64];
        if (c < 0) {
            snprintf(what, sizeof what, "no column '%.*s' in the table", NAME_FIELD_MAX, v->string);
            return dataErr(r, err, r->rec_line, what);
        }
        if (r->seen[c]) {
            snprintf(what, sizeof what, "key '%s' twice", s->cols[c].name);
            return dataErr(r, err, r->rec_line, what);
        }
        r->seen[c] = 1;
        lakeValue *out = &r->vals[c];
        if (cJSON_IsNull(v)) {
            continue;
        } else if (cJSON_IsBool(v)) {
            *out = (lakeValue){.kind = LAKE_VALUE_BOOL, .i = cJSON_IsTrue(v)};
        } else if (cJSON_IsNumber(v)) {
            *out = jsonNumber(r, v, k++);
        } else if (cJSON_IsString(v)) {
            *out = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = v->valuestring, .n = strlen(v->valuestring)};
        } else if (cJSON_IsObject(v) && s->cols[c].type == LAKE_TYPE_FILE) {
            k += jsonCountNumbers(v);
            if (!(r->printed[c] = cJSON_PrintUnformatted(v)))
                return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
            *out = (lakeValue){.kind = LAKE_VALUE_TEXT, .p = r->printed[c],
                               .n = strlen(r->printed[c])};
        } else {
            snprintf(what, sizeof what, "column %s: nested %s not accepted", s->cols[c].name,
                     cJSON_IsArray(v) ? "arrays are" : "objects are");
            return dataErr(r, err, r->rec_line, what);
        }
    }
    return 1;
}

/* --- the reader ---------------------------------------------------------- */

/* Skip a UTF-8 BOM and blank bytes; the first other byte (not consumed),
 * BYTE_EOF or BYTE_ERR. */
static int skipLeading(importReader *r, lakeError *err) {
    int c = peekByte(r, err);
    if (c == 0xEF) { /* only a BOM may start with it: header names are ASCII, JSON starts '{' */
        nextByte(r, err);
        int b1 = nextByte(r, err), b2 = b1 == 0xBB ? nextByte(r, err) : b1;
        if (b1 == BYTE_ERR || b2 == BYTE_ERR) return BYTE_ERR;
        if (b1 != 0xBB || b2 != 0xBF) {
            dataErr(r, err, 1, "invalid UTF-8 at the start");
            return BYTE_ERR;
        }
    }
    for (;;) {
        c = peekByte(r, err);
        if (c < 0 || !strchr(" \t\r\n", c)) return c;
        nextByte(r, err);
    }
}

int importOpen(lakeReader *in, importFormat fmt, const segmentSchema *schema,
               int64_t record_max, importReader **out, lakeError *err) {
    *out = NULL;
    importReader *r = calloc(1, sizeof *r);
    int rc = 0;
    if (!r) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
    r->in = in;
    r->strict = (fmt & IMPORT_STRICT) != 0;
    fmt &= ~IMPORT_STRICT;
    r->schema = schema;
    r->max = record_max > 0 ? record_max : IMPORT_RECORD_MAX;
    r->line = 1;
    r->buf = malloc(INPUT_BUF);
    r->vals = calloc((size_t)schema->ncols, sizeof *r->vals);
    if (!r->buf || !r->vals) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "import"); goto out; }
    int c = skipLeading(r, err);
    if (c == BYTE_ERR) { rc = err->code; goto out; }
    r->fmt = fmt != IMPORT_AUTO ? fmt : c == '{' ? IMPORT_JSONL : IMPORT_CSV;
    if (r->fmt == IMPORT_CSV) {
        rc = csvHeader(r, err);
    } else if (!(r->printed = calloc((size_t)schema->ncols, sizeof *r->printed)) ||
               !(r->seen = calloc((size_t)schema->ncols, 1))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "import");
    }
out:
    if (rc) importClose(r);
    else *out = r;
    return rc;
}

importFormat importFormatOf(const importReader *r) { return r->fmt; }

int importNext(importReader *r, const lakeValue **vals, lakeError *err) {
    int rc = r->fmt == IMPORT_CSV ? csvNext(r, err) : jsonNext(r, err);
    *vals = rc == 1 ? r->vals : NULL;
    return rc;
}

int64_t importLine(const importReader *r) { return r->rec_line; }

void importClose(importReader *r) {
    if (!r) return;
    if (r->printed)
        for (int c = 0; c < r->schema->ncols; c++) free(r->printed[c]);
    free(r->printed);
    cJSON_Delete(r->obj);
    free(r->lbuf);
    free(r->num);
    free(r->seen);
    free(r->map);
    free(r->off);
    free(r->flen);
    free(r->quoted);
    free(r->fld);
    free(r->vals);
    free(r->buf);
    free(r);
}

/* A reader that tells a progress bar how many bytes passed. */
typedef struct countedReader {
    lakeReader *in;
    progress *prog;
} countedReader;

static ssize_t countedRead(void *ctx, void *buf, size_t len) {
    countedReader *c = ctx;
    ssize_t n = c->in->read(c->in->ctx, buf, len);
    if (n > 0) progressAdd(c->prog, n);
    return n;
}

int importRun(lakeReader *in, importFormat fmt, segmentWriter *w, int64_t *rows,
              progress *prog, lakeError *err) {
    importReader *r;
    const segmentSchema *s = segmentWriterSchema(w);
    int64_t n = 0;
    countedReader counted = {in, prog};
    lakeReader viaProgress = {countedRead, &counted, in->what};
    int rc = importOpen(prog ? &viaProgress : in, fmt, s, 0, &r, err);
    if (rc) return rc;
    const lakeValue *vals;
    while ((rc = importNext(r, &vals, err)) == 1) {
        if ((rc = segmentWriterAddRow(w, vals, s->ncols, err))) {
            if (rc == LAKE_EDATA) errPrefix(err, "%s: line %lld", in->what, (long long)importLine(r));
            break;
        }
        n++;
        if (prog) progressRows(prog, 1);
    }
    if (rows) *rows = n;
    importClose(r);
    return rc;
}
