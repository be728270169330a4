/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * interrupt.h - SIGINT, SIGTERM and SIGHUP end a run cleanly.
 *
 * A program calls interruptCatch once, after parsing its options.  From
 * then on the first of these signals is handled in one of two ways:
 *
 *  - immediate (cooperative = 0): the handler itself erases the line on
 *    stderr (a progress bar, or the ^C a terminal echoed), prints
 *    "PROG: interrupted", removes every temporary file
 *    registered below and lets the process die of the signal.  For
 *    programs with nothing to undo but their temporary files.
 *  - cooperative (cooperative = 1): the handler only records the signal;
 *    the program sees interruptPending() (reads made with interruptRead
 *    give up with EINTR), unwinds through its own cleanup (aborting an
 *    upload, say) and ends with interruptExit.  A second signal takes the
 *    immediate way, for a program stuck where it does not look.
 *
 * Either way the process ends killed by the signal (exit status 128+N in a
 * shell), as callers of a Unix program expect.  A signal that was ignored
 * when the program started (nohup, a background job) stays ignored.
 *
 * The registry holds up to INTERRUPT_TEMP_MAX temporary names (a file
 * relative to a directory descriptor, or an empty directory), removed in
 * the reverse order of registration if the process dies of a signal.
 * Registering and dropping are safe against the handler and between
 * threads (a mutex: two liblake clients commit on two threads); a name
 * that no longer exists when the handler runs is skipped.
 */
#ifndef LAKE_INTERRUPT_H
#define LAKE_INTERRUPT_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#define INTERRUPT_TEMP_MAX 16

/* Install the handlers (see above). */
void interruptCatch(int cooperative);

/* The signal that asked the run to stop, or 0. */
int interruptPending(void);
/* The stop is dealt with and the program goes on (an interactive program
 * cancelled what ran): the next signal is the first again, handled as
 * above, and a note given is forgotten. */
void interruptClear(void);
/* A cooperative stop also calls fn(ctx), from the signal handler: fn
 * must be async-signal-safe (lake_interrupt, which stores a flag, is the
 * one use: a program of the public library passes the stop on).  NULL:
 * none. */
void interruptForward(void (*fn)(void *ctx), void *ctx);
/* The same, as a flag to poll (a stage's put options take one). */
const volatile sig_atomic_t *interruptFlag(void);

/* A lakeReader read function over the descriptor that ctx points to (an
 * int): like fdRead, read until len bytes or the end, but give up (-1,
 * errno EINTR) once a stop signal has arrived, or (errno ECANCELED) once
 * interruptWake was called.  It waits for input with poll(2) in slices of
 * 100 ms, so that neither is missed while it waits. */
ssize_t interruptRead(void *ctx, void *buf, size_t len);
/* One read(2) of fd, as interruptRead waits for it and gives up: the
 * bytes read (0 at the end), or -1 with errno (EINTR, ECANCELED, or the
 * read's). */
ssize_t interruptReadSome(int fd, void *buf, size_t len);

/* From any thread: a read made with interruptRead gives up (-1, errno
 * ECANCELED) within 100 ms, even one waiting for input that does not
 * come, until interruptWakeClear.  For work done beside the reading that
 * failed (a part an S3 upload could not send), so that the reader does
 * not wait on a stalled producer to learn of it. */
void interruptWake(void);
void interruptWakeClear(void);

/* Register dirfd/name (AT_FDCWD and a path will do) to be removed if the
 * process dies of a signal; isdir: rmdir instead of unlink.  Returns a slot
 * for interruptTempDrop, or -1 when the registry is full or the name too
 * long (the name is then simply not protected). */
int interruptTempAdd(int dirfd, const char *name, int isdir);
/* Forget a slot (after the name was removed or published); -1 is ignored. */
void interruptTempDrop(int slot);

/* Say more when interrupted: "PROG: interrupted; NOTE" (one line, e.g.
 * what was left undone).  Not from a signal handler. */
void interruptNote(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* From any thread: if a stop signal arrived, take the immediate way now
 * (for a cooperative program stuck where it does not look, such as a
 * library call that computes without returning).  Returns only when none
 * arrived. */
void interruptNow(void);

/* From any thread, for a program stuck where it cannot unwind (inside a
 * library call that will not return in time): erase the line as above,
 * print "PROG: MSG" (with "; NOTE" when interruptNote gave one), remove
 * the registered names and _exit(code).  Never returns. */
void interruptFatal(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* If a stop signal arrived: erase the line as above, print "PROG:
 * interrupted" (and the note), remove the registered names, flush stdout and die of the
 * signal.  Returns only when none arrived. */
void interruptExit(void);

/* Test-only, for the suites that must change the lake at one exact point
 * of a run (a race made deterministic, never a timing): when the
 * environment variable knob names a PATH, create PATH.held and wait until
 * PATH exists or a stop signal arrives.  Unset or empty: returns at once.
 * Once PATH exists every later hold on it passes straight through. */
void testHold(const char *knob);

#endif
