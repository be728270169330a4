/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * roundtrip - liblake's round trip (liblake(3)), and its misuse.
 *
 *   roundtrip FILE       put FILE with lake_put_fd, print its FILE value,
 *                        open that value again from its JSON text, read
 *                        the object back and compare it with FILE
 *   roundtrip get REF    write the object REF names to stdout, verified
 *   roundtrip cb FILE    put FILE through lake_put_cb; print the FILE
 *                        value and how often progress was called
 *   roundtrip stop FILE  put FILE through lake_put_cb, stopped by its
 *                        progress callback after the first chunk
 *   roundtrip list [NS]  the catalog's tables (lake_catalog_list)
 *   roundtrip resolve NS.T [VERSION]
 *                        a table's registration (lake_resolve)
 *   roundtrip misuse     call the API with NULL and bad arguments; one
 *                        line "CALL: STATUS CODE" each
 *
 * Uses nothing but <lake.h>.  Exits with the failing call's exit status,
 * after "roundtrip: MESSAGE (CODE)" on stderr; the library's warnings
 * (lake_set_warn) are "roundtrip: warning: LINE" there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lake.h>

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
    if (lake_open(&c, NULL, &e)) return die(&e);
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
    if (argc == 2 && strcmp(argv[1], "misuse") == 0) return misuse();
    if (argc == 2 && strcmp(argv[1], "version") == 0) {
        printf("%s %s\n", lake_version(), LIBLAKE_VERSION);
        return 0;
    }
    int cat = (argc == 2 || argc == 3) && strcmp(argv[1], "list") == 0;
    cat |= (argc == 3 || argc == 4) && strcmp(argv[1], "resolve") == 0;
    if (!cat && argc != 2 && !(argc == 3 && (strcmp(argv[1], "get") == 0 || strcmp(argv[1], "cb") == 0 ||
                                             strcmp(argv[1], "stop") == 0))) {
        fprintf(stderr, "usage: roundtrip FILE | get REF | cb FILE | stop FILE | list [NS] | "
                        "resolve NS.T [VERSION] | misuse | version\n");
        return 64;
    }
    if (lake_open(&c, NULL, &e)) return die(&e);
    lake_set_warn(c, warn, NULL);
    if (cat) rc = catalog(c, argc, argv, &e);
    else if (argc == 3 && strcmp(argv[1], "get") == 0) rc = get(c, argv[2], &e);
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
