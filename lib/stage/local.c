/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * local.c - the file:// stage backend.
 *
 * Objects live under the stage root as files/YYYY/MM/<id>, or <key_dir>/<id>
 * for stagePutInto.  A put writes an
 * unnamed (or ".tmp-") file in the destination directory, fsyncs it, links
 * it under its final name and fsyncs the directory (core/fsutil); an input
 * larger than its buffer is hashed and written on two threads (PUT_CHUNK).  The
 * digest is also recorded in the user.lake.sha256 extended attribute where
 * the filesystem allows, so a bare location can still be verified.
 *
 * Containment is decided lexically on the percent-decoded path (no empty,
 * "." or ".." component; under the root), then enforced at open time by
 * walking from the root one component at a time with O_NOFOLLOW, so no
 * symlink inside the stage can lead a read outside it.
 *
 * For gc, a listing walks the directories below the root the same way (no
 * symlink followed or listed) and reports ".tmp-<pid>-<id>" files, which only an
 * interrupted put on a filesystem without O_TMPFILE leaves, as partial.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/id.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/sha256.h"
#include "core/writering.h"
#include "stage/backend.h"

#define XATTR_SHA256 "user.lake.sha256"
/* Start writeback every this many bytes so the final fsync is short and
 * dirty pages do not pile up. */
#define WRITEBACK_EVERY (8 * 1024 * 1024)
/* A put's bytes move through one ring of STAGE_BUF_SIZE bytes, read and
 * hashed a chunk at a time by the calling thread while a second thread
 * writes the chunks before (core/writering.h): a put takes the longer of
 * hashing and writing, not their sum. */
#define PUT_CHUNK (STAGE_BUF_SIZE / 4)

typedef struct localStage {
    stage base;
    char *root; /* absolute, normalised, no trailing slash */
} localStage;

/* True when p is absolute and its components are clean (stageCleanRelative). */
static int cleanPath(const char *p) {
    return *p == '/' && stageCleanRelative(p + 1);
}

/* "file://" + the percent-encoded path; caller frees. */
static char *fileUrl(const char *path) {
    char *enc = stagePercentEncode(path), *url = NULL;
    if (enc && asprintf(&url, "file://%s", enc) < 0) url = NULL;
    free(enc);
    return url;
}

/* The decoded absolute path of a file:// URL, or NULL. */
static char *fileUrlPath(const char *url) {
    if (strncmp(url, "file://", 7) != 0 || url[7] != '/') return NULL;
    return stagePercentDecode(url + 7);
}

static char *localRelative(const stage *s, const char *location) {
    const localStage *ls = (const localStage *)s;
    char *path = fileUrlPath(location);
    if (!path) return NULL;
    size_t rl = strlen(ls->root);
    char *rel = NULL;
    if (cleanPath(path) && strncmp(path, ls->root, rl) == 0 && path[rl] == '/' &&
        path[rl + 1])
        rel = strdup(path + rl + 1);
    free(path);
    return rel;
}

/* Open the directory rel[0..len) ("a/b", or "" for the root) below the
 * root, one component at a time without following symlinks.  -1 with
 * errno set: ELOOP when a component is a symlink, ENAMETOOLONG for a
 * component longer than NAME_MAX. */
static int openDirBeneath(const localStage *ls, const char *rel, size_t len) {
    int dfd = open(ls->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const char *c = rel, *end = rel + len;
    while (dfd >= 0 && c < end) {
        size_t n = strcspn(c, "/");
        if (c + n > end) n = (size_t)(end - c);
        char comp[NAME_MAX + 1];
        if (n > NAME_MAX) {
            close(dfd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(comp, c, n);
        comp[n] = '\0';
        int fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        struct stat lst;
        /* O_DIRECTORY|O_NOFOLLOW reports a symlinked directory as ENOTDIR */
        if (fd < 0 && e == ENOTDIR && fstatat(dfd, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(lst.st_mode))
            e = ELOOP;
        close(dfd);
        errno = e;
        dfd = fd;
        c += n + (c[n] == '/');
    }
    return dfd;
}

/* Open the object at rel below the root without following any symlink.
 * Returns an fd or -1 with err set (66 missing, 65 symlink or not a file). */
static int openBeneath(const localStage *ls, const char *location, const char *rel,
                       lakeError *err) {
    const char *slash = strrchr(rel, '/'), *name = slash ? slash + 1 : rel;
    int fd = -1, e = ENAMETOOLONG;
    if (strlen(name) <= NAME_MAX) {
        int dfd = openDirBeneath(ls, rel, slash ? (size_t)(slash - rel) : 0);
        fd = dfd < 0 ? -1 : openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        e = errno;
        if (dfd >= 0) close(dfd);
    }
    if (fd < 0) {
        if (e == ENAMETOOLONG)
            errSet(err, LAKE_EDATA, "%s: outside the managed stage", location);
        else if (e == ELOOP)
            errSet(err, LAKE_EDATA, "%s: outside the managed stage (symbolic link)", location);
        else if (e == ENOTDIR)
            errSet(err, LAKE_EDATA, "%s: not a stage object", location);
        else
            errSetErrno(err, errCodeForErrno(e), e, "%s", location);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errSet(err, LAKE_EDATA, "%s: not a stage object", location);
        return -1;
    }
    return fd;
}

/* The modes of what a put creates below the root, from the root's own:
 * directories as the root, objects as the root without its x bits, each
 * narrowed by the umask (never widened).  A root the stage creates is
 * 0700, so a stage it makes (the embedded lake's) is private -- objects
 * 0600 in 0700 directories whatever the umask -- and one an operator made
 * shared (2775, say) stays so. */
static int localModes(const localStage *ls, mode_t *dir, mode_t *file, lakeError *err) {
    struct stat st;
    if (stat(ls->root, &st) < 0) { /* (mkdirs says why it cannot be made) */
        if (mkdirs(ls->root, 0700, err)) return err->code;
        if (stat(ls->root, &st) < 0) return errSetErrno(err, errCodeForErrno(errno), errno, "%s", ls->root);
    }
    *dir = st.st_mode & 0777;
    *file = st.st_mode & 0666;
    return 0;
}

static int localPut(stage *s, const char *key_dir, lakeReader *r, const stagePutOptions *opt,
                    fileValue *out, lakeError *err) {
    localStage *ls = (localStage *)s;
    atomicFile af = {.fd = -1, .dirfd = -1};
    sha256Ctx *h = sha256New();
    writeRing *ring = NULL;
    char *ctype = NULL;
    int rc = 0;
    int64_t total = 0;
    memset(out, 0, sizeof *out);
    out->size = -1;
    if (!h) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put"); goto out; }

    char id[ID_LEN + 1], keydir[STAGE_KEY_DIR_BUF], dir[PATH_MAX];
    if (idNew(id, err)) { rc = err->code; goto out; }
    long long t0 = (long long)time(NULL);
    stagePutKeyDir(key_dir, t0, keydir);
    snprintf(dir, sizeof dir, "%s/%s", ls->root, keydir);
    mode_t dmode = 0700, fmode = 0600;
    if ((rc = localModes(ls, &dmode, &fmode, err))) goto out;
    if ((rc = mkdirs(dir, dmode, err))) goto out;
    if ((rc = atomicOpen(&af, dir, id, 0, fmode, err))) goto out;
    af.nosync = opt->defer_sync;
    if (!(ring = writeRingNew(af.fd, STAGE_BUF_SIZE, PUT_CHUNK, WRITEBACK_EVERY))) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
        goto out;
    }

    /* the first read may fill the whole ring: the type is detected from
     * up to STAGE_BUF_SIZE bytes */
    for (size_t want = STAGE_BUF_SIZE;; want = PUT_CHUNK) {
        size_t room;
        char *buf = writeRingSpace(ring, want, &room);
        if (!buf) { rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", dir); goto out; }
        ssize_t n = r->read(r->ctx, buf, room);
        if (stageStopped(opt)) { rc = stageInterrupted(r, err); goto out; }
        if (n < 0) { rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", r->what); goto out; }
        if (n == 0) break;
        if (total == 0 && !opt->content_type && (rc = contentTypeDetect(buf, (size_t)n, &ctype, err))) goto out;
        sha256Update(h, buf, (size_t)n);
        writeRingQueue(ring, (size_t)n);
        total += n;
        if ((rc = stageOverStated(r, opt, total, err))) goto out;
        if (opt->progress) progressAdd(opt->progress, n);
    }
    if (!ctype && !opt->content_type && (rc = contentTypeDetect("", 0, &ctype, err))) goto out; /* empty input */
    if (writeRingFinish(ring) < 0) { rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", dir); goto out; }
    sha256FinalHex(h, out->sha256);
    if ((rc = stageCheckStated(r, opt, total, out->sha256, err))) goto out;
    /* Best effort: not every filesystem keeps user xattrs. */
    (void)fsetxattr(af.fd, XATTR_SHA256, out->sha256, SHA256_HEX_LEN, 0);
    if ((rc = atomicCommit(&af, err))) goto out;

    char path[PATH_MAX], ts[32];
    snprintf(path, sizeof path, "%s/%s%s", ls->root, keydir, id);
    rfc3339Now(ts);
    out->location = fileUrl(path);
    out->size = total;
    out->content_type = ctype ? ctype : strdup(opt->content_type);
    ctype = NULL;
    out->name = opt->name ? strdup(opt->name) : NULL;
    out->last_modified = strdup(ts);
    if (!out->location || !out->content_type || !out->last_modified ||
        (opt->name && !out->name))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "put");
    if (traceEnabled()) traceLine("stage", "PUT %s -> %lld bytes", out->location, (long long)total);
out:
    if (rc) fileValueFree(out);
    writeRingFree(ring); /* the writer stops before its file is closed */
    atomicAbort(&af);
    sha256Free(h);
    free(ctype);
    return rc;
}

/* A local object read, pulled: localGet pushes it through a buffer of
 * its own, lake_open_file's reader (liblake) into the program's. */
typedef struct localReader {
    stageReader base;
    int fd;
    sha256Ctx *h; /* NULL: not verified */
    char *location;
    char want[SHA256_HEX_LEN + 1];
    int done;
} localReader;

static void localReaderClose(stageReader *base) {
    localReader *rd = (localReader *)base;
    sha256Free(rd->h);
    if (rd->fd >= 0) close(rd->fd);
    free(rd->location);
    free(rd);
}

static ssize_t localReaderRead(stageReader *base, void *buf, size_t len, lakeError *err) {
    localReader *rd = (localReader *)base;
    if (rd->done) return 0;
    ssize_t n = readFull(rd->fd, buf, len);
    if (n < 0) return errSetErrno(err, LAKE_EFAIL, errno, "%s", rd->location), -1;
    if (n > 0) {
        if (rd->h) sha256Update(rd->h, buf, (size_t)n);
        return n;
    }
    rd->done = 1;
    if (rd->h) {
        char got[SHA256_HEX_LEN + 1];
        sha256FinalHex(rd->h, got);
        if (strcmp(got, rd->want) != 0)
            return errSet(err, LAKE_EDATA, "%s: SHA-256 mismatch (expected %s, got %s)", rd->location,
                          rd->want, got),
                   -1;
    }
    return 0;
}

static int localOpenRead(stage *s, const fileValue *fv, int verify, stageReader **out,
                         lakeError *err) {
    localStage *ls = (localStage *)s;
    char *rel = localRelative(s, fv->location);
    if (!rel) return errSet(err, LAKE_EDATA, "%s: outside the managed stage", fv->location);
    int fd = openBeneath(ls, fv->location, rel, err);
    free(rel);
    if (fd < 0) return err->code;
    traceLine("stage", "GET %s", fv->location);
    localReader *rd = calloc(1, sizeof *rd);
    if (!rd || !(rd->location = strdup(fv->location))) {
        free(rd);
        close(fd);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "get");
    }
    rd->base = (stageReader){localReaderRead, localReaderClose};
    rd->fd = fd;
    snprintf(rd->want, sizeof rd->want, "%s", fv->sha256);
    if (!rd->want[0]) { /* a bare location: the digest recorded at put, if any */
        ssize_t x = fgetxattr(fd, XATTR_SHA256, rd->want, SHA256_HEX_LEN);
        rd->want[x == SHA256_HEX_LEN ? SHA256_HEX_LEN : 0] = '\0';
    }
    if (verify && !rd->want[0]) logWarn("%s: no recorded SHA-256; not verified", fv->location);
    int rc = 0;
    struct stat st;
    if (verify && rd->want[0] && !(rd->h = sha256New()))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "get");
    else if (fstat(fd, &st) < 0)
        rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", fv->location);
    else if (verify && fv->size >= 0 && st.st_size != fv->size)
        rc = errSet(err, LAKE_EDATA, "%s: %lld bytes in the stage, not %lld", fv->location,
                    (long long)st.st_size, (long long)fv->size);
    if (rc) {
        localReaderClose(&rd->base);
        return rc;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    *out = &rd->base;
    return 0;
}

static int localGet(stage *s, const fileValue *fv, lakeWriter *w, int verify,
                    progress *prog, lakeError *err) {
    stageReader *rd;
    int rc = localOpenRead(s, fv, verify, &rd, err);
    if (rc) return rc;
    char *buf = malloc(STAGE_BUF_SIZE);
    if (!buf) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "get");
    while (!rc) {
        ssize_t n = localReaderRead(rd, buf, STAGE_BUF_SIZE, err);
        if (n < 0) rc = err->code;
        if (n <= 0) break;
        if (w->write(w->ctx, buf, (size_t)n) < 0) rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", w->what);
        else if (prog) progressAdd(prog, n);
    }
    free(buf);
    localReaderClose(rd);
    return rc;
}

/* --- gc: listing and deleting --------------------------------------------- */

/* The deepest directory nesting a listing enters; lake makes three. */
#define LIST_DEPTH_MAX 32

typedef struct listWalk {
    localStage *ls;
    stageListFn fn;
    void *ctx;
    char key[PATH_MAX];
} listWalk;

/* List the directory dfd (closed here), whose key prefix is w->key[0..len). */
static int listDir(listWalk *w, int dfd, size_t len, int depth, lakeError *err) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return errSetErrno(err, LAKE_EFAIL, e, "%s/%.*s", w->ls->root, (int)len, w->key);
    }
    int rc = 0;
    struct dirent *de;
    errno = 0;
    while (!rc && (de = readdir(d))) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT) continue; /* removed meanwhile */
            rc = errSetErrno(err, LAKE_EFAIL, errno, "%s/%.*s%s", w->ls->root, (int)len, w->key, name);
            break;
        }
        size_t nl = strlen(name);
        if (len + nl + 2 > sizeof w->key) continue; /* no put makes such a key */
        memcpy(w->key + len, name, nl + 1);
        if (S_ISDIR(st.st_mode)) {
            if (depth >= LIST_DEPTH_MAX) continue;
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) continue;
                rc = errSetErrno(err, LAKE_EFAIL, errno, "%s/%s", w->ls->root, w->key);
                break;
            }
            w->key[len + nl] = '/';
            w->key[len + nl + 1] = '\0';
            rc = listDir(w, sub, len + nl + 1, depth + 1, err);
        } else if (S_ISREG(st.st_mode)) {
            char *path = NULL, *loc = NULL;
            if (asprintf(&path, "%s/%s", w->ls->root, w->key) < 0) path = NULL;
            if (path) loc = fileUrl(path);
            free(path);
            if (!loc) { rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "list"); break; }
            stageObject o = {w->key, loc, (int64_t)st.st_size, (long long)st.st_mtime,
                             strncmp(name, ".tmp-", 5) == 0};
            rc = w->fn(w->ctx, &o, err);
            free(loc);
        }
        errno = 0;
    }
    if (!rc && errno) rc = errSetErrno(err, LAKE_EFAIL, errno, "%s/%.*s", w->ls->root, (int)len, w->key);
    closedir(d);
    return rc;
}

static int localList(stage *s, const char *prefix, stageListFn fn, void *ctx, lakeError *err) {
    localStage *ls = (localStage *)s;
    listWalk *w = calloc(1, sizeof *w);
    if (!w) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "list");
    w->ls = ls;
    w->fn = fn;
    w->ctx = ctx;
    size_t len = strlen(prefix); /* checked by stageList: clean, ends in '/', or "" */
    int rc = 0, dfd = openDirBeneath(ls, prefix, len ? len - 1 : 0);
    if (dfd < 0) {
        /* nothing there, or a symlink where a directory should be: no objects */
        if (errno != ENOENT && errno != ELOOP && errno != ENOTDIR)
            rc = errSetErrno(err, LAKE_EFAIL, errno, "%s/%s", ls->root, prefix);
    } else {
        memcpy(w->key, prefix, len + 1);
        traceLine("stage", "LIST %s/%s", s->url, prefix);
        rc = listDir(w, dfd, len, 1, err);
    }
    free(w);
    return rc;
}

static int localDelete(stage *s, const char *location, lakeError *err) {
    localStage *ls = (localStage *)s;
    char *rel = localRelative(s, location);
    if (!rel) return errSet(err, LAKE_EDATA, "%s: outside the managed stage", location);
    const char *slash = strrchr(rel, '/'), *name = slash ? slash + 1 : rel;
    int rc = 0, dfd = openDirBeneath(ls, rel, slash ? (size_t)(slash - rel) : 0);
    struct stat st;
    if (dfd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            rc = errSet(err, LAKE_EDATA, "%s: outside the managed stage (symbolic link)", location);
        else if (errno != ENOENT)
            rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", location);
    } else if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT) rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", location);
    } else if (!S_ISREG(st.st_mode)) {
        rc = errSet(err, LAKE_EDATA, "%s: not a stage object", location);
    } else if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
        rc = errSetErrno(err, errCodeForErrno(errno), errno, "%s", location);
    } else {
        traceLine("stage", "DELETE %s", location);
    }
    if (dfd >= 0) close(dfd);
    free(rel);
    return rc;
}

static void localClose(stage *s) {
    localStage *ls = (localStage *)s;
    free(ls->root);
    free(ls->base.url);
    free(ls);
}

/* syncfs(2) of the stage's filesystem: the deferred puts' data, inodes
 * and directory entries, all at once. */
static int localSync(stage *s, lakeError *err) {
    localStage *ls = (localStage *)s;
    int fd = open(ls->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errSetErrno(err, LAKE_EFAIL, errno, "%s", ls->root);
    int rc = syncfs(fd) < 0 ? errSetErrno(err, LAKE_EFAIL, errno, "%s: syncfs", ls->root) : 0;
    close(fd);
    return rc;
}

static const stageOps localOps = {.put = localPut,
                                  .get = localGet,
                                  .relative = localRelative,
                                  .close = localClose,
                                  .list = localList,
                                  .del = localDelete,
                                  .sync = localSync,
                                  .type_in_value = 1,
                                  .open_read = localOpenRead};

int localStageOpen(const char *url, stage **out, lakeError *err) {
    char *path = fileUrlPath(url);
    if (!path) return errSet(err, LAKE_ECONFIG, "%s: stage must be file:///abs/dir", url);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
    if (n <= 1 || !cleanPath(path)) {
        free(path);
        return errSet(err, LAKE_ECONFIG,
                      "%s: stage must be an absolute directory without '.' or '..'", url);
    }
    localStage *ls = calloc(1, sizeof *ls);
    if (!ls || !(ls->base.url = fileUrl(path))) {
        free(ls);
        free(path);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    ls->base.ops = &localOps;
    ls->root = path;
    *out = &ls->base;
    return 0;
}
