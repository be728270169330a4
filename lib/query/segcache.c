/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * segcache.c - the segment cache: digest-named files, flock coalescing,
 * atime-ordered eviction.  The protocol is in segcache.h.
 *
 * Lock order: <digest>.lock, then .lock, then a segment file.  A hit takes
 * no lock but the shared one on the file itself.  Locks on files that may
 * be unlinked are taken, then checked against the name (the inode under the
 * name must still be the one locked), else retried: the usual way to lock
 * a file that others remove.
 */
#include "query/segcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/sha256.h"

#define SEGCACHE_BUF (1 << 20)

typedef struct pin {
    char sha256[SHA256_HEX_LEN + 1];
    int fd; /* holds LOCK_SH on the segment file */
} pin;

struct segcache {
    char *dir;  /* cache_dir/segments */
    int dirfd;
    int64_t max;
    int64_t max_age_s; /* 0: no bound on age */
    pin *pins;
    size_t npins, cap;
};

/* What a look at a cached file found. */
enum look { LOOK_HIT, LOOK_MISS, LOOK_BAD };

int segcacheMaxFromEnv(int64_t *max_bytes, lakeError *err) {
    const char *v = getenv("LAKE_SEGMENT_CACHE_MAX");
    *max_bytes = SEGCACHE_MAX_DEFAULT;
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (errno || end == v || *end || n <= 0 || n > (INT64_MAX >> shift) || v[0] == '+')
        return errSet(err, LAKE_ECONFIG,
                      "LAKE_SEGMENT_CACHE_MAX: not a positive number of bytes: %s", v);
    *max_bytes = (int64_t)n << shift;
    return 0;
}

int segcacheOpen(const char *cache_dir, int64_t max_bytes, segcache **out, lakeError *err) {
    *out = NULL;
    if (max_bytes <= 0) return errSet(err, LAKE_EUSAGE, "segment cache: bound must be positive");
    segcache *c = calloc(1, sizeof *c);
    if (!c || asprintf(&c->dir, "%s/segments", cache_dir) < 0) {
        if (c) c->dir = NULL;
        segcacheClose(c);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment cache");
    }
    c->dirfd = -1;
    c->max = max_bytes;
    if (mkdirs(c->dir, 0700, err)) {
        segcacheClose(c);
        return err->code;
    }
    c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->dirfd < 0) {
        int e = errno;
        errSetErrno(err, errCodeForErrno(e), e, "%s", c->dir);
        segcacheClose(c);
        return err->code;
    }
    *out = c;
    return 0;
}

int segcacheDup(const segcache *c, segcache **out, lakeError *err) {
    char *dir = strdup(c->dir);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (!slash) {
        free(dir);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment cache");
    }
    *slash = '\0'; /* cache_dir, without /segments */
    int rc = segcacheOpen(dir, c->max, out, err);
    free(dir);
    if (!rc) (*out)->max_age_s = c->max_age_s;
    return rc;
}

void segcacheRelease(segcache *c, const char *sha256) {
    for (size_t i = c->npins; i-- > 0;) {
        if (strcmp(c->pins[i].sha256, sha256) != 0) continue;
        close(c->pins[i].fd);
        c->pins[i] = c->pins[--c->npins];
        return;
    }
}

void segcacheClose(segcache *c) {
    if (!c) return;
    for (size_t i = 0; i < c->npins; i++) close(c->pins[i].fd);
    free(c->pins);
    if (c->dirfd >= 0) close(c->dirfd);
    free(c->dir);
    free(c);
}

/* 1 when fd is the file now named name in the cache directory. */
static int stillNamed(const segcache *c, int fd, const char *name) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstatat(c->dirfd, name, &b, 0) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Hash fd from its start: 0 when it holds size bytes with digest sha256,
 * 65 when not, 1 on a read error. */
static int verifyFd(int fd, int64_t size, const char *sha256, const char *what, lakeError *err) {
    char *buf = malloc(SEGCACHE_BUF);
    sha256Ctx *h = sha256New();
    int rc = 0;
    int64_t total = 0;
    if (!buf || !h) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", what); goto out; }
    for (;;) {
        ssize_t n = pread(fd, buf, SEGCACHE_BUF, total);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", what); goto out; }
        if (n == 0) break;
        sha256Update(h, buf, (size_t)n);
        total += n;
    }
    char got[SHA256_HEX_LEN + 1];
    sha256FinalHex(h, got);
    if (total != size || strcmp(got, sha256) != 0)
        rc = errSet(err, LAKE_EDATA, "%s: cached segment fails its SHA-256", what);
out:
    sha256Free(h);
    free(buf);
    return rc;
}

/* The modification time of a verified segment: one nanosecond past the
 * epoch, a time no write gives a file (a write sets now). */
static const struct timespec verifiedMtime = {0, 1};

static int stamped(const struct stat *st) {
    return st->st_mtim.tv_sec == verifiedMtime.tv_sec && st->st_mtim.tv_nsec == verifiedMtime.tv_nsec;
}

/* Look for a verified copy of seg.  LOOK_HIT: *fd holds it, shared-locked,
 * its atime (the LRU stamp) set to now.  LOOK_MISS: no file.  LOOK_BAD: a
 * file is there but fails its size or digest (nothing is held).  -1 (err
 * set) on an I/O error.  A file not stamped verified is hashed in full
 * (verify=0: the caller just hashed it) and then stamped. */
static int look(segcache *c, const fileValue *seg, int verify, int *fd, lakeError *err) {
    *fd = -1;
    for (;;) {
        int f = openat(c->dirfd, seg->sha256, O_RDONLY | O_CLOEXEC);
        if (f < 0 && errno == ENOENT) return LOOK_MISS;
        if (f < 0) {
            errSetErrno(err, LAKE_EFAIL, errno, "%s/%s", c->dir, seg->sha256);
            return -1;
        }
        if (lockFd(f, LOCK_SH, err)) { close(f); return -1; }
        if (!stillNamed(c, f, seg->sha256)) { /* evicted or replaced meanwhile */
            close(f);
            continue;
        }
        struct stat st;
        lakeError verr = {0};
        int ok = fstat(f, &st) == 0 && st.st_size == seg->size;
        if (ok && verify && !stamped(&st))
            ok = verifyFd(f, seg->size, seg->sha256, seg->sha256, &verr) == 0;
        if (!ok) {
            close(f);
            if (verr.code && verr.code != LAKE_EDATA) { *err = verr; return -1; }
            return LOOK_BAD;
        }
        /* a failure here only ages the entry, or costs a hash next time */
        struct timespec times[2] = {{0, UTIME_NOW}, stamped(&st) ? (struct timespec){0, UTIME_OMIT} : verifiedMtime};
        futimens(f, times);
        *fd = f;
        return LOOK_HIT;
    }
}

/* Take <digest>.lock exclusively; returns its fd or -1. */
static int lockDigest(segcache *c, const char *sha256, lakeError *err) {
    char name[SHA256_HEX_LEN + 8];
    snprintf(name, sizeof name, "%s.lock", sha256);
    for (;;) {
        int fd = openat(c->dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            errSetErrno(err, LAKE_EFAIL, errno, "%s/%s", c->dir, name);
            return -1;
        }
        if (lockFd(fd, LOCK_EX, err)) { close(fd); return -1; }
        if (stillNamed(c, fd, name)) return fd;
        close(fd); /* the previous holder removed it: lock the new one */
    }
}

static void unlockDigest(segcache *c, const char *sha256, int fd) {
    char name[SHA256_HEX_LEN + 8];
    snprintf(name, sizeof name, "%s.lock", sha256);
    unlinkat(c->dirfd, name, 0);
    close(fd);
}

/* Remove the segment named name unless some process (this one included)
 * has it pinned: 1 when it was removed. */
static int evictOne(segcache *c, const char *name) {
    int f = openat(c->dirfd, name, O_RDONLY | O_CLOEXEC), gone = 0;
    if (f < 0) return 0;
    if (flock(f, LOCK_EX | LOCK_NB) == 0 && stillNamed(c, f, name) && unlinkat(c->dirfd, name, 0) == 0) gone = 1;
    close(f);
    return gone;
}

typedef struct entry {
    char name[SHA256_HEX_LEN + 1];
    int64_t size;
    struct timespec used;
} entry;

static int olderFirst(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* With .lock held: evict the segments unused for longer than the maximum
 * age, then the least recently used ones until the total plus need fits
 * the bound, skipping pinned ones.  Best effort: a scan failure leaves the
 * cache over its bound rather than failing the query. */
static void evictLocked(segcache *c, int64_t need) {
    int dfd = dup(c->dirfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return;
    }
    rewinddir(d);
    entry *es = NULL;
    size_t n = 0, cap = 0;
    int64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (strlen(de->d_name) != SHA256_HEX_LEN || !sha256IsHex(de->d_name) ||
            fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            entry *ne = realloc(es, ncap * sizeof *ne);
            if (!ne) goto out;
            es = ne;
            cap = ncap;
        }
        memcpy(es[n].name, de->d_name, SHA256_HEX_LEN + 1);
        es[n].size = st.st_size;
        es[n].used = st.st_atim;
        total += st.st_size;
        n++;
    }
    if (c->max_age_s > 0) {
        time_t oldest = time(NULL) - (time_t)c->max_age_s;
        for (size_t i = 0; i < n; i++) {
            if (es[i].used.tv_sec >= oldest || !evictOne(c, es[i].name)) continue;
            total -= es[i].size;
            es[i--] = es[--n];
        }
    }
    if (total + need <= c->max) goto out;
    qsort(es, n, sizeof *es, olderFirst);
    for (size_t i = 0; i < n && total + need > c->max; i++)
        if (evictOne(c, es[i].name)) total -= es[i].size;
out:
    free(es);
    closedir(d);
}

/* The writer a fetch streams into: counts, hashes and writes. */
typedef struct fetchSink {
    int fd;
    sha256Ctx *h;
    int64_t total, limit;
    int overflow;
} fetchSink;

static int sinkWrite(void *ctx, const void *buf, size_t len) {
    fetchSink *s = ctx;
    if (s->total + (int64_t)len > s->limit) {
        s->overflow = 1;
        errno = EFBIG;
        return -1;
    }
    s->total += (int64_t)len;
    sha256Update(s->h, buf, len);
    return writeAll(s->fd, buf, len);
}

/* With <digest>.lock held and no file under the digest: download seg,
 * verify, make room, publish, and look it up pinned into *fd. */
static int fetch(segcache *c, stage *st, const fileValue *seg, int *fd, lakeError *err) {
    atomicFile af;
    int lockfd = -1, rc;
    fetchSink sink = {.limit = seg->size};
    *fd = -1;
    if ((rc = atomicOpen(&af, c->dir, seg->sha256, 0, 0600, err))) return rc;
    if (!(sink.h = sha256New())) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "fetch"); goto out; }
    sink.fd = af.fd;
    lakeWriter w = {sinkWrite, &sink, c->dir};
    /* verify=0: the sink checks size and digest itself, in the one pass */
    rc = stageGet(st, seg, &w, 0, NULL, err);
    char got[SHA256_HEX_LEN + 1] = "";
    if (!rc || sink.overflow) sha256FinalHex(sink.h, got);
    if (sink.overflow || (!rc && sink.total != seg->size)) {
        rc = errSet(err, LAKE_EDATA, "%s: %s bytes in the stage, not %lld", seg->location,
                    sink.overflow ? "more" : "fewer", (long long)seg->size);
        goto out;
    }
    if (rc) goto out;
    if (strcmp(got, seg->sha256) != 0) {
        rc = errSet(err, LAKE_EDATA, "%s: SHA-256 mismatch (expected %s, got %s)", seg->location,
                    seg->sha256, got);
        goto out;
    }
    char lockname[PATH_MAX];
    snprintf(lockname, sizeof lockname, "%s/.lock", c->dir);
    if ((lockfd = lockPath(lockname, LOCK_EX, err)) < 0) { rc = err->code; goto out; }
    evictLocked(c, seg->size);
    if ((rc = atomicCommit(&af, err))) goto out;
    /* pinned before .lock is dropped, so no evictor can take it first */
    int r = look(c, seg, 0, fd, err);
    if (r == LOOK_HIT) rc = 0;
    else if (r < 0) rc = err->code;
    else rc = errSet(err, LAKE_EFAIL, "%s/%s: vanished after publishing", c->dir, seg->sha256);
out:
    if (lockfd >= 0) close(lockfd);
    atomicAbort(&af);
    sha256Free(sink.h);
    return rc;
}

/* Record a pin and build the path for the caller. */
static int pinned(segcache *c, const fileValue *seg, int fd, char **path, lakeError *err) {
    if (c->npins == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        pin *np = realloc(c->pins, ncap * sizeof *np);
        if (!np) goto oom;
        c->pins = np;
        c->cap = ncap;
    }
    if (asprintf(path, "%s/%s", c->dir, seg->sha256) < 0) goto oom;
    memcpy(c->pins[c->npins].sha256, seg->sha256, SHA256_HEX_LEN + 1);
    c->pins[c->npins++].fd = fd;
    return 0;
oom:
    *path = NULL;
    close(fd);
    return errSetErrno(err, LAKE_EFAIL, ENOMEM, "segment cache");
}

int segcacheGet(segcache *c, stage *st, const fileValue *seg, char **path, lakeError *err) {
    int fd, r;
    *path = NULL;
    if (!seg->location || seg->size < 0 || strlen(seg->sha256) != SHA256_HEX_LEN ||
        !sha256IsHex(seg->sha256) ||
        strspn(seg->sha256, "0123456789abcdef") != SHA256_HEX_LEN)
        return errSet(err, LAKE_EDATA,
                      "%s: a segment needs a location, a size and a lowercase SHA-256",
                      seg->location ? seg->location : "segment");
    if ((r = look(c, seg, 1, &fd, err)) == LOOK_HIT) return pinned(c, seg, fd, path, err);
    if (r < 0) return err->code;

    int lfd = lockDigest(c, seg->sha256, err);
    if (lfd < 0) return err->code;
    /* another process may have fetched (or replaced a bad copy) meanwhile */
    r = look(c, seg, 1, &fd, err);
    if (r == LOOK_BAD) {
        unlinkat(c->dirfd, seg->sha256, 0); /* only a digest lock holder writes it */
        r = LOOK_MISS;
    }
    int rc = 0;
    if (r < 0) rc = err->code;
    else if (r == LOOK_MISS) rc = fetch(c, st, seg, &fd, err);
    unlockDigest(c, seg->sha256, lfd);
    return rc ? rc : pinned(c, seg, fd, path, err);
}

void segcacheSetMaxAge(segcache *c, int64_t seconds) {
    c->max_age_s = seconds > 0 ? seconds : 0;
    if (!c->max_age_s) return;
    char lockname[PATH_MAX];
    lakeError ignored = {0};
    snprintf(lockname, sizeof lockname, "%s/.lock", c->dir);
    int lockfd = lockPath(lockname, LOCK_EX, &ignored);
    if (lockfd < 0) return;
    evictLocked(c, 0);
    close(lockfd);
}

static int digestCmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int segcacheForget(const char *cache_dir, char **keep, size_t n, int64_t *removed, lakeError *err) {
    char dir[PATH_MAX], lockname[PATH_MAX + 8];
    *removed = 0;
    if (n) qsort(keep, n, sizeof *keep, digestCmp);
    snprintf(dir, sizeof dir, "%s/segments", cache_dir);
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : errSetErrno(err, errCodeForErrno(errno), errno, "%s", dir);
    snprintf(lockname, sizeof lockname, "%s/.lock", dir);
    int lockfd = lockPath(lockname, LOCK_EX, err), rc = 0;
    if (lockfd < 0) {
        closedir(d);
        return err->code;
    }
    for (struct dirent *de; (de = readdir(d));) {
        const char *name = de->d_name;
        if (strlen(name) != SHA256_HEX_LEN || !sha256IsHex(name) ||
            (n && bsearch(&name, keep, n, sizeof *keep, digestCmp)))
            continue;
        /* pinned or not: a process reading it keeps its descriptor */
        if (unlinkat(dirfd(d), name, 0) == 0) (*removed)++;
        else if (errno != ENOENT) rc = errSetErrno(err, errCodeForErrno(errno), errno, "%s/%s", dir, name);
    }
    close(lockfd);
    closedir(d);
    return rc;
}
