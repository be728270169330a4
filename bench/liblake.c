/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * liblake.c - bench/liblake's program: what lake-put, lake-get and a first
 * catalog answer cost through liblake.so.0 (<lake.h> alone, as a program
 * using the library is built).
 *
 *   liblake put FILE   lake_put_fd of FILE; its FILE value on stdout
 *   liblake get REF    lake_open_file + lake_reader_read to stdout
 *   liblake start      lake_open, then the first answer (first_answer
 *                      below) on stdout; the microseconds from before
 *                      lake_open to the answer on stderr
 *
 * Exits with the failing call's exit status after "liblake: MESSAGE".
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lake.h>

static int fail(const lake_error *e) {
    fprintf(stderr, "liblake: %s (%s)\n", e->message, e->code);
    return e->exit_status;
}

static int put(lake_client *c, const char *path, lake_error *e) {
    int fd = open(path, O_RDONLY);
    lake_file *f;
    if (fd < 0) {
        perror(path);
        return 66;
    }
    int rc = lake_put_fd(c, fd, NULL, &f, e);
    close(fd);
    if (rc) return fail(e);
    printf("%s\n", lake_file_json(f));
    lake_file_free(f);
    return 0;
}

static int get(lake_client *c, const char *ref, lake_error *e) {
    static char buf[1 << 18];
    lake_reader *r;
    ssize_t n;
    if (lake_open_file(c, ref, &r, e)) return fail(e);
    while ((n = lake_reader_read(r, buf, sizeof buf, e)) > 0)
        if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) break;
    lake_reader_close(r);
    if (n < 0) return fail(e);
    return fflush(stdout) == EOF;
}

/* The first query answer a program gets from a fresh client: SELECT 1
 * through lake_query, as lake-query -c 'SELECT 1' prints it. */
static int first_answer(lake_client *c, lake_error *e) {
    lake_rows *q;
    if (lake_query(c, "SELECT 1", &q, e)) return fail(e);
    int rc = lake_rows_next(q, e);
    if (rc == LIBLAKE_ROW) printf("%lld\n", (long long)lake_rows_int64(q, 0));
    lake_rows_close(q);
    return rc == LIBLAKE_ROW ? 0 : fail(e);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    lake_client *c;
    lake_error e;
    const char *cmd = argc > 1 ? argv[1] : "";
    int need = strcmp(cmd, "start") == 0 ? 2 : 3;
    if (argc != need || (need == 3 && strcmp(cmd, "put") != 0 && strcmp(cmd, "get") != 0)) {
        fprintf(stderr, "usage: liblake put FILE | get REF | start\n");
        return 64;
    }
    double t0 = now();
    if (lake_open(&c, NULL, &e)) return fail(&e);
    int rc = strcmp(cmd, "put") == 0 ? put(c, argv[2], &e)
             : strcmp(cmd, "get") == 0 ? get(c, argv[2], &e)
                                       : first_answer(c, &e);
    if (rc == 0 && strcmp(cmd, "start") == 0) fprintf(stderr, "%.0f\n", (now() - t0) * 1e6);
    lake_close(c);
    return rc;
}
