/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client - liblake in a long-lived, threaded program (liblake(3)).
 *
 *   client commit NS     two clients on two threads, each creating NS.tN
 *                        and inserting 20 rows, one statement each (built
 *                        with -fsanitize=thread by make check: no race)
 *   client import-interrupt NS.T FIFO
 *                        lake_import of FIFO on a thread of its own;
 *                        SIGUSR1 (to the main thread, which waits for it
 *                        in sigwait) calls lake_interrupt: the import
 *                        stops though no signal reaches its thread
 *   client list-twice CMD
 *                        lake_catalog_list, CMD run (another process
 *                        changing the catalog), lake_catalog_list again
 *                        on the same client
 *   client edges NS      a closed and a write-only descriptor, a
 *                        namespace created twice, a bare location's
 *                        FILE value: "WHAT: STATUS CODE" each
 *   client misuse        rows and a reader closed twice and used after
 *                        their close, lake_close twice, a closed client
 *                        used: "WHAT: STATUS CODE" each, never a crash
 *
 * The lake is lake_open's: lake.conf(5) and the environment.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lake.h"

static void say(const char *what, int rc, const lake_error *e) { printf("%s: %d %s\n", what, rc, e->code); }

/* --- commit ---------------------------------------------------------------- */

typedef struct job {
    const char *ns;
    int n, rc;
    char msg[700];
} job;

static void *commit(void *arg) {
    job *j = arg;
    lake_client *c = NULL;
    lake_error e;
    char table[128], sql[256];
    snprintf(table, sizeof table, "%s.t%d", j->ns, j->n);
    j->rc = lake_open(&c, NULL, &e);
    if (!j->rc) j->rc = lake_catalog_create_namespace_v2(c, j->ns, LIBLAKE_IF_NOT_EXISTS, &e);
    if (!j->rc) j->rc = lake_catalog_create(c, table, "n INTEGER", &e);
    for (int i = 0; i < 20 && !j->rc; i++) {
        lake_rows *q = NULL;
        snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (%d)", table, i);
        j->rc = lake_query(c, sql, &q, &e);
        if (!j->rc && lake_rows_next(q, &e) < 0) j->rc = e.exit_status;
        lake_rows_close(q);
    }
    if (j->rc) snprintf(j->msg, sizeof j->msg, "%s: %s", table, e.message);
    lake_close(c);
    return NULL;
}

static int commitTwo(const char *ns) {
    pthread_t th[2];
    job jobs[2] = {{ns, 1, 0, ""}, {ns, 2, 0, ""}};
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, commit, &jobs[i])) return 1;
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].rc) fprintf(stderr, "client: %s\n", jobs[i].msg);
        else printf("%s.t%d: 20 rows\n", ns, jobs[i].n);
        rc |= jobs[i].rc;
    }
    return rc ? 1 : 0;
}

/* --- import-interrupt ------------------------------------------------------ */

typedef struct importJob {
    lake_client *c;
    const char *table;
    int fd, rc, done;
    lake_error e;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} importJob;

static void *importMain(void *arg) {
    importJob *j = arg;
    int rc = lake_import(j->c, j->table, j->fd, "csv", &j->e);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->done = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static int importInterrupt(const char *table, const char *fifo) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    /* blocked here, so on every thread: no signal interrupts the read */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    importJob j = {.table = table, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    lake_error e;
    if (lake_open(&j.c, NULL, &e)) {
        fprintf(stderr, "client: %s\n", e.message);
        return 1;
    }
    j.fd = open(fifo, O_RDONLY);
    pthread_t th;
    if (j.fd < 0 || pthread_create(&th, NULL, importMain, &j)) {
        fprintf(stderr, "client: %s: %s\n", fifo, strerror(errno));
        return 1;
    }
    int sig;
    sigwait(&set, &sig);
    lake_interrupt(j.c); /* from this thread, not the import's */
    /* a guard against a hang (an import that never wakes), not a time any
     * result depends on */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&j.mu);
    while (!j.done && pthread_cond_timedwait(&j.cv, &j.mu, &until) == 0) {}
    int done = j.done;
    pthread_mutex_unlock(&j.mu);
    if (!done) {
        printf("the import still waits for input after lake_interrupt\n");
        _exit(3);
    }
    pthread_join(th, NULL);
    printf("lake_import: %d %s\n", j.rc, j.e.code);
    lake_close(j.c);
    return 0;
}

/* --- list-twice ------------------------------------------------------------ */

static int listTwice(const char *cmd) {
    lake_client *c = NULL;
    lake_error e;
    char *json = NULL;
    int rc = lake_open(&c, NULL, &e);
    if (!rc) rc = lake_catalog_list(c, NULL, &json, &e);
    if (!rc) printf("%s\n", json);
    lake_free(json);
    json = NULL;
    if (!rc && system(cmd) != 0) rc = 1;
    if (!rc) rc = lake_catalog_list(c, NULL, &json, &e);
    if (!rc) printf("%s\n", json);
    else fprintf(stderr, "client: %s\n", e.message);
    lake_free(json);
    lake_close(c);
    return rc;
}

/* --- edges ----------------------------------------------------------------- */

static int edges(const char *ns) {
    lake_client *c = NULL;
    lake_error e;
    lake_file *f = NULL, *g = NULL;
    if (lake_open(&c, NULL, &e)) return 1;
    int p[2];
    if (pipe(p)) return 1;
    close(p[0]);
    say("lake_put_fd(closed)", lake_put_fd(c, p[0], NULL, &f, &e), &e);
    say("lake_put_fd(write-only)", lake_put_fd(c, p[1], NULL, &f, &e), &e);
    say("lake_import(closed)", lake_import(c, "x.y", p[0], NULL, &e), &e);
    say("lake_import(write-only)", lake_import(c, "x.y", p[1], NULL, &e), &e);
    close(p[1]);
    say("lake_catalog_create_namespace", lake_catalog_create_namespace(c, ns, &e), &e);
    say("lake_catalog_create_namespace(again)", lake_catalog_create_namespace(c, ns, &e), &e);
    char table[128];
    snprintf(table, sizeof table, "%s.t", ns);
    say("lake_catalog_create", lake_catalog_create(c, table, "a TEXT", &e), &e);
    say("lake_catalog_create(again)", lake_catalog_create(c, table, "a TEXT", &e), &e);
    say("lake_file_from_json(file:///x/y)", lake_file_from_json("file:///x/y", &f, &e), &e);
    printf("its JSON: %s\n", lake_file_json(f));
    say("lake_file_from_json(its JSON)", lake_file_from_json(lake_file_json(f), &g, &e), &e);
    printf("its location: %s\n", lake_file_location(g));
    lake_file_free(f);
    lake_file_free(g);
    lake_close(c);
    return 0;
}

/* --- misuse --------------------------------------------------------------- */

static ssize_t hello(void *ctx, void *buf, size_t len) {
    int *left = ctx;
    size_t n = *left && len >= 6 ? 6 : 0;
    memcpy(buf, "hello\n", n);
    *left = 0;
    return (ssize_t)n;
}

static int misuse(void) {
    lake_client *c = NULL;
    lake_error e;
    lake_rows *q = NULL;
    lake_file *f = NULL;
    lake_reader *r = NULL;
    char buf[16], *json = NULL;
    int once = 1;
    if (lake_open(&c, NULL, &e) || lake_query(c, "SELECT 1", &q, &e) ||
        lake_put_cb(c, hello, &once, "hello", 6, NULL, NULL, &f, &e) ||
        lake_open_file(c, lake_file_json(f), &r, &e)) {
        fprintf(stderr, "client: %s\n", e.message);
        return 1;
    }
    say("lake_rows_next", lake_rows_next(q, &e), &e);
    lake_rows_close(q);
    lake_rows_close(q);
    printf("lake_rows_close(twice): returned\n");
    say("lake_rows_next(after close)", lake_rows_next(q, &e), &e);
    say("lake_rows_bind_int64(after close)", lake_rows_bind_int64(q, 1, 1, &e), &e);
    printf("accessors after close: %d %d %s\n", lake_rows_columns(q), lake_rows_type(q, 0),
           lake_rows_text(q, 0, NULL) ? "text" : "(null)");
    say("lake_reader_read", (int)lake_reader_read(r, buf, sizeof buf, &e), &e);
    lake_reader_close(r);
    lake_reader_close(r);
    printf("lake_reader_close(twice): returned\n");
    say("lake_reader_read(after close)", (int)lake_reader_read(r, buf, sizeof buf, &e), &e);
    lake_file_free(f);
    lake_close(c);
    lake_close(c);
    printf("lake_close(twice): returned\n");
    say("lake_query(closed client)", lake_query(c, "SELECT 1", &q, &e), &e);
    say("lake_catalog_list(closed client)", lake_catalog_list(c, NULL, &json, &e), &e);
    printf("lake_stage_url(closed client): %s\n", lake_stage_url(c) ? "a URL" : "(null)");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "commit") == 0) return commitTwo(argv[2]);
    if (argc == 4 && strcmp(argv[1], "import-interrupt") == 0) return importInterrupt(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "list-twice") == 0) return listTwice(argv[2]);
    if (argc == 3 && strcmp(argv[1], "edges") == 0) return edges(argv[2]);
    if (argc == 2 && strcmp(argv[1], "misuse") == 0) return misuse();
    fprintf(stderr, "usage: client commit NS | import-interrupt NS.T FIFO | list-twice CMD | edges NS | misuse\n");
    return 64;
}
