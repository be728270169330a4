/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * interrupt.c - the stop signals and the registry of temporary names (see
 * interrupt.h).  The handler uses only async-signal-safe calls: write,
 * unlinkat, sigaction, sigprocmask, raise.
 */
#include "core/interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/progress.h"

static const int stopSignals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSTOP (int)(sizeof stopSignals / sizeof stopSignals[0])

static volatile sig_atomic_t stopSignal; /* the first signal, or 0 */
static int cooperative;
/* What die() prints: "prog: interrupted\n", or with a note; the pointer
 * moves to a line only once it is whole. */
static char sayLine[128], noteLine[640];
static const char *volatile say = "interrupted\n";
static int stderrTty;                    /* erase the echoed ^C too */
static void (*volatile forwardFn)(void *); /* interruptForward's */
static void *volatile forwardCtx;

static struct {
    volatile sig_atomic_t used;
    int dirfd;
    int isdir;
    char name[PATH_MAX];
} temps[INTERRUPT_TEMP_MAX];
/* Two threads (two liblake clients committing at once) add and drop
 * names: the mutex orders them; the handler only reads, never locks. */
static pthread_mutex_t tempsMu = PTHREAD_MUTEX_INITIALIZER;

/* Files first, then the directories that held them (newest first). */
static void removeTemps(void) {
    for (int dirs = 0; dirs < 2; dirs++)
        for (int i = INTERRUPT_TEMP_MAX - 1; i >= 0; i--)
            if (temps[i].used && temps[i].isdir == dirs)
                unlinkat(temps[i].dirfd, temps[i].name, dirs ? AT_REMOVEDIR : 0);
}

/* Erase the bar, or the ^C a terminal echoed, from stderr's line. */
static void eraseLine(void) {
    if ((progressOnScreen() || stderrTty) && write(STDERR_FILENO, "\r\033[K", 4) < 0) {}
}

/* Erase the line, say so, remove the temporary names, die of sig. */
static void die(int sig) {
    eraseLine();
    const char *line = say;
    if (write(STDERR_FILENO, line, strlen(line)) < 0) {}
    removeTemps();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig); /* not reached: the default action ends the process */
}

static void onStop(int sig) {
    int saved = errno;
    if (!cooperative || stopSignal) die(sig);
    stopSignal = sig;
    void (*fn)(void *) = forwardFn;
    if (fn) fn(forwardCtx);
    errno = saved;
}

void interruptCatch(int coop) {
    cooperative = coop;
    stderrTty = isatty(STDERR_FILENO);
    snprintf(sayLine, sizeof sayLine, "%.100s: interrupted\n", logProgname());
    say = sayLine;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = onStop; /* no SA_RESTART: a blocked read returns EINTR */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSTOP; i++) sigaddset(&sa.sa_mask, stopSignals[i]);
    for (int i = 0; i < NSTOP; i++)
        if (sigaction(stopSignals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(stopSignals[i], &sa, NULL);
}

void interruptForward(void (*fn)(void *ctx), void *ctx) {
    forwardFn = NULL; /* never the new fn with the old ctx */
    forwardCtx = ctx;
    forwardFn = fn;
}

int interruptPending(void) { return stopSignal; }

void interruptClear(void) {
    say = sayLine;
    stopSignal = 0;
}

const volatile sig_atomic_t *interruptFlag(void) { return &stopSignal; }

static atomic_int woken;

void interruptWake(void) { atomic_store(&woken, 1); }

void interruptWakeClear(void) { atomic_store(&woken, 0); }

/* Wait until fd has input (or an end, or an error for read to report),
 * in slices of 100 ms; 0 when it has, else -1 with errno EINTR (a stop
 * signal) or ECANCELED (interruptWake).  A descriptor poll(2) does not
 * take (EINVAL, EPERM) counts as ready. */
static int waitInput(int fd) {
    for (;;) {
        if (stopSignal || atomic_load(&woken)) {
            errno = stopSignal ? EINTR : ECANCELED;
            return -1;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, 100);
        if (n > 0 || (n < 0 && errno != EINTR)) return 0;
    }
}

ssize_t interruptReadSome(int fd, void *buf, size_t len) {
    for (;;) {
        if (waitInput(fd)) return -1;
        ssize_t n = read(fd, buf, len);
        if (n >= 0 || errno != EINTR) return n;
    }
}

ssize_t interruptRead(void *ctx, void *buf, size_t len) {
    int fd = *(int *)ctx;
    size_t got = 0;
    while (got < len) {
        ssize_t n = interruptReadSome(fd, (char *)buf + got, len - got);
        if (n < 0) return -1;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int interruptTempAdd(int dirfd, const char *name, int isdir) {
    if (!name || strlen(name) >= PATH_MAX) return -1;
    int slot = -1;
    pthread_mutex_lock(&tempsMu);
    for (int i = 0; i < INTERRUPT_TEMP_MAX && slot < 0; i++) {
        if (temps[i].used) continue;
        temps[i].dirfd = dirfd;
        temps[i].isdir = isdir;
        strcpy(temps[i].name, name);
        atomic_signal_fence(memory_order_seq_cst); /* the name before the flag */
        temps[i].used = 1;
        slot = i;
    }
    pthread_mutex_unlock(&tempsMu);
    return slot;
}

void interruptTempDrop(int slot) {
    if (slot < 0 || slot >= INTERRUPT_TEMP_MAX) return;
    pthread_mutex_lock(&tempsMu);
    temps[slot].used = 0;
    pthread_mutex_unlock(&tempsMu);
}

void interruptNote(const char *fmt, ...) {
    char note[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    if (say == noteLine) say = sayLine; /* not rewritten while in use */
    snprintf(noteLine, sizeof noteLine, "%.100s: interrupted; %s\n", logProgname(), note);
    say = noteLine;
}

void interruptNow(void) {
    int sig = stopSignal;
    if (sig) die(sig);
}

void interruptFatal(int code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "%.100s: ", logProgname());
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    /* the note line is "PROG: interrupted; NOTE\n": its "; NOTE" */
    const char *note = say == noteLine ? strstr(noteLine, "; ") : NULL;
    size_t len = strlen(msg);
    snprintf(msg + len, sizeof msg - len, "%s", note ? note : "\n");
    len = strlen(msg);
    if (msg[len - 1] != '\n') msg[len - 1] = '\n';
    eraseLine();
    if (write(STDERR_FILENO, msg, len) < 0) {}
    removeTemps();
    _exit(code);
}

void interruptExit(void) {
    int sig = stopSignal;
    if (!sig) return;
    fflush(stdout);
    die(sig);
}

void testHold(const char *knob) {
    const char *p = getenv(knob);
    if (!p || !*p || access(p, F_OK) == 0) return;
    char held[PATH_MAX];
    snprintf(held, sizeof held, "%s.held", p);
    FILE *f = fopen(held, "w");
    if (f) fclose(f);
    struct timespec pause = {0, 10 * 1000 * 1000};
    while (access(p, F_OK) != 0 && !interruptPending()) nanosleep(&pause, NULL);
}
