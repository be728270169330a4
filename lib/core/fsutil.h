/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fsutil.h - durable files: atomic creation and replacement, locks, full
 * reads and writes.
 *
 * An atomicFile is written in the directory of its final name and appears
 * under that name only at atomicCommit, after its bytes are on disk (fsync
 * of the file, then the link or rename, then fsync of the directory).
 * Until then, and after any failure or kill, the final name does not exist
 * (create) or still holds the old bytes (replace).  Where the filesystem
 * supports O_TMPFILE a killed writer leaves nothing behind at all (but for
 * the instant of a replacing commit); elsewhere it leaves a
 * ".tmp-<pid>-<id>" file in the directory, which the lake's gc (and, for
 * private directories, tempSweep) removes; a named temp is registered with
 * core/interrupt.h, so a stop signal removes it.
 */
#ifndef LAKE_FSUTIL_H
#define LAKE_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "core/error.h"

typedef struct atomicFile {
    int fd;
    int dirfd;
    int replace;     /* rename over an existing name instead of link */
    char *final;     /* name relative to dirfd */
    char *tmp;       /* named temp relative to dirfd, NULL for O_TMPFILE */
    int temp_slot;   /* the named temp's slot in the interrupt registry
                        plus one, 0 when none (core/interrupt.h) */
    int nosync;      /* set after atomicOpen: commit without the fsyncs (the
                        caller makes the file durable later, e.g. syncfs) */
} atomicFile;

/* Open a new file to become dir/name.  With replace=0 the commit fails with
 * EEXIST if the name exists (never overwrites); with replace=1 it replaces
 * it atomically.  mode as for open(2). */
int atomicOpen(atomicFile *af, const char *dir, const char *name, int replace,
               mode_t mode, lakeError *err);
/* fsync, publish under the final name, fsync the directory; closes. */
int atomicCommit(atomicFile *af, lakeError *err);
/* Discard: remove the temp file (if named) and close.  Safe after commit
 * and on a zeroed struct. */
void atomicAbort(atomicFile *af);

/* mkdir -p with mode 0755 (or 0700 for private trees); ok if it exists.
 * A directory this user may not write (EACCES, EPERM, EROFS) is
 * LAKE_EPERM (77); any other failure LAKE_EFAIL. */
int mkdirs(const char *path, mode_t mode, lakeError *err);

/* Remove the ".tmp-<pid>-<id>" files in dir whose writer is dead (a
 * SIGKILL between naming a replacing commit's temp and its rename leaves
 * one).  Best effort, silent; a live or reused PID keeps its file. */
void tempSweep(const char *dir);

/* write(2) until done, retrying EINTR; -1 with errno on failure. */
int writeAll(int fd, const void *buf, size_t len);
/* read(2) until len bytes or EOF, retrying EINTR; bytes read or -1. */
ssize_t readFull(int fd, void *buf, size_t len);

/* The login name of uid into out (n bytes): 0, or -1 when it has none.
 * Thread-safe (getpwuid_r: two liblake clients open on two threads). */
int userName(uid_t uid, char *out, size_t n);

/* flock(2) on fd, waiting; LOCK_SH or LOCK_EX.  Retries EINTR. */
int lockFd(int fd, int how, lakeError *err);
/* Open (creating) path and take the lock; returns the fd or -1. */
int lockPath(const char *path, int how, lakeError *err);

#endif
