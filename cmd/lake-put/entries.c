/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * entries.c - lake-put --archive: read an archive with libarchive and hand
 * out its regular entries one at a time (see entries.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "core/archive.h"
#include "core/bytesize.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "entries.h"

/* Bytes asked of the input per read(2). */
#define IN_BLOCK (64 * 1024)

/* The bounds of lake-put(1) "Limits of archive reading": layers of compression, and the
 * resident memory libarchive's steps (opening, reading a header, a block
 * of data) may add, net, over a whole archive. */
#define ARCHIVE_FILTERS_MAX 3
#define ARCHIVE_MEM_MAX (256LL << 20)
/* libarchive's errno for "Unrecognized archive format" (its private
 * ARCHIVE_ERRNO_FILE_FORMAT). */
#ifdef EFTYPE
#define FILE_FORMAT_ERRNO EFTYPE
#else
#define FILE_FORMAT_ERRNO EILSEQ
#endif
/* A libarchive step that computes this long (CPU time of the reading
 * thread) without asking for input or handing out data is stuck (a
 * format's loop, or a bomb in data it skips). */
#define STUCK_CPU_NS (10LL * 1000 * 1000 * 1000)
/* A stop signal the step does not notice within this long takes the
 * immediate way (core/interrupt.h). */
#define STOP_GRACE_NS (1000LL * 1000 * 1000)
/* How often the watchdog looks. */
#define WATCH_TICK_NS (10 * 1000 * 1000L)

struct archiveIn {
    struct archive *a;
    int fd;
    off_t size; /* a regular file's size, for onSkip */
    const char *what;
    const volatile sig_atomic_t *stop;
    int interrupted; /* a read gave up: a stop signal, or interruptWake */
    int io_errno;    /* a read(2) of the input failed with this */
    int data_failed; /* the current entry's data could not be read */
    lakeError data_err;
    int64_t max_skipped, skipped; /* data of skipped entries: bound, so far */
    /* the current entry: its declared size (-1: none), the bytes handed
     * out, and what is left of libarchive's last block, which starts at
     * blk_off (past pos: a hole before it); data_eof once libarchive said
     * the data ends (at blk_off) */
    int64_t declared, pos, blk_off;
    const char *blk;
    size_t blk_len;
    int data_eof;
    /* the watchdog (watchMain): while a libarchive step runs (busy), the
     * memory it adds, the CPU time it spends without progress and a
     * pending stop signal are watched */
    pthread_t watch;
    int watching, statm;  /* the thread runs; /proc/self/statm or -1 */
    pthread_mutex_t mu;   /* with cv: quit */
    pthread_cond_t cv;
    int quit;
    atomic_int busy;
    atomic_llong rss0;    /* resident bytes when the step began */
    atomic_llong charged; /* net resident bytes the steps before added */
    atomic_llong progress; /* input asked for, or data handed out: a count */
    clockid_t cpu;         /* the reading thread's CPU clock */
    int has_cpu;
    char path[PATH_MAX];           /* the current entry's safe name */
    char label[PATH_MAX + 256];    /* "what: path", the entry's reader's what */
    char buf[IN_BLOCK];
};

static int stopped(const archiveIn *in) {
    return in->stop && *in->stop;
}

/* libarchive's read callback: one read(2) (core/interrupt.h), which gives
 * up on a stop signal (the archive fails and the put cleans up) or when a
 * part of the put failed beside it (interruptWake: the put reports the
 * part's error). */
static la_ssize_t onRead(struct archive *a, void *ctx, const void **buf) {
    archiveIn *in = ctx;
    *buf = in->buf;
    atomic_fetch_add(&in->progress, 1);
    ssize_t n = interruptReadSome(in->fd, in->buf, sizeof in->buf);
    if (n >= 0) return n;
    if (errno == EINTR || errno == ECANCELED) {
        in->interrupted = 1;
        archive_set_error(a, errno, errno == EINTR ? "interrupted" : "cancelled");
        return -1;
    }
    in->io_errno = errno;
    archive_set_error(a, errno, "%s", strerror(errno));
    return -1;
}

/* Regular files only: skip and seek with lseek (a zip's central directory,
 * a 7z header at the end).  A skip is never taken past the end of the
 * file (lseek would allow it): 0 then lets libarchive read and discard,
 * and so find the archive cut short, as through a pipe (and as its own
 * file reader does). */
static la_int64_t onSkip(struct archive *a, void *ctx, la_int64_t request) {
    archiveIn *in = ctx;
    (void)a;
    atomic_fetch_add(&in->progress, 1);
    off_t at = lseek(in->fd, 0, SEEK_CUR);
    if (at < 0 || request < 0 || at > in->size || request > in->size - at) return 0;
    return lseek(in->fd, (off_t)request, SEEK_CUR) < 0 ? 0 : request;
}

static la_int64_t onSeek(struct archive *a, void *ctx, la_int64_t offset, int whence) {
    archiveIn *in = ctx;
    atomic_fetch_add(&in->progress, 1);
    off_t r = lseek(in->fd, (off_t)offset, whence);
    if (r < 0) {
        archive_set_error(a, errno, "%s", strerror(errno));
        return ARCHIVE_FATAL;
    }
    return (la_int64_t)r;
}

/* Resident bytes of the process, or -1. */
static long long rssNow(const archiveIn *in) {
    char buf[128];
    long long size, res;
    if (in->statm < 0) return -1;
    ssize_t n = pread(in->statm, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = '\0';
    if (sscanf(buf, "%lld %lld", &size, &res) != 2) return -1;
    return res * sysconf(_SC_PAGESIZE);
}

/* Around every libarchive call that may allocate: the watchdog measures
 * the memory it adds while it runs. */
static void stepBegin(archiveIn *in) {
    atomic_store(&in->rss0, rssNow(in));
    atomic_store(&in->busy, 1);
}

static void stepEnd(archiveIn *in) {
    atomic_store(&in->busy, 0);
    atomic_fetch_add(&in->progress, 1);
    long long r0 = atomic_load(&in->rss0), r = rssNow(in);
    if (r0 >= 0 && r >= 0) atomic_fetch_add(&in->charged, r - r0);
}

static long long clockNs(clockid_t c) {
    struct timespec t;
    if (clock_gettime(c, &t) != 0) return -1;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The watchdog.  A libarchive step cannot be made to return, so from here,
 * while one runs: past ARCHIVE_MEM_MAX of memory, or STUCK_CPU_NS of CPU
 * time without progress, the process ends with 65 (cleaning up what a
 * signal would); a stop signal still pending after STOP_GRACE_NS takes the
 * immediate way. */
static void *watchMain(void *arg) {
    archiveIn *in = arg;
    long long seen = -1, cpu0 = 0, stop0 = -1;
    pthread_mutex_lock(&in->mu);
    while (!in->quit) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += WATCH_TICK_NS;
        if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&in->cv, &in->mu, &t);
        if (in->quit) break;
        long long now = clockNs(CLOCK_MONOTONIC);
        if (!atomic_load(&in->busy)) {
            stop0 = -1;
            continue;
        }
        if (stopped(in)) {
            if (stop0 < 0) stop0 = now;
            else if (now - stop0 > STOP_GRACE_NS) interruptNow();
        }
        long long r0 = atomic_load(&in->rss0), r = rssNow(in);
        if (r0 >= 0 && r >= 0 && atomic_load(&in->charged) + r - r0 > ARCHIVE_MEM_MAX)
            interruptFatal(LAKE_EDATA, "%s: reading the archive takes more than %lld MiB of memory "
                           "(a decompression bomb?): refused", in->what, ARCHIVE_MEM_MAX >> 20);
        long long p = atomic_load(&in->progress), cpu = in->has_cpu ? clockNs(in->cpu) : -1;
        if (p != seen || cpu < 0) {
            seen = p;
            cpu0 = cpu;
        } else if (cpu - cpu0 > STUCK_CPU_NS) {
            interruptFatal(LAKE_EDATA, "%s: reading the archive made no progress in %lld s of CPU time "
                           "(a looping archive, or a bomb in data skipped?): refused", in->what,
                           STUCK_CPU_NS / 1000000000LL);
        }
    }
    pthread_mutex_unlock(&in->mu);
    return NULL;
}

/* Start the watchdog, with the stop signals left to the main thread. */
static int watchStart(archiveIn *in, lakeError *err) {
    sigset_t all, old;
    in->statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    in->has_cpu = pthread_getcpuclockid(pthread_self(), &in->cpu) == 0;
    pthread_mutex_init(&in->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&in->cv, &ca);
    pthread_condattr_destroy(&ca);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&in->watch, NULL, watchMain, in);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) return errSetErrno(err, LAKE_EFAIL, e, "%s: watchdog thread", in->what);
    in->watching = 1;
    return 0;
}

static void watchStop(archiveIn *in) {
    if (in->watching) {
        pthread_mutex_lock(&in->mu);
        in->quit = 1;
        pthread_cond_broadcast(&in->cv);
        pthread_mutex_unlock(&in->mu);
        pthread_join(in->watch, NULL);
    }
    if (in->statm >= 0) close(in->statm);
    pthread_cond_destroy(&in->cv);
    pthread_mutex_destroy(&in->mu);
}

static int unsupported(const archiveIn *in, lakeError *err) {
    return errSet(err, LAKE_EDATA, "%s: unsupported archive format (lake-put reads tar, cpio, zip and 7z, "
                  "plain or compressed)", in->what);
}

/* A 7z archive keeps its index at its end: libarchive reads it only by
 * seeking (lake-put(1)), so from a pipe it is 65 in these words, before
 * any entry is stored, rather than in libarchive's; else 0. */
static int sevenZipPiped(archiveIn *in, lakeError *err) {
    struct stat sb;
    if ((archive_format(in->a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_7ZIP ||
        (fstat(in->fd, &sb) == 0 && S_ISREG(sb.st_mode)))
        return 0;
    return errSet(err, LAKE_EDATA,
                  "%s: a 7z archive cannot be read from a pipe (it is read by seeking to its index, "
                  "at its end): name the file, or redirect standard input from it",
                  in->what);
}

/* The error of a failed libarchive call: interrupted (1), an input that
 * could not be read (1), an input in no format lake-put reads (65), else a
 * damaged archive (65) naming the entry when there is one. */
static int archiveFail(archiveIn *in, const char *entry, lakeError *err) {
    const char *sep = entry ? ": " : "", *ent = entry ? entry : "";
    if (in->interrupted || stopped(in))
        return errSet(err, LAKE_EFAIL, "%s%s%s: interrupted", in->what, sep, ent);
    if (in->io_errno) return errSetErrno(err, LAKE_EFAIL, in->io_errno, "%s", in->what);
    int rc = sevenZipPiped(in, err);
    if (rc) return rc;
    if (!entry && archive_format(in->a) == 0 && archive_errno(in->a) == FILE_FORMAT_ERRNO)
        return unsupported(in, err);
    const char *m = archive_error_string(in->a);
    return errSet(err, LAKE_EDATA, "%s%s%s: %s", in->what, sep, ent, m ? m : "damaged archive");
}

int archiveInOpen(int fd, const char *what, const volatile sig_atomic_t *stop, int64_t max_skipped,
                  archiveIn **out, lakeError *err) {
    struct stat sb;
    archiveIn *in = calloc(1, sizeof *in);
    *out = NULL;
    if (!in || !(in->a = archive_read_new())) {
        free(in);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", what);
    }
    in->fd = fd;
    in->what = what;
    in->stop = stop;
    in->max_skipped = max_skipped;
    int rc = watchStart(in, err);
    if (rc) {
        archiveInClose(in);
        return rc;
    }
    /* names reach us as UTF-8 (fileNameSafe checks it): libarchive
     * converts those an archive stores otherwise (7z's and zip's UTF-16 or
     * legacy names) through LC_CTYPE, so that must be a UTF-8 one */
    if (!setlocale(LC_CTYPE, "C.UTF-8")) setlocale(LC_CTYPE, "");
    /* only what lake-put(1) lists, and its tests read: no
     * archive_read_support_{format,filter}_all, whose every other reader
     * (xar, rar, iso9660, lha, cab, warc, ...) is more code fed hostile
     * bytes (libarchive spins on some), and mtree would read files of this
     * host.  tar first: registered after lha (libarchive 3.6), a tar cut
     * inside its last header reads as a clean end, not FATAL.  empty: an
     * empty input is an empty archive.  (Not static: the functions are
     * bound at run time, core/archive.h.) */
    int (*const formats[])(struct archive *) = {
        archive_read_support_format_tar, archive_read_support_format_cpio,
        archive_read_support_format_zip, archive_read_support_format_7zip,
        archive_read_support_format_empty,
        /* recognised only to be refused below: an ISO 9660 image starts
         * with 32 KiB of zeros, which would read as an empty tar */
        archive_read_support_format_iso9660,
    };
    int (*const filters[])(struct archive *) = {
        archive_read_support_filter_gzip, archive_read_support_filter_bzip2,
        archive_read_support_filter_xz,   archive_read_support_filter_zstd,
        archive_read_support_filter_lz4,  archive_read_support_filter_compress,
    };
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) filters[i](in->a);
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) formats[i](in->a);
    archive_read_set_callback_data(in->a, in);
    archive_read_set_read_callback(in->a, onRead);
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        in->size = sb.st_size;
        archive_read_set_skip_callback(in->a, onSkip);
        archive_read_set_seek_callback(in->a, onSeek);
    }
    stepBegin(in);
    rc = archive_read_open1(in->a) != ARCHIVE_OK ? archiveFail(in, NULL, err) : 0;
    stepEnd(in);
    /* libarchive stacks up to 25 decompressors; more than a few is a
     * bomb's way to multiply its ratio */
    int layers = rc ? 0 : archive_filter_count(in->a) - 1;
    if (layers > ARCHIVE_FILTERS_MAX)
        rc = errSet(err, LAKE_EDATA, "%s: %d layers of compression (at most %d): refused", what, layers,
                    ARCHIVE_FILTERS_MAX);
    if (rc) {
        archiveInClose(in);
        return rc;
    }
    *out = in;
    return 0;
}

/* The next block of the current entry's data (archive_read_data_block),
 * as a watched step. */
static int dataBlock(archiveIn *in, const void **b, size_t *n, la_int64_t *off) {
    stepBegin(in);
    int r = archive_read_data_block(in->a, b, n, off);
    stepEnd(in);
    return r;
}

/* The current entry's data cannot be stored as it is: 65, and the read
 * fails (archiveInDataError reports it). */
static ssize_t dataRefused(archiveIn *in, const char *why) {
    in->data_failed = 1;
    errSet(&in->data_err, LAKE_EDATA, "%s: %s: %s: refused", in->what, in->path, why);
    errno = EIO;
    return -1;
}

/* The entry's data, in full buffers (content detection looks at the first
 * one), from archive_read_data_block: no more than len bytes held here.
 * The holes of a sparse entry (the gaps before a block, and after the
 * last one up to where libarchive says the data ends: tar's real size)
 * are handed out as zeros, as tar x writes them; in the end the bytes
 * handed out must be the size the header declares, whatever the format,
 * so a short read never passes for a whole entry. */
static ssize_t entryRead(void *ctx, void *buf, size_t len) {
    archiveIn *in = ctx;
    size_t got = 0;
    while (got < len) {
        if (stopped(in)) {
            errno = EINTR;
            return -1;
        }
        if (in->blk_off > in->pos) { /* a hole */
            uint64_t hole = (uint64_t)(in->blk_off - in->pos);
            size_t k = hole < len - got ? (size_t)hole : len - got;
            memset((char *)buf + got, 0, k);
            got += k;
            in->pos += (int64_t)k;
            continue;
        }
        if (in->blk_len) {
            size_t k = in->blk_len < len - got ? in->blk_len : len - got;
            memcpy((char *)buf + got, in->blk, k);
            got += k;
            in->blk += k;
            in->blk_len -= k;
            in->pos += (int64_t)k;
            in->blk_off = in->pos;
            continue;
        }
        if (in->data_eof) break;
        const void *b;
        size_t n;
        la_int64_t off;
        int r = dataBlock(in, &b, &n, &off);
        if (r == ARCHIVE_EOF) {
            /* a trailing hole, never past the declared size */
            in->data_eof = 1;
            if (in->declared >= 0 && off > in->pos) in->blk_off = off < in->declared ? off : in->declared;
            continue;
        }
        if (r != ARCHIVE_OK) {
            in->data_failed = !(in->interrupted || stopped(in));
            archiveFail(in, in->path, &in->data_err);
            errno = in->interrupted ? EINTR : in->io_errno ? in->io_errno : EIO;
            return -1;
        }
        if (off < in->pos || (in->declared >= 0 && (off > in->declared || (uint64_t)(in->declared - off) < n)))
            return dataRefused(in, "data blocks out of order or past the size the header declares");
        in->blk = b;
        in->blk_len = n;
        in->blk_off = off;
    }
    if (!got && in->declared >= 0 && in->pos != in->declared) {
        char why[128];
        snprintf(why, sizeof why, "%lld bytes of data where the header declares %lld", (long long)in->pos,
                 (long long)in->declared);
        return dataRefused(in, why);
    }
    return (ssize_t)got;
}

/* Read and drop the data of an entry lake-put skips (name: as the archive
 * names it), counting it against max_skipped over the whole archive:
 * libarchive's own skip would decode it in one step, at no bound of
 * cost (its holes cost nothing and count nothing). */
static int skipData(archiveIn *in, const char *name, lakeError *err) {
    for (;;) {
        if (stopped(in)) return archiveFail(in, name, err);
        const void *b;
        size_t n;
        la_int64_t off;
        int r = dataBlock(in, &b, &n, &off);
        if (r == ARCHIVE_EOF) return 0;
        if (r != ARCHIVE_OK) return archiveFail(in, name, err);
        in->skipped += (int64_t)n;
        if (in->skipped > in->max_skipped) {
            char max[32];
            bytesFormat(in->max_skipped, max, sizeof max);
            return errSet(err, LAKE_EDATA, "%s: %s: more than %s of data in entries skipped (--max-skipped): refused",
                          in->what, name, max);
        }
    }
}

/* What a skipped entry is, for its warning. */
static const char *kindName(mode_t type) {
    switch (type) {
    case AE_IFLNK: return "a symbolic link";
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a fifo";
    case AE_IFSOCK: return "a socket";
    default: return "not a regular file";
    }
}

int archiveInNext(archiveIn *in, archiveEntryInfo *e, lakeError *err) {
    memset(e, 0, sizeof *e);
    in->data_failed = 0;
    for (;;) {
        struct archive_entry *ae;
        stepBegin(in);
        int r = archive_read_next_header(in->a, &ae);
        stepEnd(in);
        if (r == ARCHIVE_EOF) return 0;
        if (r == ARCHIVE_WARN) logWarn("%s: %s", in->what, archive_error_string(in->a));
        else if (r != ARCHIVE_OK) return archiveFail(in, NULL, err);
        /* (the format is known once a header was read) */
        if ((archive_format(in->a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ISO9660)
            return unsupported(in, err);
        int rc = sevenZipPiped(in, err);
        if (rc) return rc;
        const char *name = archive_entry_pathname_utf8(ae);
        if (!name) name = archive_entry_pathname(ae);
        if (!name) name = "";
        mode_t type = archive_entry_filetype(ae);
        const char *target = archive_entry_hardlink(ae);
        int changed = 0;
        /* (a directory is skipped silently: implied by the names below it) */
        if (target) logWarn("%s: %s: a hard link to %s, skipped", in->what, name, target);
        else if (type != AE_IFREG && type != AE_IFDIR)
            logWarn("%s: %s: %s, skipped", in->what, name, kindName(type));
        else if (type == AE_IFREG && (changed = fileNameSafe(name, in->path, sizeof in->path)) < 0)
            logWarn("%s: %s: no usable name, skipped", in->what, name);
        if (target || type != AE_IFREG || changed < 0) {
            if ((rc = skipData(in, name, err))) return rc;
            continue;
        }
        if (changed) logWarn("%s: %s: unsafe name, stored as %s", in->what, name, in->path);
        snprintf(in->label, sizeof in->label, "%s: %s", in->what, in->path);
        e->path = in->path;
        e->size = archive_entry_size_is_set(ae) ? (int64_t)archive_entry_size(ae) : -1;
        e->reader = (lakeReader){entryRead, in, in->label};
        in->declared = e->size;
        in->pos = in->blk_off = 0;
        in->blk_len = 0;
        in->data_eof = 0;
        return 0;
    }
}

int archiveInDataError(const archiveIn *in, lakeError *err) {
    if (!in->data_failed) return 0;
    *err = in->data_err;
    return err->code;
}

void archiveInClose(archiveIn *in) {
    if (!in) return;
    archive_read_free(in->a);
    watchStop(in); /* watchStart ran right after the allocation */
    free(in);
}
