/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive.c - lake-get --archive: a pax tar stream written by libarchive.
 *
 * libarchive does every byte of tar; this file chooses the entries (names,
 * sizes, times), feeds them from the object's reader, and makes sure that a stream
 * that fails cannot pass for a complete archive.
 */
#include "archive.h"

#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/archive.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/rfc3339.h"

#include "names.h"

/* --- the stream ------------------------------------------------------------ */

struct tarOut {
    struct archive *a;
    int fd;
    int held;              /* last holds the last byte given to us, unwritten */
    unsigned char last;
    int werrno;            /* errno of a failed write to fd, 0 if none */
    int aborted;           /* tarAbort: swallow whatever libarchive writes */
    nameSet names;
};

/* libarchive's write callback.  Blocking is off (bytes_per_block 0), so
 * this sees every byte as soon as libarchive produces it; it writes all but
 * the last, which waits for the next call or tarClose. */
static la_ssize_t tarWrite(struct archive *a, void *ctx, const void *buf, size_t len) {
    tarOut *t = ctx;
    if (len == 0 || t->aborted) return (la_ssize_t)len;
    if ((t->held && writeAll(t->fd, &t->last, 1) < 0) ||
        (len > 1 && writeAll(t->fd, buf, len - 1) < 0)) {
        t->werrno = errno;
        archive_set_error(a, errno, "write");
        return -1;
    }
    t->last = ((const unsigned char *)buf)[len - 1];
    t->held = 1;
    return (la_ssize_t)len;
}

/* The error of a failed libarchive call: a failed write to the descriptor
 * names stdout; anything else is libarchive's message. */
static int tarError(tarOut *t, lakeError *err) {
    if (t->werrno) return errSetErrno(err, LAKE_EFAIL, t->werrno, "stdout");
    return errSet(err, LAKE_EFAIL, "tar: %s",
                  archive_error_string(t->a) ? archive_error_string(t->a) : "failed");
}

int tarOpen(tarOut **out, int fd, lakeError *err) {
    tarOut *t = calloc(1, sizeof *t);
    *out = NULL;
    if (!t || !(t->a = archive_write_new())) {
        free(t);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "tar");
    }
    t->fd = fd;
    /* FILE names are UTF-8 (JSON); with a UTF-8 LC_CTYPE libarchive takes
     * them as they are and writes them as pax "path" records.  Without one
     * it would convert them from ASCII and fail on the first non-ASCII
     * name (libarchive 3.6 even crashes on a UTF-8-only path name). */
    if (!setlocale(LC_CTYPE, "C.UTF-8")) setlocale(LC_CTYPE, "");
    if (archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
        archive_write_set_bytes_per_block(t->a, 0) != ARCHIVE_OK ||
        archive_write_open(t->a, t, NULL, tarWrite, NULL) != ARCHIVE_OK) {
        int rc = tarError(t, err);
        tarAbort(t);
        return rc;
    }
    *out = t;
    return 0;
}

int tarClose(tarOut *t, lakeError *err) {
    int rc = 0;
    if (archive_write_close(t->a) != ARCHIVE_OK) rc = tarError(t, err);
    else if (t->held && writeAll(t->fd, &t->last, 1) < 0)
        rc = errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    t->held = 0;
    archive_write_free(t->a);
    nameSetFree(&t->names);
    free(t);
    return rc;
}

void tarAbort(tarOut *t) {
    if (!t) return;
    /* close, so libarchive frees all it holds (archive_write_fail would
     * skip its output filter's close, and leak it), but with the write
     * callback swallowing the end-of-archive blocks and the held byte */
    t->aborted = 1;
    archive_write_close(t->a);
    archive_write_free(t->a);
    nameSetFree(&t->names);
    free(t);
}

/* --- one entry ------------------------------------------------------------- */

/* The last component of fv's key (its identifier). */
static const char *keyBase(const fileValue *fv) {
    const char *slash = strrchr(fv->location, '/');
    return slash ? slash + 1 : fv->location;
}

/* The entry name of fv before uniqueness: its FILE name made safe
 * (fileNameSafe), else its key's last component; a warning whenever the
 * name written is not the name given (a dropped "./" too: the reader of
 * the stream sees another name).  Caller frees. */
static char *safeName(const fileValue *fv) {
    const char *src = fv->name && *fv->name ? fv->name : NULL;
    char *out = src ? malloc(strlen(src) + 1) : NULL;
    if (src && !out) return NULL;
    int changed = src ? fileNameSafe(src, out, strlen(src) + 1) : -1;
    if (changed < 0) {
        free(out);
        out = strdup(keyBase(fv));
    }
    if (out && src && strcmp(out, src) != 0) logWarn("%s: unsafe name in the archive; writing %s", src, out);
    return out;
}

/* Feeds one entry's bytes from the copy into libarchive, counting them
 * against the size its header states. */
typedef struct entryFeed {
    tarOut *t;
    int64_t size, fed;
    int over;       /* the object had more bytes than its header states */
    int archfail;   /* libarchive failed */
} entryFeed;

static int feedWrite(void *ctx, const void *buf, size_t len) {
    entryFeed *f = ctx;
    const char *p = buf;
    if ((int64_t)len > f->size - f->fed) {
        f->over = 1;
        errno = EFBIG;
        return -1;
    }
    while (len > 0) {
        la_ssize_t n = archive_write_data(f->t->a, p, len);
        if (n <= 0) {
            f->archfail = 1;
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        f->fed += n;
    }
    return 0;
}

int tarAdd(tarOut *t, const fileValue *fv, tarCopyFn copy, void *ctx, lakeError *err) {
    int rc;
    time_t mtime;
    long long secs;
    char *name = NULL;
    struct archive_entry *e = NULL;
    if (fv->size < 0)
        return errSet(err, LAKE_EDATA,
                      "%s: a bare location has no size; --archive needs a FILE value",
                      fv->location);
    if (!fv->last_modified) mtime = time(NULL);
    else if (rfc3339Parse(fv->last_modified, &secs, NULL, NULL) == 0)
        mtime = (time_t)secs;
    else
        return errSet(err, LAKE_EDATA, "%s: last_modified is not an RFC 3339 time: %s",
                      fv->location, fv->last_modified);
    if (!(name = safeName(fv)) || !(name = nameUnique(&t->names, name, "in the archive")) ||
        !(e = archive_entry_new())) {
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "tar");
        goto out;
    }
    archive_entry_copy_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, fv->size);
    archive_entry_set_mtime(e, mtime, 0);
    if (archive_write_header(t->a, e) < ARCHIVE_WARN) {
        rc = tarError(t, err);
        goto out;
    }
    entryFeed f = {t, fv->size, 0, 0, 0};
    lakeWriter w = {feedWrite, &f, "stdout"};
    rc = copy(ctx, &w, err);
    if (f.over)
        rc = errSet(err, LAKE_EDATA, "%s: more than the stated %lld bytes in the stage",
                    fv->location, (long long)fv->size);
    else if (f.archfail)
        rc = tarError(t, err);
    else if (!rc && f.fed != fv->size)
        rc = errSet(err, LAKE_EDATA, "%s: %lld bytes in the stage, not %lld", fv->location,
                    (long long)f.fed, (long long)fv->size);
    if (!rc && archive_write_finish_entry(t->a) != ARCHIVE_OK) rc = tarError(t, err);
out:
    archive_entry_free(e);
    free(name);
    return rc;
}
