/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * deadline.c - the request deadline of lake-metasrv (see deadline.h).
 *
 * Every connection has a record, linked into one list under one mutex,
 * from MHD's "started" notification to its "closed" one.  MHD closes the
 * socket only after the "closed" notification has returned, so a
 * shutdown(2) made under the mutex always reaches the connection's own
 * socket, never a reused descriptor.  shutdown, not close: MHD sees the end
 * of the stream in its own thread and cleans up as for any client that
 * went away.
 */
#include "deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

typedef struct conn {
    struct conn *prev, *next;
    int fd;
    int answering;       /* the clock is stopped */
    int cut;             /* shut down already */
    struct timespec since;
} conn;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static conn *conns;
static unsigned limit;
static int running;
static pthread_t watchdog;

static void now(struct timespec *t) { clock_gettime(CLOCK_MONOTONIC, t); }

static long long elapsedNs(const struct timespec *from, const struct timespec *to) {
    return (long long)(to->tv_sec - from->tv_sec) * 1000000000LL + (to->tv_nsec - from->tv_nsec);
}

static conn *recordOf(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

void deadlineNotify(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode code) {
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn *k = calloc(1, sizeof *k);
        if (!k || !i) { /* untracked: only the idle timeout applies to it */
            free(k);
            return;
        }
        k->fd = i->connect_fd;
        now(&k->since);
        pthread_mutex_lock(&mu);
        k->next = conns;
        if (conns) conns->prev = k;
        conns = k;
        pthread_mutex_unlock(&mu);
        *socket_context = k;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        conn *k = *socket_context;
        pthread_mutex_lock(&mu);
        if (k->prev) k->prev->next = k->next;
        else conns = k->next;
        if (k->next) k->next->prev = k->prev;
        pthread_mutex_unlock(&mu);
        free(k);
        *socket_context = NULL;
    }
}

void deadlineAnswering(struct MHD_Connection *c) {
    conn *k = recordOf(c);
    if (!k) return;
    pthread_mutex_lock(&mu);
    k->answering = 1;
    pthread_mutex_unlock(&mu);
}

void deadlineAnswered(struct MHD_Connection *c) {
    conn *k = recordOf(c);
    if (!k) return;
    pthread_mutex_lock(&mu);
    k->answering = 0;
    now(&k->since);
    pthread_mutex_unlock(&mu);
}

/* Once a second: shut down the connections over the limit. */
static void *watch(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    while (running) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        for (conn *k = conns; k; k = k->next)
            if (!k->answering && !k->cut && elapsedNs(&k->since, &t) >= (long long)limit * 1000000000LL) {
                shutdown(k->fd, SHUT_RDWR);
                k->cut = 1;
            }
        t.tv_sec += 1;
        pthread_cond_timedwait(&wake, &mu, &t);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int deadlineStart(unsigned seconds, lakeError *err) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &a);
    pthread_condattr_destroy(&a);
    limit = seconds;
    running = 1;
    int rc = pthread_create(&watchdog, NULL, watch, NULL);
    if (rc) {
        running = 0;
        return errSetErrno(err, LAKE_EFAIL, rc, "cannot start the request deadline thread");
    }
    return 0;
}

void deadlineStop(void) {
    pthread_mutex_lock(&mu);
    int was = running;
    running = 0;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&mu);
    if (was) pthread_join(watchdog, NULL);
}
