/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_source.c - the remote source's retries of a catalog that answers
 * 503 (source_remote.c), and sourceNoRetry.
 *
 * The peer is a stub in a child process, on a loopback port over plain
 * http (which lake allows to a loopback host): it answers every request
 * 503 with lake-metasrv's error object and a Retry-After of its choosing,
 * and counts the requests in shared memory.  A real lake-metasrv answers
 * 503 only while its registry is away, which the bats suites bring about
 * with a real PostgreSQL (pg-failover.bats); here the point is how many
 * requests a call makes, which the count tells without timing anything.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog/source.h"
#include "core/config.h"
#include "tap.h"

typedef struct stub {
    pid_t pid;
    int port;
    volatile int *requests;   /* shared with the child */
    volatile int *retry_after; /* the Retry-After it sends, seconds; < 0: none */
} stub;

/* Read one request (headers, then Content-Length bytes of body) from fd. */
static void readRequest(int fd) {
    char buf[8192];
    size_t len = 0;
    char *end = NULL;
    while (!end && len < sizeof buf - 1) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0) return;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end) return;
    long body = 0;
    for (char *h = buf; h && h < end; h = strstr(h, "\r\n") ? strstr(h, "\r\n") + 2 : NULL)
        if (strncasecmp(h, "Content-Length:", 15) == 0) body = strtol(h + 15, NULL, 10);
    long have = (long)(len - (size_t)(end + 4 - buf));
    while (have < body) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) return;
        have += n;
    }
}

static void serve(int lfd, stub *s) {
    static const char body[] =
        "{\"error\":{\"code\":\"unavailable\",\"message\":\"registry unreachable: find principal\","
        "\"request_id\":\"stub\"}}";
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0) continue;
        readRequest(c);
        (*s->requests)++;
        char head[256], after[48] = "";
        if (*s->retry_after >= 0) snprintf(after, sizeof after, "Retry-After: %d\r\n", *s->retry_after);
        int n = snprintf(head, sizeof head,
                         "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n%s"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                         after, sizeof body - 1);
        if (write(c, head, (size_t)n) < 0 || write(c, body, sizeof body - 1) < 0) {
            /* the client gave up: nothing to do */
        }
        close(c);
    }
}

static int stubStart(stub *s) {
    int *shared = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) return -1;
    s->requests = &shared[0];
    s->retry_after = &shared[1];
    *s->requests = 0;
    *s->retry_after = 0;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    s->port = ntohs(a.sin_port);
    if ((s->pid = fork()) < 0) return -1;
    if (s->pid == 0) serve(lfd, s);
    close(lfd);
    return 0;
}

/* A remote source over the stub with retry_deadline deadline (text). */
static catalogSource *openSource(const stub *s, const char *deadline, lakeConfig *cfg) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    configOverride ov[] = {{"metasrv", url}, {"token", "lk_stub"}, {"retry_deadline", deadline}};
    lakeError err = {0};
    catalogSource *src = NULL;
    if (configLoad(cfg, ov, 3, &err) || sourceOpen(cfg, &src, &err)) {
        printf("# set-up: %s\n", err.msg);
        return NULL;
    }
    return src;
}

/* Requests one snapshot call made, and its error into err. */
static int snapshotRequests(const stub *s, catalogSource *src, lakeError *err) {
    int before = *s->requests;
    cJSON *ans = NULL;
    errClear(err);
    if (sourceSnapshot(src, -1, 1000, 1 << 20, &ans, err) == 0) cJSON_Delete(ans);
    return *s->requests - before;
}

int main(void) {
    stub s;
    if (stubStart(&s) != 0) {
        printf("not ok 1 - cannot start the 503 stub\n");
        return 1;
    }
    setenv("LAKE_CACHE_DIR", "/nonexistent-cache", 1);
    setenv("LAKE_CONFIG", "/dev/null", 1);
    unsetenv("LAKE_RETRY_DEADLINE");
    unsetenv("LAKE_METASRV");
    lakeConfig cfg;
    lakeError err = {0};

    /* retry_deadline 0: one request, the message says so, not the server's words */
    catalogSource *src = openSource(&s, "0", &cfg);
    int n = src ? snapshotRequests(&s, src, &err) : -1;
    ok(n == 1 && err.code == LAKE_ETEMP, "retry_deadline 0: one request, 75 (%d requests, exit %d)", n, err.code);
    ok(strstr(err.msg, "the catalog is temporarily unavailable") && strstr(err.msg, "retry_deadline = 0") &&
           !strstr(err.msg, "principal"),
       "the message is the user's, not the server's: %s", err.msg);
    sourceClose(src);
    configFree(&cfg);

    /* retry_deadline 1 with Retry-After: 1: the pause is the whole second,
     * then the last round at the deadline: two requests exactly */
    *s.retry_after = 1;
    src = openSource(&s, "1", &cfg);
    n = src ? snapshotRequests(&s, src, &err) : -1;
    ok(n == 2 && err.code == LAKE_ETEMP, "Retry-After: 1 within a deadline of 1 s: two requests (%d)", n);
    ok(strstr(err.msg, "gave up after 1 s (retry_deadline)") != NULL, "it says it gave up: %s", err.msg);

    sourceClose(src);
    configFree(&cfg);

    /* sourceNoRetry: one round while on, the deadline again once off
     * (3 s without Retry-After: pauses below 100, 200, 400 ms… leave
     * room for more than two rounds however slow the machine) */
    *s.retry_after = -1;
    src = openSource(&s, "3", &cfg);
    if (!src) return 1;
    sourceNoRetry(src, 1);
    n = snapshotRequests(&s, src, &err);
    ok(n == 1 && err.code == LAKE_ETEMP && !strstr(err.msg, "gave up"),
       "sourceNoRetry(s, 1): one request (%d): %s", n, err.msg);
    sourceNoRetry(src, 0);
    n = snapshotRequests(&s, src, &err);
    ok(n > 2 && err.code == LAKE_ETEMP, "sourceNoRetry(s, 0): retried again, backing off from 100 ms (%d requests)",
       n);

    /* a change to the directory is not sent twice */
    int before = *s.requests;
    int64_t gen = 0;
    errClear(&err);
    int rc = sourceCreateNamespace(src, "ns", &gen, &err);
    ok(rc == LAKE_ETEMP && *s.requests - before == 1 && strstr(err.msg, "create_namespace is not retried"),
       "create_namespace: one request, 75: %s", err.msg);
    sourceClose(src);
    configFree(&cfg);

    /* a local source has nothing to retry: a no-op */
    catalogSource *local = NULL;
    char dir[] = "/tmp/lake-test-source.XXXXXX", path[64];
    if (mkdtemp(dir)) {
        snprintf(path, sizeof path, "%s/registry.db", dir);
        if (sourceLocalOpen(path, NULL, &local, &err) == 0) {
            sourceNoRetry(local, 1);
            sourceNoRetry(local, 0);
            sourceClose(local);
        }
        rmdir(dir);
    }
    ok(local != NULL, "sourceNoRetry on a local source: a no-op");

    kill(s.pid, SIGKILL);
    waitpid(s.pid, NULL, 0);
    return tapDone();
}
