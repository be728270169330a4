/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_interrupt.c - unit tests of core/interrupt: the registry of
 * temporary names and both ways of stopping, each in a forked child that
 * really receives the signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/interrupt.h"
#include "core/log.h"
#include "tap.h"

static char dir[64];

static int exists(const char *name) {
    char p[128];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

static void touch(const char *name) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) close(fd);
}

/* Run body in a child with stderr to a file, its stop signals at their
 * defaults (a test run started as a background job inherits SIGINT
 * ignored, which interruptCatch respects: the interruptNow child would
 * then spin for ever); its wait status, its stderr in msg. */
static int inChild(void (*body)(void), char *msg, size_t cap) {
    char errPath[128];
    snprintf(errPath, sizeof errPath, "%s/stderr", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(errPath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, STDERR_FILENO);
        close(fd);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        body();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    FILE *f = fopen(errPath, "r");
    size_t n = f ? fread(msg, 1, cap - 1, f) : 0;
    msg[n] = '\0';
    if (f) fclose(f);
    unlink(errPath);
    return st;
}

/* Immediate: the handler removes what is registered (files before their
 * directory, whatever the slots), says so and dies of the signal; a
 * dropped name stays. */
static void immediate(void) {
    char sub[96], path[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(path, sizeof path, "%s/sub/seg", dir);
    mkdir(sub, 0700);
    int k = interruptTempAdd(AT_FDCWD, "/nonexistent/slot", 0); /* slot 0, freed below */
    interruptTempAdd(AT_FDCWD, sub, 1);                          /* slot 1 */
    interruptTempDrop(k);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    close(fd);
    interruptTempAdd(AT_FDCWD, path, 0); /* slot 0: below its directory */
    touch("kept");
    int kept = open(dir, O_RDONLY | O_DIRECTORY);
    interruptTempDrop(interruptTempAdd(kept, "kept", 0));
    interruptCatch(0);
    raise(SIGTERM);
    _exit(0); /* not reached */
}

/* Cooperative: the first signal is only recorded; interruptExit dies. */
static void cooperative(void) {
    logInit("coop");
    interruptCatch(1);
    raise(SIGHUP);
    if (interruptPending() != SIGHUP) _exit(3);
    touch("later");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    interruptTempAdd(dfd, "later", 0);
    interruptNote("nothing appended");
    interruptExit();
    _exit(4); /* not reached */
}

/* A signal ignored at the start stays ignored. */
static void ignored(void) {
    signal(SIGHUP, SIG_IGN);
    interruptCatch(0);
    raise(SIGHUP);
    _exit(interruptPending() ? 5 : 0);
}

/* interruptNow from another thread, while the main one computes without
 * looking: the pending signal takes the immediate way; with none pending
 * it returns. */
static void *nowThread(void *arg) {
    (void)arg;
    while (!interruptPending()) usleep(1000);
    interruptNow();
    return NULL;
}

static void now(void) {
    logInit("now");
    interruptCatch(1);
    touch("spun");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    interruptTempAdd(dfd, "spun", 0);
    interruptNow(); /* nothing pending: returns */
    write(STDERR_FILENO, "returned\n", 9);
    pthread_t t;
    pthread_create(&t, NULL, nowThread, NULL);
    raise(SIGINT);
    for (volatile unsigned long i = 0;; i++) {} /* a library that spins */
}

/* interruptFatal from another thread: the message with the note, the
 * names removed, the exit status given. */
static void *fatalThread(void *arg) {
    (void)arg;
    interruptFatal(65, "%s: stuck", "x.tar");
}

static void fatal(void) {
    logInit("fat");
    interruptCatch(1);
    touch("stuck");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    interruptTempAdd(dfd, "stuck", 0);
    interruptNote("nothing appended");
    pthread_t t;
    pthread_create(&t, NULL, fatalThread, NULL);
    for (;;) pause();
}

int main(void) {
    char msg[512];
    snprintf(dir, sizeof dir, "/tmp/lake-test-interrupt-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    logInit("prog");

    int st = inChild(immediate, msg, sizeof msg);
    ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "immediate: the child dies of SIGTERM");
    ok(strcmp(msg, "prog: interrupted\n") == 0, "immediate: it says 'prog: interrupted' in one line");
    ok(!exists("sub/seg") && !exists("sub"), "immediate: the registered file and then its directory are removed");
    ok(exists("kept"), "immediate: a dropped name stays");

    st = inChild(cooperative, msg, sizeof msg);
    ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGHUP, "cooperative: the first signal is recorded, interruptExit dies of it");
    ok(strcmp(msg, "coop: interrupted; nothing appended\n") == 0, "cooperative: the note is on the same line");
    ok(!exists("later"), "cooperative: names registered after the signal are removed too");

    st = inChild(now, msg, sizeof msg);
    ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "interruptNow: another thread ends a spinning child by its signal");
    ok(strcmp(msg, "returned\nnow: interrupted\n") == 0,
       "interruptNow: with nothing pending it returns; then it says 'now: interrupted'");
    ok(!exists("spun"), "interruptNow: the registered name is removed");

    st = inChild(fatal, msg, sizeof msg);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 65, "interruptFatal: the child exits with the code given");
    ok(strcmp(msg, "fat: x.tar: stuck; nothing appended\n") == 0, "interruptFatal: one line, with the note");
    ok(!exists("stuck"), "interruptFatal: the registered name is removed");

    st = inChild(ignored, msg, sizeof msg);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a signal ignored at the start stays ignored");

    int n = 0;
    while (n <= INTERRUPT_TEMP_MAX && interruptTempAdd(AT_FDCWD, "/nonexistent/x", 0) >= 0) n++;
    ok(n == INTERRUPT_TEMP_MAX, "the registry holds %d names, then refuses (-1)", INTERRUPT_TEMP_MAX);

    unlink(strcat(strcpy(msg, dir), "/kept"));
    rmdir(dir);
    return tapDone();
}
