/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * roundtrip - liblake's round trip (liblake(3)), and its misuse.
 *
 *   roundtrip FILE       put FILE with lake_put_fd, print its FILE value,
 *                        open that value again from its JSON text, read
 *                        the object back and compare it with FILE
 *   roundtrip get REF    write the object REF names to stdout, verified
 *   roundtrip get-raw REF
 *                        the same, unverified (lake_open_file_opt,
 *                        verify 0)
 *   roundtrip options FILE
 *                        lake_put_opt's and lake_open_file_opt's options,
 *                        good and bad, on FILE: "WHAT: STATUS CODE[:
 *                        MESSAGE]" each
 *   roundtrip cb FILE    put FILE through lake_put_cb; print the FILE
 *                        value and how often progress was called
 *   roundtrip stop FILE  put FILE through lake_put_cb, stopped by its
 *                        progress callback after the first chunk
 *   roundtrip list [NS]  the catalog's tables (lake_catalog_list)
 *   roundtrip resolve NS.T [VERSION]
 *                        a table's registration (lake_resolve)
 *   roundtrip query|types SQL [PARAM...]
 *                        run one statement (lake_query), PARAM bound in
 *                        order (i:INT, d:DOUBLE, x:HEX blob, n: NULL,
 *                        t:TEXT or TEXT); print each row as lake-query
 *                        -f jsonl does, or (types) its column types
 *   roundtrip abandon SQL [PARAM...]
 *                        compile and bind, then close before any step
 *   roundtrip create-namespace NS | create NS.T COLUMNS | drop NS.T |
 *             show NS.T  change or show the catalog (lake_catalog_*);
 *                        create-namespace and create with a last
 *                        argument if-not-exists: the _v2 forms with
 *                        LIBLAKE_IF_NOT_EXISTS
 *   roundtrip seed NS.T FILE
 *                        the seed's round trip: put FILE, insert a row
 *                        (name TEXT, f FILE) holding it into NS.T
 *                        (created when absent), query it back by bound
 *                        parameters, decode the FILE column, read the
 *                        object and compare; its FILE value, "read back
 *                        N bytes: the same", "seed: OK SIZE SHA256"
 *   roundtrip import NS.T FORMAT FILE...
 *                        append each FILE's rows in turn, on one client
 *                        (lake_import; FORMAT csv, csv-strict, jsonl or
 *                        auto, FILE - for stdin); a failure is reported
 *                        and the next FILE imported all the same, the
 *                        exit status the first failure's
 *   roundtrip import-stopped NS.T FORMAT FILE
 *                        the same after lake_interrupt: nothing appended
 *   roundtrip alter NS.T ACTION ARG [ARG]
 *                        change a table's columns (lake_catalog_alter_v2)
 *   roundtrip rollback NS.T N | history NS.T | expire [NS.T] [DURATION] |
 *             compact NS.T [SIZE]
 *                        a table's versions (lake_catalog_rollback_v2,
 *                        _history: its JSON printed, _expire_v2: NS.T is
 *                        the argument with a dot, _compact_v2: SIZE
 *                        bytes); alter, rollback, expire and compact
 *                        print the line lake-catalog prints
 *   roundtrip presign REF SECONDS
 *                        the URL lake_presign gives
 *   roundtrip misuse     call the API with NULL and bad arguments; one
 *                        line "CALL: STATUS CODE" each
 *
 * Before any of these, -o KEY=VALUE (repeated) is an option of
 * lake_open_v2 (catalog_offline=1, catalog_ttl=0, ...).
 *
 * SIGUSR1 calls lake_interrupt on the client (async-signal-safe: it only
 * sets a flag), so that a test stops a call at an exact point.
 *
 * Uses nothing but <lake.h>.  Exits with the failing call's exit status,
 * after "roundtrip: MESSAGE (CODE)" on stderr; the library's warnings
 * (lake_set_warn) are "roundtrip: warning: LINE" there.
 */
#define _POSIX_C_SOURCE 200809L /* sigaction */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lake.h>

/* The client SIGUSR1 stops. */
static lake_client *volatile client;

static void onUsr1(int sig) {
    (void)sig;
    lake_interrupt(client);
}

static void warn(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "roundtrip: warning: %s\n", line);
}

static int die(const lake_error *e) {
    fprintf(stderr, "roundtrip: %s (%s)\n", e->message, e->code);
    return e->exit_status;
}

/* Read the object back and compare it with what path holds now. */
static int compare(lake_client *c, const char *json, const char *path, lake_error *e) {
    lake_file *f;
    lake_reader *r;
    static char buf[65536], want[65536];
    long long total = 0;
    if (lake_file_from_json(json, &f, e)) return e->exit_status;
    int rc = lake_open_file(c, lake_file_json(f), &r, e);
    lake_file_free(f); /* the reader keeps what it needs */
    if (rc) return rc;
    FILE *in = fopen(path, "rb");
    if (!in) {
        lake_reader_close(r);
        fprintf(stderr, "roundtrip: %s: %s\n", path, strerror(errno));
        return 66;
    }
    ssize_t n;
    while ((n = lake_reader_read(r, buf, sizeof buf, e)) > 0) {
        if (fread(want, 1, (size_t)n, in) != (size_t)n || memcmp(buf, want, (size_t)n) != 0) {
            fprintf(stderr, "roundtrip: the bytes differ near offset %lld\n", total);
            n = -2;
            break;
        }
        total += n;
    }
    int extra = n == 0 && fgetc(in) != EOF;
    fclose(in);
    lake_reader_close(r);
    if (n == -1) return e->exit_status;
    if (n == -2 || extra) {
        if (extra) fprintf(stderr, "roundtrip: the object is shorter than %s\n", path);
        return 1;
    }
    printf("read back %lld bytes: the same\n", total);
    return 0;
}

static int get(lake_client *c, const char *ref, lake_error *e) {
    lake_reader *r;
    char buf[65536];
    ssize_t n;
    if (lake_open_file(c, ref, &r, e)) return e->exit_status;
    while ((n = lake_reader_read(r, buf, sizeof buf, e)) > 0)
        if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) break;
    lake_reader_close(r);
    return n < 0 ? e->exit_status : fflush(stdout) == EOF;
}

typedef struct cbState {
    int fd;
    long calls;
    long stop_after; /* 0: never */
} cbState;

static ssize_t cbRead(void *ctx, void *buf, size_t len) {
    cbState *s = ctx;
    return read(s->fd, buf, len);
}

static int cbProgress(void *ctx, int64_t done, int64_t total) {
    cbState *s = ctx;
    (void)done;
    (void)total;
    s->calls++;
    return s->stop_after && s->calls >= s->stop_after;
}

static int putCb(lake_client *c, const char *path, long stop_after, lake_error *e) {
    cbState s = {open(path, O_RDONLY), 0, stop_after};
    lake_file *f;
    if (s.fd < 0) {
        fprintf(stderr, "roundtrip: %s: %s\n", path, strerror(errno));
        return 66;
    }
    int rc = lake_put_cb(c, cbRead, &s, "cb", -1, cbProgress, &s, &f, e);
    close(s.fd);
    if (rc) return rc;
    printf("%s\nprogress called %s\n", lake_file_json(f), s.calls > 0 ? "yes" : "no");
    lake_file_free(f);
    return 0;
}

/* lake_put_opt's and lake_open_file_opt's options: one line "WHAT:
 * STATUS CODE[: MESSAGE]" each, the message where it says which input or
 * option was wrong. */
static void said(const char *what, int rc, const lake_error *e, int message) {
    printf("%s: %d %s%s%s\n", what, rc, e->code, message && rc ? ": " : "", message && rc ? e->message : "");
}

static int options(lake_client *c, const char *path, lake_error *e) {
    static const char *const unknown[] = {"no_such_key", "1", NULL}, *const jobs0[] = {"jobs", "0", NULL},
                             *const size1[] = {"size", "1", "label", "LBL", NULL},
                             *const sizex[] = {"size", "-1", NULL},
                             *const sha0[] = {"sha256", "0000000000000000000000000000000000000000000000000000000000000000",
                                              NULL},
                             *const badsha[] = {"sha256", "xyz", NULL},
                             *const typed[] = {"content_type", "text/x-test", "jobs", "2", "part_size", "5MiB", NULL},
                             *const verify2[] = {"verify", "2", NULL}, *const raw[] = {"verify", "0", NULL},
                             *const parts[] = {"part_size", "1KiB", NULL};
    static const char *const *const puts[] = {unknown, jobs0, size1, sizex, sha0, badsha, typed};
    static const char *const putWhat[] = {"put(unknown key)", "put(jobs 0)",       "put(size 1)",
                                          "put(size -1)",     "put(sha256 zeros)", "put(sha256 xyz)",
                                          "put(content_type, jobs, part_size)"};
    lake_file *f = NULL;
    for (size_t i = 0; i < sizeof puts / sizeof puts[0]; i++) {
        cbState s = {open(path, O_RDONLY), 0, 0};
        if (s.fd < 0) {
            fprintf(stderr, "roundtrip: %s: %s\n", path, strerror(errno));
            return 66;
        }
        int rc = lake_put_opt(c, cbRead, &s, "opt", -1, puts[i], NULL, NULL, &f, e);
        close(s.fd);
        said(putWhat[i], rc, e, 1);
        if (!rc) printf("content type %s\n", lake_file_content_type(f));
    }
    static const char *const *const opens[] = {unknown, verify2, jobs0, parts, raw};
    static const char *const openWhat[] = {"open(unknown key)", "open(verify 2)", "open(jobs 0)",
                                           "open(part_size 1KiB)", "open(verify 0)"};
    for (size_t i = 0; f && i < sizeof opens / sizeof opens[0]; i++) {
        lake_reader *r = NULL;
        int rc = lake_open_file_opt(c, lake_file_json(f), opens[i], &r, e);
        said(openWhat[i], rc, e, 1);
        lake_reader_close(r);
    }
    lake_file_free(f);
    return 0;
}

/* The object REF names to stdout, neither size nor digest checked. */
static int getRaw(lake_client *c, const char *ref, lake_error *e) {
    static const char *const raw[] = {"verify", "0", NULL};
    lake_reader *r;
    char buf[65536];
    ssize_t n;
    if (lake_open_file_opt(c, ref, raw, &r, e)) return e->exit_status;
    while ((n = lake_reader_read(r, buf, sizeof buf, e)) > 0)
        if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) break;
    lake_reader_close(r);
    return n < 0 ? e->exit_status : fflush(stdout) == EOF;
}

static int catalog(lake_client *c, int argc, char **argv, lake_error *e) {
    char *json;
    int rc = strcmp(argv[1], "list") == 0
                 ? lake_catalog_list(c, argc > 2 ? argv[2] : NULL, &json, e)
                 : lake_resolve(c, argv[2], argc > 3 ? strtoll(argv[3], NULL, 10) : -1, &json, e);
    if (rc) return rc;
    printf("%s\n", json);
    lake_free(json);
    return 0;
}

/* A JSON string of s[0..n), as lake-query -f json writes one. */
static void jsonString(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch == '\n') fputs("\\n", stdout);
        else if (ch == '\r') fputs("\\r", stdout);
        else if (ch == '\t') fputs("\\t", stdout);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

/* PARAM: i:INTEGER, d:DOUBLE, x:HEX (a blob), n: (NULL), t:TEXT, or TEXT. */
static int bindParam(lake_rows *q, int index, const char *p, lake_error *e) {
    if (strncmp(p, "i:", 2) == 0) return lake_rows_bind_int64(q, index, strtoll(p + 2, NULL, 10), e);
    if (strncmp(p, "d:", 2) == 0) return lake_rows_bind_double(q, index, strtod(p + 2, NULL), e);
    if (strcmp(p, "n:") == 0) return lake_rows_bind_null(q, index, e);
    if (strncmp(p, "x:", 2) == 0) {
        unsigned char b[256];
        size_t n = 0;
        for (const char *h = p + 2; h[0] && h[1] && n < sizeof b; h += 2) {
            unsigned v;
            sscanf(h, "%2x", &v);
            b[n++] = (unsigned char)v;
        }
        return lake_rows_bind_blob(q, index, b, n, e);
    }
    return lake_rows_bind_text(q, index, strncmp(p, "t:", 2) == 0 ? p + 2 : p, e);
}

/* One row as lake-query -f jsonl prints it, from the typed accessors. */
static void printRow(lake_rows *q) {
    putchar('{');
    for (int i = 0; i < lake_rows_columns(q); i++) {
        size_t n;
        const char *t;
        if (i) putchar(',');
        jsonString(lake_rows_name(q, i), strlen(lake_rows_name(q, i)));
        putchar(':');
        switch (lake_rows_type(q, i)) {
        case LIBLAKE_NULL: fputs("null", stdout); break;
        case LIBLAKE_INTEGER: printf("%lld", (long long)lake_rows_int64(q, i)); break;
        case LIBLAKE_FLOAT:
            t = lake_rows_text(q, i, &n);
            if (isfinite(lake_rows_double(q, i))) fwrite(t, 1, n, stdout);
            else fputs("null", stdout);
            break;
        case LIBLAKE_FILE: fputs(lake_file_json(lake_rows_file(q, i)), stdout); break;
        default: /* TEXT, BLOB (hex) */
            t = lake_rows_text(q, i, &n);
            jsonString(t, n);
        }
    }
    puts("}");
}

/* Each row's column types, tab-separated. */
static void printTypes(lake_rows *q) {
    static const char *const typeName[] = {"?", "INTEGER", "FLOAT", "TEXT", "BLOB", "NULL", "FILE"};
    for (int i = 0; i < lake_rows_columns(q); i++) {
        int t = lake_rows_type(q, i);
        printf("%s%s", i ? "\t" : "", t >= 1 && t <= 6 ? typeName[t] : "?");
    }
    putchar('\n');
}

/* query/types SQL [PARAM...]: run it, printing its rows; abandon: compile
 * and bind, then close before the first step. */
static int query(lake_client *c, const char *how, const char *sql, char **params, int n, lake_error *e) {
    lake_rows *q;
    int rc;
    if (lake_query(c, sql, &q, e)) return e->exit_status;
    for (int i = 0; i < n; i++)
        if ((rc = bindParam(q, i + 1, params[i], e))) {
            lake_rows_close(q);
            return rc;
        }
    if (strcmp(how, "abandon") == 0) {
        lake_rows_close(q);
        return 0;
    }
    while ((rc = lake_rows_next(q, e)) == LIBLAKE_ROW) {
        if (strcmp(how, "types") == 0) printTypes(q);
        else printRow(q);
    }
    lake_rows_close(q);
    return rc == LIBLAKE_DONE ? 0 : e->exit_status;
}

/* presign REF SECONDS: the URL lake_presign gives. */
static int presign(lake_client *c, const char *ref, const char *seconds, lake_error *e) {
    char *url;
    if (lake_presign(c, ref, strtoll(seconds, NULL, 10), &url, e)) return e->exit_status;
    printf("%s\n", url);
    lake_free(url);
    return 0;
}

/* create-namespace NS [if-not-exists], create NS.T COLUMNS
 * [if-not-exists], drop NS.T, show NS.T. */
static int change(lake_client *c, int argc, char **argv, lake_error *e) {
    char *json;
    int flags = strcmp(argv[argc - 1], "if-not-exists") == 0 ? LIBLAKE_IF_NOT_EXISTS : 0;
    if (strcmp(argv[1], "create-namespace") == 0)
        return flags ? lake_catalog_create_namespace_v2(c, argv[2], flags, e)
                     : lake_catalog_create_namespace(c, argv[2], e);
    if (strcmp(argv[1], "create") == 0)
        return flags ? lake_catalog_create_v2(c, argv[2], argv[3], flags, e) : lake_catalog_create(c, argv[2], argv[3], e);
    if (strcmp(argv[1], "drop") == 0) return lake_catalog_drop(c, argv[2], e);
    if (lake_catalog_show(c, argv[2], &json, e)) return e->exit_status;
    printf("%s\n", json);
    lake_free(json);
    return 0;
}

/* "s" unless there is exactly one. */
static const char *plural(long long n) { return n == 1 ? "" : "s"; }

/* rollback NS.T N, history NS.T, expire [NS.T] [DURATION], compact NS.T
 * [SIZE]; each change's line as lake-catalog prints it. */
static int versions(lake_client *c, int argc, char **argv, lake_error *e) {
    char *json;
    int64_t v, n, w;
    if (strcmp(argv[1], "rollback") == 0) {
        long long to = strtoll(argv[3], NULL, 10);
        if (lake_catalog_rollback_v2(c, argv[2], to, &v, e)) return e->exit_status;
        printf("rolled back %s to version %lld: version %lld\n", argv[2], to, (long long)v);
        return 0;
    }
    if (strcmp(argv[1], "compact") == 0) {
        if (lake_catalog_compact_v2(c, argv[2], argc == 4 ? strtoll(argv[3], NULL, 10) : 0, &n, &w, &v, e))
            return e->exit_status;
        if (n)
            printf("compacted %s: %lld segment%s -> %lld, version %lld\n", argv[2], (long long)n, plural(n),
                   (long long)w, (long long)v);
        return 0;
    }
    if (strcmp(argv[1], "expire") == 0) {
        const char *table = argc > 2 && strchr(argv[2], '.') ? argv[2] : NULL;
        const char *older = argc == 4 ? argv[3] : argc == 3 && !table ? argv[2] : NULL;
        if (lake_catalog_expire_v2(c, table, older, &n, e)) return e->exit_status;
        printf("expired %lld version%s%s%s\n", (long long)n, plural(n), table ? " of " : "", table ? table : "");
        return 0;
    }
    if (lake_catalog_history(c, argv[2], &json, e)) return e->exit_status;
    printf("%s\n", json);
    lake_free(json);
    return 0;
}

/* import NS.T FORMAT FILE..., and import-stopped NS.T FORMAT FILE
 * (lake_interrupt first).  A failure but the last is reported here (the
 * last is main's to report). */
static int import(lake_client *c, int argc, char **argv, lake_error *e) {
    int first = 0;
    for (int i = 4; i < argc; i++) {
        int fd = strcmp(argv[i], "-") == 0 ? 0 : open(argv[i], O_RDONLY);
        if (fd < 0) {
            fprintf(stderr, "roundtrip: %s: %s\n", argv[i], strerror(errno));
            return 66;
        }
        if (strcmp(argv[1], "import-stopped") == 0) lake_interrupt(c);
        int rc = lake_import(c, argv[2], fd, strcmp(argv[3], "auto") == 0 ? NULL : argv[3], e);
        if (fd > 0) close(fd);
        if (rc && i + 1 < argc) die(e);
        if (!first) first = rc;
    }
    return first;
}

/* The seed's round trip through the library alone: put path, insert a
 * row holding its FILE value into table (created, and its namespace,
 * when absent), query it back by bound parameters, decode the FILE
 * column, read the object and compare it with path. */
static int seed(lake_client *c, const char *table, const char *path, lake_error *e) {
    lake_file *f = NULL;
    lake_rows *q = NULL;
    char *json = NULL, name[64];
    int rc, fd = open(path, O_RDONLY), rows = 0;
    if (fd < 0) {
        fprintf(stderr, "roundtrip: %s: %s\n", path, strerror(errno));
        return 66;
    }
    rc = lake_put_fd(c, fd, strrchr(path, '/') ? strrchr(path, '/') + 1 : path, &f, e);
    close(fd);
    if (rc) return rc;
    printf("%s\n", lake_file_json(f));
    /* the table, created when absent (66) */
    if ((rc = lake_catalog_show(c, table, &json, e)) == 66) {
        char ns[256];
        snprintf(ns, sizeof ns, "%.*s", (int)strcspn(table, "."), table);
        rc = lake_catalog_create_namespace(c, ns, e);
        if (rc == 1) rc = 0; /* it exists already (lake-catalog's 1) */
        if (!rc) rc = lake_catalog_create(c, table, "name TEXT, f FILE", e);
    }
    lake_free(json);
    /* a row of its own: the name says which put made it */
    snprintf(name, sizeof name, "seed-%ld-%.16s", (long)getpid(), lake_file_sha256(f));
    char sql[512];
    snprintf(sql, sizeof sql, "INSERT INTO %s (name, f) VALUES (?, ?)", table);
    if (!rc) rc = lake_query(c, sql, &q, e);
    if (!rc) rc = lake_rows_bind_text(q, 1, name, e);
    if (!rc) rc = lake_rows_bind_text(q, 2, lake_file_json(f), e);
    if (!rc && lake_rows_next(q, e) != LIBLAKE_DONE) rc = e->exit_status;
    lake_rows_close(q);
    q = NULL;
    snprintf(sql, sizeof sql, "SELECT name, f FROM %s WHERE name = ? AND fl_get_size(f) = ?", table);
    if (!rc) rc = lake_query(c, sql, &q, e);
    if (!rc) rc = lake_rows_bind_text(q, 1, name, e);
    if (!rc) rc = lake_rows_bind_int64(q, 2, lake_file_size(f), e);
    int step = 0;
    while (!rc && (step = lake_rows_next(q, e)) == LIBLAKE_ROW) {
        const lake_file *back = lake_rows_file(q, 1);
        rows++;
        if (lake_rows_type(q, 1) != LIBLAKE_FILE || !back || strcmp(lake_file_json(back), lake_file_json(f)) != 0) {
            fprintf(stderr, "roundtrip: seed: the row holds another FILE value\n");
            rc = 1;
        } else { /* read it back: verified by the reader, compared here */
            rc = compare(c, lake_file_json(back), path, e);
        }
    }
    if (!rc && step != LIBLAKE_DONE) rc = e->exit_status;
    lake_rows_close(q);
    if (!rc && rows != 1) {
        fprintf(stderr, "roundtrip: seed: %d rows came back, not 1\n", rows);
        rc = 1;
    }
    if (!rc) printf("seed: OK %lld %s\n", (long long)lake_file_size(f), lake_file_sha256(f));
    lake_file_free(f);
    return rc;
}

/* 2 MiB of a pattern, for a reader closed halfway */
static ssize_t patternRead(void *ctx, void *buf, size_t len) {
    long *left = ctx;
    size_t n = len < (size_t)*left ? len : (size_t)*left;
    memset(buf, 'p', n);
    *left -= (long)n;
    return (ssize_t)n;
}

static void say(const char *call, int rc, const lake_error *e) {
    printf("%s: %d %s\n", call, rc, e->code);
}

/* Every misuse is an error with a status and a code, never a crash. */
static int misuse(void) {
    lake_error e;
    lake_client *c = NULL;
    lake_file *f = NULL;
    lake_reader *r = NULL;
    char buf[16];
    const char *badopt[] = {"no_such_key", "x", NULL};
    const char *novalue[] = {"stage", NULL};
    say("lake_open(NULL)", lake_open(NULL, NULL, &e), &e);
    say("lake_open(unknown key)", lake_open(&c, badopt, &e), &e);
    say("lake_open(key without value)", lake_open(&c, novalue, &e), &e);
    const char *badflag[] = {"catalog_offline", "yes", NULL};
    say("lake_open_v2(catalog_offline yes)", lake_open_v2(&c, badflag, warn, NULL, &e), &e);
    say("lake_open_v2(NULL)", lake_open_v2(NULL, NULL, warn, NULL, &e), &e);
    say("lake_put_fd(NULL client)", lake_put_fd(NULL, 0, "x", &f, &e), &e);
    say("lake_put_cb(NULL read)", lake_put_cb(NULL, NULL, NULL, "x", -1, NULL, NULL, &f, &e), &e);
    say("lake_file_from_json(NULL)", lake_file_from_json(NULL, &f, &e), &e);
    say("lake_file_from_json(not JSON)", lake_file_from_json("{nope", &f, &e), &e);
    say("lake_file_from_json(null)", lake_file_from_json("null", &f, &e), &e);
    say("lake_open_file(NULL client)", lake_open_file(NULL, "{}", &r, &e), &e);
    say("lake_reader_read(NULL)", (int)lake_reader_read(NULL, buf, sizeof buf, &e), &e);
    char *json;
    say("lake_catalog_list(NULL client)", lake_catalog_list(NULL, NULL, &json, &e), &e);
    say("lake_resolve(NULL table)", lake_resolve(NULL, NULL, -1, &json, &e), &e);
    printf("lake_set_warn(NULL): %d\n", lake_set_warn(NULL, warn, NULL));
    lake_free(NULL);
    printf("lake_put_fd(NULL error): %d\n", lake_put_fd(NULL, 0, "x", &f, NULL));
    printf("NULL accessors: %s %s %lld\n", lake_file_json(NULL) ? "json" : "(null)",
           lake_stage_url(NULL) ? "url" : "(null)", (long long)lake_file_size(NULL));
    lake_close(NULL);
    lake_file_free(NULL);
    lake_reader_close(NULL);
    lake_interrupt(NULL);
    /* queries: NULL handles, accessors without a row, binds out of range */
    lake_rows *q = NULL;
    size_t len = 1;
    say("lake_query(NULL client)", lake_query(NULL, "SELECT 1", &q, &e), &e);
    say("lake_rows_next(NULL)", lake_rows_next(NULL, &e), &e);
    say("lake_rows_bind_text(NULL)", lake_rows_bind_text(NULL, 1, "x", &e), &e);
    say("lake_catalog_create(NULL client)", lake_catalog_create(NULL, "a.b", "x TEXT", &e), &e);
    say("lake_catalog_drop(NULL client)", lake_catalog_drop(NULL, "a.b", &e), &e);
    say("lake_catalog_show(NULL json)", lake_catalog_show(NULL, "a.b", NULL, &e), &e);
    say("lake_catalog_alter(NULL client)", lake_catalog_alter(NULL, "a.b", "drop-column", "x", NULL, &e), &e);
    say("lake_catalog_rollback(NULL client)", lake_catalog_rollback(NULL, "a.b", 1, &e), &e);
    say("lake_catalog_history(NULL json)", lake_catalog_history(NULL, "a.b", NULL, &e), &e);
    say("lake_catalog_expire(NULL client)", lake_catalog_expire(NULL, NULL, NULL, &e), &e);
    say("lake_catalog_compact(NULL client)", lake_catalog_compact(NULL, "a.b", 0, &e), &e);
    say("lake_import(NULL client)", lake_import(NULL, "a.b", 0, NULL, &e), &e);
    printf("NULL rows: %d %d %d %s %s %lld %g %s\n", lake_rows_columns(NULL), lake_rows_params(NULL),
           lake_rows_type(NULL, 0), lake_rows_name(NULL, 0) ? "name" : "(null)",
           lake_rows_text(NULL, 0, &len) ? "text" : "(null)", (long long)lake_rows_int64(NULL, 0),
           lake_rows_double(NULL, 0), lake_rows_file(NULL, 0) ? "file" : "(null)");
    lake_rows_close(NULL);
    if (lake_open(&c, NULL, &e)) return die(&e);
    say("lake_query(NULL SQL)", lake_query(c, NULL, &q, &e), &e);
    say("lake_query(NULL out)", lake_query(c, "SELECT 1", NULL, &e), &e);
    say("lake_query(two statements)", lake_query(c, "SELECT 1; SELECT 2", &q, &e), &e);
    say("lake_query(no statement)", lake_query(c, " -- nothing\n;", &q, &e), &e);
    say("lake_query(syntax)", lake_query(c, "SELEC 1", &q, &e), &e);
    if (lake_query(c, "SELECT ?1 AS a, 2.5 AS b", &q, &e)) return die(&e);
    lake_rows *q2;
    say("lake_query(another open)", lake_query(c, "SELECT 1", &q2, &e), &e);
    say("lake_import(rows open)", lake_import(c, "a.b", 0, NULL, &e), &e);
    say("lake_rows_bind_int64(0)", lake_rows_bind_int64(q, 0, 1, &e), &e);
    say("lake_rows_bind_int64(2)", lake_rows_bind_int64(q, 2, 1, &e), &e);
    say("lake_rows_bind_blob(NULL bytes)", lake_rows_bind_blob(q, 1, NULL, 3, &e), &e);
    printf("before the first step: type %d, text %s, columns %d, name(2) %s\n", lake_rows_type(q, 0),
           lake_rows_text(q, 0, &len) ? "text" : "(null)", lake_rows_columns(q),
           lake_rows_name(q, 2) ? "name" : "(null)");
    say("lake_rows_bind_int64(1)", lake_rows_bind_int64(q, 1, 7, &e), &e);
    say("lake_rows_next", lake_rows_next(q, &e), &e);
    printf("row: %lld %s, out of range: %d %s %lld\n", (long long)lake_rows_int64(q, 0), lake_rows_text(q, 1, NULL),
           lake_rows_type(q, 2), lake_rows_text(q, -1, &len) ? "text" : "(null)", (long long)lake_rows_int64(q, 9));
    say("bind after a step", lake_rows_bind_int64(q, 1, 8, &e), &e);
    say("lake_rows_next", lake_rows_next(q, &e), &e);
    say("next after done", lake_rows_next(q, &e), &e);
    printf("after done: type %d\n", lake_rows_type(q, 0));
    lake_rows_close(q);
    /* a failure stays the statement's answer */
    if (lake_query(c, "SELECT abs(-9223372036854775807 - 1)", &q, &e)) return die(&e);
    say("lake_rows_next(overflow)", lake_rows_next(q, &e), &e);
    say("next after failure", lake_rows_next(q, &e), &e);
    lake_rows_close(q);
    /* rows closed halfway, and rows outliving their client */
    if (lake_query(c, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 100) SELECT i FROM n",
                   &q, &e))
        return die(&e);
    say("lake_rows_next", lake_rows_next(q, &e), &e);
    lake_rows_close(q);
    /* a statement stopped by lake_interrupt changes nothing */
    if (lake_query(c, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 10000000) "
                      "SELECT count(*) FROM n",
                   &q, &e))
        return die(&e);
    lake_interrupt(c);
    say("lake_rows_next(interrupted)", lake_rows_next(q, &e), &e);
    lake_rows_close(q);
    if (lake_query(c, "SELECT 'kept' AS k", &q, &e)) return die(&e);
    lake_close(c);
    say("next after lake_close", lake_rows_next(q, &e), &e);
    printf("row after lake_close: %s\n", lake_rows_text(q, 0, NULL));
    lake_rows_close(q);
    if (lake_open(&c, NULL, &e)) return die(&e);
    say("lake_catalog_create(bad columns)", lake_catalog_create(c, "a.b", "x", &e), &e);
    say("lake_catalog_create(not NS.T)", lake_catalog_create(c, "nodot", "x TEXT", &e), &e);
    say("lake_catalog_drop(NULL table)", lake_catalog_drop(c, NULL, &e), &e);
    say("lake_catalog_alter(NULL table)", lake_catalog_alter(c, NULL, "drop-column", "x", NULL, &e), &e);
    say("lake_catalog_alter(NULL action)", lake_catalog_alter(c, "a.b", NULL, "x", NULL, &e), &e);
    say("lake_catalog_alter(NULL column)", lake_catalog_alter(c, "a.b", "drop-column", NULL, NULL, &e), &e);
    say("lake_catalog_alter(rename, no NEW)", lake_catalog_alter(c, "a.b", "rename-column", "x", NULL, &e), &e);
    say("lake_catalog_alter(unknown action)", lake_catalog_alter(c, "a.b", "truncate", "x", NULL, &e), &e);
    say("lake_catalog_rollback(NULL table)", lake_catalog_rollback(c, NULL, 1, &e), &e);
    say("lake_catalog_rollback(-1)", lake_catalog_rollback(c, "a.b", -1, &e), &e);
    say("lake_catalog_history(not NS.T)", lake_catalog_history(c, "nodot", &json, &e), &e);
    say("lake_catalog_expire(not NS.T)", lake_catalog_expire(c, "no.such.x", NULL, &e), &e);
    say("lake_catalog_expire(bad duration)", lake_catalog_expire(c, NULL, "7 weeks", &e), &e);
    say("lake_catalog_compact(NULL table)", lake_catalog_compact(c, NULL, 0, &e), &e);
    say("lake_catalog_compact(size 1)", lake_catalog_compact(c, "a.b", 1, &e), &e);
    say("lake_import(NULL table)", lake_import(c, NULL, 0, NULL, &e), &e);
    say("lake_import(bad fd)", lake_import(c, "a.b", -1, NULL, &e), &e);
    say("lake_import(unknown format)", lake_import(c, "a.b", 0, "xml", &e), &e);
    say("lake_import(not NS.T)", lake_import(c, "nodot", 0, NULL, &e), &e);
    say("lake_catalog_create_namespace(bad)", lake_catalog_create_namespace(c, "a b", &e), &e);
    say("lake_catalog_create_namespace_v2(flags 2)", lake_catalog_create_namespace_v2(c, "a", 2, &e), &e);
    say("lake_catalog_create_v2(flags 2)", lake_catalog_create_v2(c, "a.b", "x TEXT", 2, &e), &e);
    int64_t v = 0, w = 0, x = 0;
    say("lake_catalog_alter_v2(NULL table)", lake_catalog_alter_v2(c, NULL, "drop-column", "x", NULL, &v, &e), &e);
    printf("its version: %lld\n", (long long)v);
    say("lake_catalog_rollback_v2(-1)", lake_catalog_rollback_v2(c, "a.b", -1, &v, &e), &e);
    say("lake_catalog_expire_v2(bad duration)", lake_catalog_expire_v2(c, NULL, "7 weeks", &w, &e), &e);
    say("lake_catalog_compact_v2(NULL client)", lake_catalog_compact_v2(NULL, "a.b", 0, &w, &x, &v, &e), &e);
    printf("their results: %lld %lld %lld\n", (long long)v, (long long)w, (long long)x);
    say("lake_presign(NULL url)", lake_presign(c, "{}", 60, NULL, &e), &e);
    say("lake_presign(0 seconds)", lake_presign(c, "{}", 0, &json, &e), &e);
    say("lake_presign(not JSON)", lake_presign(c, "{nope", 60, &json, &e), &e);
    say("lake_put_fd(bad fd)", lake_put_fd(c, -1, "x", &f, &e), &e);
    say("lake_catalog_list(bad namespace)", lake_catalog_list(c, "no such", &json, &e), &e);
    say("lake_resolve(not NS.T)", lake_resolve(c, "nodot", -1, &json, &e), &e);
    say("lake_open_file(outside the stage)",
        lake_open_file(c, "{\"location\":\"file:///etc/passwd\",\"size\":1,\"sha256\":"
                          "\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                       &r, &e),
        &e);
    /* a reader closed before it is read, and a client closed before its reader */
    lake_file *g;
    int fd = open("/dev/null", O_RDONLY);
    if (lake_put_fd(c, fd, "empty", &g, &e)) return die(&e);
    close(fd);
    if (lake_open_file(c, lake_file_json(g), &r, &e)) return die(&e);
    lake_reader_close(r);
    if (lake_open_file(c, lake_file_json(g), &r, &e)) return die(&e);
    lake_close(c);
    say("read after lake_close", (int)lake_reader_read(r, buf, sizeof buf, &e), &e);
    lake_reader_close(r);
    lake_file_free(g);
    /* a reader closed halfway through an object larger than its ring */
    long left = 2L << 20;
    if (lake_open(&c, NULL, &e) || lake_put_cb(c, patternRead, &left, "p", -1, NULL, NULL, &g, &e) ||
        lake_open_file(c, lake_file_json(g), &r, &e))
        return die(&e);
    say("read a little, then close", (int)lake_reader_read(r, buf, sizeof buf, &e), &e);
    lake_reader_close(r);
    lake_file_free(g);
    lake_close(c);
    return 0;
}

int main(int argc, char **argv) {
    lake_client *c;
    lake_error e;
    int rc;
    /* -o KEY=VALUE...: lake_open_v2's options, split in place */
    const char *opts[2 * 16 + 1];
    int nopt = 0;
    while (argc > 2 && strcmp(argv[1], "-o") == 0 && nopt < 2 * 16) {
        char *eq = strchr(argv[2], '=');
        if (!eq) {
            fprintf(stderr, "roundtrip: -o %s: not KEY=VALUE\n", argv[2]);
            return 64;
        }
        *eq = '\0';
        opts[nopt++] = argv[2];
        opts[nopt++] = eq + 1;
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    opts[nopt] = NULL;
    if (argc == 2 && strcmp(argv[1], "misuse") == 0) return misuse();
    if (argc == 2 && strcmp(argv[1], "version") == 0) {
        printf("%s %s\n", lake_version(), LIBLAKE_VERSION);
        return 0;
    }
    int sql = argc >= 3 && (strcmp(argv[1], "query") == 0 || strcmp(argv[1], "types") == 0 ||
                            strcmp(argv[1], "abandon") == 0);
    int chg = argc == 3 && (strcmp(argv[1], "create-namespace") == 0 || strcmp(argv[1], "drop") == 0 ||
                            strcmp(argv[1], "show") == 0);
    chg |= argc == 4 && strcmp(argv[1], "create-namespace") == 0 && strcmp(argv[3], "if-not-exists") == 0;
    chg |= argc == 4 && strcmp(argv[1], "create") == 0;
    chg |= argc == 5 && strcmp(argv[1], "create") == 0 && strcmp(argv[4], "if-not-exists") == 0;
    int imp = (argc >= 5 && strcmp(argv[1], "import") == 0) || (argc == 5 && strcmp(argv[1], "import-stopped") == 0);
    int alt = (argc == 5 || argc == 6) && strcmp(argv[1], "alter") == 0;
    int ver = argc == 4 && strcmp(argv[1], "rollback") == 0;
    ver |= argc == 3 && strcmp(argv[1], "history") == 0;
    ver |= argc >= 2 && argc <= 4 && strcmp(argv[1], "expire") == 0;
    ver |= (argc == 3 || argc == 4) && strcmp(argv[1], "compact") == 0;
    int sd = argc == 4 && strcmp(argv[1], "seed") == 0;
    int ps = argc == 4 && strcmp(argv[1], "presign") == 0;
    int cat = (argc == 2 || argc == 3) && strcmp(argv[1], "list") == 0;
    cat |= (argc == 3 || argc == 4) && strcmp(argv[1], "resolve") == 0;
    if (!cat && !sql && !chg && !sd && !ps && !imp && !alt && !ver && argc != 2 && !(argc == 3 && (strcmp(argv[1], "get") == 0 || strcmp(argv[1], "cb") == 0 ||
                                             strcmp(argv[1], "get-raw") == 0 || strcmp(argv[1], "options") == 0 ||
                                             strcmp(argv[1], "stop") == 0))) {
        fprintf(stderr, "usage: roundtrip FILE | get|get-raw REF | cb|stop|options FILE | list [NS] | "
                        "resolve NS.T [VERSION] | query|types|abandon SQL [PARAM...] |\n"
                        "       create-namespace NS [if-not-exists] | create NS.T COLUMNS [if-not-exists] |\n"
                        "       drop NS.T | show NS.T | seed NS.T FILE |\n"
                        "       presign REF SECONDS | import NS.T FORMAT FILE... | import-stopped NS.T FORMAT FILE |\n"
                        "       alter NS.T ACTION ARG [ARG] | rollback NS.T N | history NS.T |\n"
                        "       expire [NS.T] [DURATION] | compact NS.T [SIZE] |\n"
                        "       misuse | version\n"
                        "       (each after any -o KEY=VALUE: lake_open_v2's options)\n");
        return 64;
    }
    if (lake_open_v2(&c, opts, warn, NULL, &e)) return die(&e);
    client = c;
    struct sigaction sa = {.sa_handler = onUsr1};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    if (cat) rc = catalog(c, argc, argv, &e);
    else if (chg) rc = change(c, argc, argv, &e);
    else if (imp) rc = import(c, argc, argv, &e);
    else if (ver) rc = versions(c, argc, argv, &e);
    else if (alt) {
        int64_t v;
        rc = lake_catalog_alter_v2(c, argv[2], argv[3], argv[4], argc == 6 ? argv[5] : NULL, &v, &e);
        if (!rc) printf("altered %s: version %lld\n", argv[2], (long long)v);
    }
    else if (sd) rc = seed(c, argv[2], argv[3], &e);
    else if (ps) rc = presign(c, argv[2], argv[3], &e);
    else if (sql) rc = query(c, argv[1], argv[2], argv + 3, argc - 3, &e);
    else if (argc == 3 && strcmp(argv[1], "get") == 0) rc = get(c, argv[2], &e);
    else if (argc == 3 && strcmp(argv[1], "get-raw") == 0) rc = getRaw(c, argv[2], &e);
    else if (argc == 3 && strcmp(argv[1], "options") == 0) rc = options(c, argv[2], &e);
    else if (argc == 3) rc = putCb(c, argv[2], strcmp(argv[1], "stop") == 0 ? 1 : 0, &e);
    else {
        lake_file *f;
        int fd = open(argv[1], O_RDONLY);
        if (fd < 0) {
            fprintf(stderr, "roundtrip: %s: %s\n", argv[1], strerror(errno));
            lake_close(c);
            return 66;
        }
        const char *slash = strrchr(argv[1], '/');
        rc = lake_put_fd(c, fd, slash ? slash + 1 : argv[1], &f, &e);
        close(fd);
        if (!rc) {
            printf("%s\n", lake_file_json(f));
            rc = compare(c, lake_file_json(f), argv[1], &e);
            lake_file_free(f);
        }
    }
    if (rc && e.exit_status) die(&e);
    lake_close(c);
    return rc;
}
