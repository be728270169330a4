/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fsutil.c - atomic files, directory creation, full I/O, flock.
 */
#include "core/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/id.h"
#include "core/interrupt.h"

/* Name af's temp in the interrupt registry (after it was created). */
static void tempRegister(atomicFile *af) {
    af->temp_slot = interruptTempAdd(af->dirfd, af->tmp, 0) + 1;
}

static void tempForget(atomicFile *af) {
    interruptTempDrop(af->temp_slot - 1);
    af->temp_slot = 0;
}

/* A fresh ".tmp-<pid>-<id>" name (the writer's PID lets tempSweep tell a
 * dead writer's leftover from a live one's); NULL with err set on failure. */
static char *newTmpName(lakeError *err) {
    char id[ID_LEN + 1];
    if (idNew(id, err)) return NULL;
    size_t n = sizeof ".tmp--" + 20 + ID_LEN;
    char *name = malloc(n);
    if (!name) errSetErrno(err, LAKE_EFAIL, ENOMEM, "temporary name");
    else snprintf(name, n, ".tmp-%ld-%s", (long)getpid(), id);
    return name;
}

void tempSweep(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, ".tmp-", 5) != 0) continue;
        long pid = strtol(e->d_name + 5, &end, 10);
        if (end == e->d_name + 5 || *end != '-' || pid <= 0) continue;
        /* a live PID (ours, or one reused) keeps its file: never a write in flight */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

int atomicOpen(atomicFile *af, const char *dir, const char *name, int replace,
               mode_t mode, lakeError *err) {
    memset(af, 0, sizeof *af);
    af->fd = af->dirfd = -1;
    af->replace = replace;
    af->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (af->dirfd < 0)
        return errSetErrno(err, errCodeForErrno(errno), errno, "%s", dir);
    af->final = strdup(name);
    if (!af->final) goto oom;

    /* Unnamed until linked: a kill leaves nothing behind. */
    af->fd = openat(af->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
    if (af->fd >= 0) return 0;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT) {
        int e = errno;
        atomicAbort(af);
        return errSetErrno(err, LAKE_EFAIL, e, "%s", dir);
    }
    if (!(af->tmp = newTmpName(err))) { atomicAbort(af); return err->code; }
    af->fd = openat(af->dirfd, af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (af->fd < 0) {
        int e = errno;
        free(af->tmp);
        af->tmp = NULL;
        atomicAbort(af);
        return errSetErrno(err, LAKE_EFAIL, e, "%s", dir);
    }
    tempRegister(af);
    return 0;
oom:
    atomicAbort(af);
    return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", dir);
}

int atomicCommit(atomicFile *af, lakeError *err) {
    int rc = 0;
    if (!af->nosync && fsync(af->fd) < 0) {
        rc = errSetErrno(err, LAKE_EFAIL, errno, "fsync");
        goto out;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", af->fd);
    if (!af->tmp && af->replace) {
        /* An unnamed file cannot be renamed: name it briefly, then rename. */
        if (!(af->tmp = newTmpName(err))) { rc = err->code; goto out; }
        if (linkat(AT_FDCWD, proc, af->dirfd, af->tmp, AT_SYMLINK_FOLLOW) < 0) {
            rc = errSetErrno(err, LAKE_EFAIL, errno, "link");
            free(af->tmp);
            af->tmp = NULL;
            goto out;
        }
        tempRegister(af);
    }
    if (af->tmp) {
        if (af->replace) {
            if (renameat(af->dirfd, af->tmp, af->dirfd, af->final) < 0)
                rc = errSetErrno(err, LAKE_EFAIL, errno, "rename");
        } else {
            /* link refuses an existing name, unlike rename */
            if (linkat(af->dirfd, af->tmp, af->dirfd, af->final, 0) < 0)
                rc = errSetErrno(err, LAKE_EFAIL, errno, "link");
            unlinkat(af->dirfd, af->tmp, 0);
        }
        if (!rc) { tempForget(af); free(af->tmp); af->tmp = NULL; }
    } else {
        if (linkat(AT_FDCWD, proc, af->dirfd, af->final, AT_SYMLINK_FOLLOW) < 0)
            rc = errSetErrno(err, LAKE_EFAIL, errno, "link");
    }
    if (!rc && !af->nosync && fsync(af->dirfd) < 0) rc = errSetErrno(err, LAKE_EFAIL, errno, "fsync");
out:
    atomicAbort(af);
    return rc;
}

void atomicAbort(atomicFile *af) {
    if (af->tmp && af->dirfd >= 0) unlinkat(af->dirfd, af->tmp, 0);
    tempForget(af);
    if (af->fd >= 0) close(af->fd);
    if (af->dirfd >= 0) close(af->dirfd);
    free(af->tmp);
    free(af->final);
    memset(af, 0, sizeof *af);
    af->fd = af->dirfd = -1;
}

int mkdirs(const char *path, mode_t mode, lakeError *err) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return errSet(err, LAKE_EFAIL, "%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, mode) < 0 && errno != EEXIST) {
                /* not ours to write is a permission problem (77), not a failure */
                int denied = errno == EACCES || errno == EPERM || errno == EROFS;
                return errSetErrno(err, denied ? LAKE_EPERM : LAKE_EFAIL, errno, "cannot create %s", buf);
            }
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return errSet(err, LAKE_EFAIL, "cannot create %s: not a directory", path);
    return 0;
}

int writeAll(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t readFull(int fd, void *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int lockFd(int fd, int how, lakeError *err) {
    while (flock(fd, how) < 0) {
        if (errno == EINTR) continue;
        return errSetErrno(err, LAKE_EFAIL, errno, "flock");
    }
    return 0;
}

int lockPath(const char *path, int how, lakeError *err) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        errSetErrno(err, LAKE_EFAIL, errno, "%s", path);
        return -1;
    }
    if (lockFd(fd, how, err)) {
        close(fd);
        return -1;
    }
    return fd;
}

int userName(uid_t uid, char *out, size_t n) {
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found) return -1;
    snprintf(out, n, "%s", found->pw_name);
    return 0;
}
