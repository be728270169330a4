/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_core.c - unit tests of lib/core: ids, SHA-256, errors, atomic files,
 * the write ring, threads (core/thread.h).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/bytesize.h"
#include "core/config.h"
#include "core/duration.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "core/id.h"
#include "core/log.h"
#include "core/realtext.h"
#include "core/retry.h"
#include "core/rfc3339.h"
#include "core/sha256.h"
#include "core/thread.h"
#include "core/utf8.h"
#include "core/writering.h"
#include "stage/filevalue.h"
#include "tap.h"

static void testIds(void) {
    char a[ID_LEN + 1], b[ID_LEN + 1];
    lakeError err = {0};
    int fine = 1, ordered = 1;
    idNew(a, &err);
    for (int i = 0; i < 2000; i++) {
        if (idNew(b, &err)) fine = 0;
        if (strlen(b) != ID_LEN || strspn(b, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != ID_LEN) fine = 0;
        if (strncmp(a, b, 10) > 0) ordered = 0; /* time part never goes back */
        if (strcmp(a, b) == 0) fine = 0;
        memcpy(a, b, sizeof a);
    }
    ok(fine, "2000 ids: 26 Crockford characters each, all distinct");
    ok(ordered, "ids are ordered by their time prefix");
}

static void testSha256(void) {
    char hex[SHA256_HEX_LEN + 1];
    sha256Ctx *c = sha256New();
    sha256Update(c, "ab", 2);
    sha256Update(c, "c", 1);
    sha256FinalHex(c, hex);
    sha256Free(c);
    ok(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
       "streamed SHA-256 of \"abc\" matches FIPS 180-2");
    c = sha256New();
    sha256FinalHex(c, hex);
    sha256Free(c);
    ok(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
       "SHA-256 of nothing");
    ok(sha256IsHex(hex) && !sha256IsHex("abc") && !sha256IsHex(
           "g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
       "sha256IsHex accepts 64 hex digits only");
}

static void testErrors(void) {
    lakeError e = {0};
    int rc = errSet(&e, LAKE_EDATA, "bad %s", "thing");
    ok(rc == 65 && e.code == 65 && strcmp(e.msg, "bad thing") == 0, "errSet returns the code");
    errPrefix(&e, "stdin:%d", 3);
    ok(strcmp(e.msg, "stdin:3: bad thing") == 0, "errPrefix keeps the code and prefixes");
    rc = errSetErrno(&e, errCodeForErrno(2), 2, "/x");
    ok(rc == 66 && strstr(e.msg, "/x: ") == e.msg && strcmp(e.cause, "errno 2") == 0,
       "ENOENT maps to 66 with the cause kept apart");
    errSet(&e, LAKE_EFAIL, "line one\nline two");
    ok(strchr(e.msg, '\n') == NULL, "a message is always one line");
    errSet(&e, LAKE_EDATA, "%s: bad", "ab\xff\x9b" "31m\xc2\x9b" "31m\x1b[1m\x7f");
    errPrefix(&e, "stdin:%d", 1);
    ok(strcmp(e.msg, "stdin:1: ab\\xff\\x9b31m\\u009b31m\\x1b[1m\\x7f: bad") == 0,
       "a message folds bad UTF-8, C0, C1 and DEL, once (%s)", e.msg);
}

static void testAtomic(void) {
    char dir[] = "/tmp/lake-unit-XXXXXX";
    lakeError err = {0};
    if (!mkdtemp(dir)) { ok(0, "mkdtemp"); return; }
    char path[256];
    snprintf(path, sizeof path, "%s/f", dir);

    atomicFile af;
    int rc = atomicOpen(&af, dir, "f", 0, 0644, &err);
    writeAll(af.fd, "new", 3);
    ok(rc == 0 && access(path, F_OK) != 0, "an uncommitted file has no final name");
    rc = atomicCommit(&af, &err);
    ok(rc == 0 && access(path, F_OK) == 0, "commit publishes it");

    atomicOpen(&af, dir, "f", 0, 0644, &err);
    rc = atomicCommit(&af, &err);
    ok(rc != 0, "create mode never overwrites an existing name");

    atomicOpen(&af, dir, "f", 1, 0644, &err);
    writeAll(af.fd, "replaced", 8);
    atomicAbort(&af);
    struct stat st;
    stat(path, &st);
    ok(st.st_size == 3, "an aborted replacement leaves the old bytes");

    atomicOpen(&af, dir, "f", 1, 0644, &err);
    writeAll(af.fd, "replaced", 8);
    rc = atomicCommit(&af, &err);
    stat(path, &st);
    ok(rc == 0 && st.st_size == 8, "replace mode swaps the bytes in one step");

    char cmd[300];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) = 1", dir);
    ok(system(cmd) == 0, "no temporary file is left behind");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) ok(0, "cleanup");
}

/* The shared readers and writers of times, UTF-8 and safe names. */
static void testText(void) {
    long long t;
    const char *frac;
    size_t nfrac;
    char out[32];
    ok(rfc3339Parse("2026-12-02T13:08:02Z", &t, NULL, NULL) == 0 && t == 1796216882LL,
       "RFC 3339: a UTC time");
    ok(rfc3339Parse("2026-12-02 14:08:02.250+01:00", &t, &frac, &nfrac) == 0 && t == 1796216882LL &&
           nfrac == 3 && strncmp(frac, "250", 3) == 0,
       "RFC 3339: an offset, a space for the T and a fraction");
    ok(rfc3339Parse("2026-12-02T13:08:02.000Z", &t, NULL, NULL) == 0 && t == 1796216882LL,
       "RFC 3339: S3's LastModified");
    ok(rfc3339Parse("2026-02-30T00:00:00Z", &t, NULL, NULL) < 0 &&
           rfc3339Parse("2026-12-02T13:08:60Z", &t, NULL, NULL) < 0 &&
           rfc3339Parse("2026-12-02T13:08:02", &t, NULL, NULL) < 0 &&
           rfc3339Parse("2026-12-02T13:08:02Zx", &t, NULL, NULL) < 0,
       "RFC 3339: no February 30, no second 60, a zone required, nothing after it");
    rfc3339Format(out, 1796216882LL);
    ok(strcmp(out, "2026-12-02T13:08:02Z") == 0, "RFC 3339: formatted back (%s)", out);

    ok(utf8Valid((const unsigned char *)"na\xc3\xafve \xe2\x80\x94 \xf0\x9f\x98\x80", 15), "UTF-8: 2, 3 and 4 bytes");
    ok(!utf8Valid((const unsigned char *)"\xc0\xaf", 2) && !utf8Valid((const unsigned char *)"\xed\xa0\x80", 3) &&
           !utf8Valid((const unsigned char *)"\xf4\x90\x80\x80", 4) && !utf8Valid((const unsigned char *)"a\0b", 3) &&
           !utf8Valid((const unsigned char *)"\xe2\x80", 2),
       "UTF-8: no overlong form, surrogate, code point past U+10FFFF, NUL or cut sequence");

    char f[16];
    ok(utf8Fold("a\tb\xe2\x80\x94\xc2\xa0", f, sizeof f) == 8 && strcmp(f, "a b\xe2\x80\x94\xc2\xa0") == 0,
       "fold: a tab is a blank; U+2014 and U+00A0 stay");
    utf8Fold("\x01\xc2\x9f\xe2\x80", f, sizeof f);
    ok(strcmp(f, "\\x01\\u009f\\xe2") == 0, "fold: C0, C1 and a cut sequence are escaped, cut whole (%s)", f);
    utf8Fold("\\x01", f, sizeof f);
    ok(strcmp(f, "\\x01") == 0, "fold: a backslash stays (folding twice changes nothing)");

    char name[64];
    ok(fileNameSafe("./a//b/./c.txt", name, sizeof name) == 0 && strcmp(name, "a/b/c.txt") == 0,
       "safe name: ./, // and . are spelling, silently dropped");
    ok(fileNameSafe("/etc/../../x", name, sizeof name) == 1 && strcmp(name, "etc/x") == 0,
       "safe name: a leading / and .. are changes (%s)", name);
    ok(fileNameSafe("a\xff" "b", name, sizeof name) == 1 && strcmp(name, "a?b") == 0,
       "safe name: a byte that is not UTF-8 becomes ?");
    ok(fileNameSafe("../..", name, sizeof name) < 0 && fileNameSafe("abcdef", name, 4) < 0,
       "safe name: nothing left, or too long for the buffer, is -1");
}

/* Values written exactly: REAL text, TEXT with NUL, terminal widths. */
static void testValueText(void) {
    static const double reals[] = {0.0, -0.0, 0.1, 2.0, 1e-300, 5e-324, 2.2250738585072014e-308,
                                   1.7976931348623157e308, -123456.789, 1e21, 0.30000000000000004};
    char out[REAL_TEXT_MAX];
    int exact = 1;
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        realText(reals[i], out);
        double back = strtod(out, NULL);
        if (memcmp(&back, &reals[i], sizeof back) != 0 || !strpbrk(out, ".e")) {
            exact = 0;
            ok(0, "realText: %.17g gave %s", reals[i], out);
        }
    }
    ok(exact, "realText: every double reads back bit for bit, and looks like a REAL");
    ok(strcmp(realText(0.1, out), "0.1") == 0 && strcmp(realText(2.0, out), "2.0") == 0 &&
           strcmp(realText(-0.0, out), "-0.0") == 0 &&
           strcmp(realText(1.7976931348623157e308, out), "1.7976931348623157e+308") == 0,
       "realText: the shortest text (%s)", realText(1.7976931348623157e308, out));
    ok(strcmp(realText(INFINITY, out), "Inf") == 0 && strcmp(realText(-INFINITY, out), "-Inf") == 0,
       "realText: infinities as SQLite writes them");

    ok(utf8ValidNul((const unsigned char *)"a\0b\xc3\xaf", 5) && !utf8ValidNul((const unsigned char *)"a\xff", 2),
       "UTF-8 with NUL: NUL allowed, a bad byte is not");
    unsigned cp = 0;
    ok(utf8Decode((const unsigned char *)"\xf0\x9f\x98\x80", 4, &cp) == 4 && cp == 0x1F600 &&
           utf8Decode((const unsigned char *)"\xc2\x85", 2, &cp) == 2 && cp == 0x85 &&
           utf8Decode((const unsigned char *)"\xff", 1, &cp) == 0,
       "utf8Decode: code points, 0 for a bad byte");
    ok(utf8Width('a') == 1 && utf8Width(0x65E5) == 2 && utf8Width(0x1F600) == 2 && utf8Width(0xAC00) == 2 &&
           utf8Width(0xFF21) == 2 && utf8Width(0x0301) == 0 && utf8Width(0x200B) == 0 && utf8Width(0xE9) == 1 &&
           utf8Width(0x2014) == 1,
       "utf8Width: CJK, emoji, Hangul and fullwidth 2, combining and zero-width 0, others 1");
}

/* configEndpoints: a list of metadata servers, each checked. */
static void testEndpoints(void) {
    char *out[CONFIG_MAX_ENDPOINTS];
    size_t n = 99;
    lakeError err = {0};
    lakeConfig cfg = {.metasrv = " https://a:1/ ,https://b:2,http://127.0.0.1:3"};
    int rc = configEndpoints(&cfg, out, &n, &err);
    ok(rc == 0 && n == 3 && strcmp(out[0], "https://a:1") == 0 && strcmp(out[1], "https://b:2") == 0 &&
           strcmp(out[2], "http://127.0.0.1:3") == 0,
       "endpoints: trimmed, trailing slash dropped, in order");
    while (n) free(out[--n]);
    const char *bad[] = {"https://a:1,", "https://a:1,https://a:1", "https://a:1,http://10.0.0.1:2",
                         "https://a/x", "https://1,https://2,https://3,https://4,https://5,https://6,"
                                        "https://7,https://8,https://9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg.metasrv = (char *)bad[i];
        rc = configEndpoints(&cfg, out, &n, &err);
        ok(rc == LAKE_ECONFIG && n == 0 && strncmp(err.msg, "metasrv: ", 9) == 0,
           "endpoints: '%s' is refused (78): %s", bad[i], err.msg);
    }
}

static void testDurations(void) {
    static const struct { const char *text; int64_t max, want; } good[] = {
        {"86400", 1000000, 86400}, {"45s", 1000, 45}, {"30m", 10000, 1800}, {"12h", 100000, 43200},
        {"1d", 86400, 86400}, {"0", 10, 0}, {"0d", 10, 0}, {"007h", 100000, 25200},
    };
    static const struct { const char *text; int64_t max; } bad[] = {
        {"", 100}, {"d", 100}, {"-1", 100}, {"+1", 100}, {"1.5h", 100000}, {"1w", 10000000},
        {"1 d", 100000}, {"1dd", 100000}, {"12H", 100000}, {" 1", 100}, {"2d", 86400},
        {"99999999999999999999", INT64_MAX}, {"106751991167301d", INT64_MAX}, {NULL, 100},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t s = -1;
        ok(durationParse(good[i].text, good[i].max, &s) == 0 && s == good[i].want, "duration '%s' is %lld s",
           good[i].text, (long long)good[i].want);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t s = -7;
        ok(durationParse(bad[i].text, bad[i].max, &s) == -1 && s == -7, "duration '%s' (at most %lld s) is refused",
           bad[i].text ? bad[i].text : "(null)", (long long)bad[i].max);
    }
}

/* bytesFormat writes what bytesParse reads back, with the largest suffix
 * that divides. */
static void testByteSizes(void) {
    static const struct { int64_t bytes; const char *want; } cases[] = {
        {0, "0"}, {1500, "1500"}, {1024, "1KiB"}, {64LL << 20, "64MiB"}, {1LL << 30, "1GiB"},
        {(1LL << 30) + 1024, "1048577KiB"}, {100LL << 30, "100GiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        int64_t back = -1;
        bytesFormat(cases[i].bytes, buf, sizeof buf);
        ok(strcmp(buf, cases[i].want) == 0 && bytesParse(buf, &back) == 0 && back == cases[i].bytes,
           "%lld bytes are written '%s' and read back", (long long)cases[i].bytes, cases[i].want);
    }
}

/* The backoff schedule of the catalog's retries: ceilings 100, 200, 400,
 * 800, 1600, then 2000 ms; a pause is a draw below the ceiling, raised to
 * a Retry-After, cut to the deadline. */
static void testRetrySchedule(void) {
    static const long ceilings[] = {100, 200, 400, 800, 1600, 2000, 2000, 2000};
    int fine = 1;
    for (int a = 1; a <= 8; a++) fine &= retryCeilingMs(a) == ceilings[a - 1];
    ok(fine && retryCeilingMs(1000) == RETRY_CAP_MS, "ceilings double from 100 ms to the 2 s cap");
    ok(retryPauseMs(1, 0, 0, 100000) == 0 && retryPauseMs(1, 100, 0, 100000) == 100 &&
       retryPauseMs(1, 101, 0, 100000) == 0 && retryPauseMs(3, 401, 0, 100000) == 0 &&
       retryPauseMs(3, 250, 0, 100000) == 250 && retryPauseMs(40, 4001, 0, 100000) == 2000,
       "full jitter: the draw modulo ceiling + 1, from 0 to the ceiling");
    long lo = RETRY_CAP_MS, hi = 0;
    unsigned seed = 7;
    for (int i = 0; i < 2000; i++) {
        long p = retryPauseMs(6, (unsigned long)rand_r(&seed), 0, 100000);
        if (p < lo) lo = p;
        if (p > hi) hi = p;
    }
    ok(lo >= 0 && lo < 200 && hi <= RETRY_CAP_MS && hi > 1800, "2000 draws spread over [0, 2 s] (%ld..%ld ms)", lo, hi);
    ok(retryPauseMs(1, 50, 1000, 100000) == 1000 && retryPauseMs(6, 1500, 1000, 100000) == 1500,
       "a Retry-After is a floor under the draw, not a replacement for it");
    ok(retryPauseMs(6, 1500, 1000, 300) == 300 && retryPauseMs(1, 50, 5000, 2500) == 2500 &&
       retryPauseMs(1, 50, 0, 0) == 0 && retryPauseMs(1, 50, 0, -5) == 0,
       "the deadline cuts every pause, Retry-After included; never negative");
}

/* tempSweep: a dead writer's ".tmp-<pid>-<id>" goes; a live one's, an
 * old-style ".tmp-<id>" (a stage partial, gc's to judge) and others stay. */
static void testTempSweep(void) {
    char dir[] = "/tmp/lake-unit-XXXXXX";
    if (!mkdtemp(dir)) { ok(0, "mkdtemp"); return; }
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char name[4][64], path[4][512];
    snprintf(name[0], sizeof name[0], ".tmp-%ld-01DEAD", (long)dead);
    snprintf(name[1], sizeof name[1], ".tmp-%ld-01LIVE", (long)getpid());
    snprintf(name[2], sizeof name[2], ".tmp-01OLDSTYLE");
    snprintf(name[3], sizeof name[3], "snapshot");
    for (int i = 0; i < 4; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, name[i]);
        close(open(path[i], O_WRONLY | O_CREAT, 0600));
    }
    tempSweep(dir);
    ok(access(path[0], F_OK) != 0, "tempSweep removes a dead writer's temporary file");
    ok(access(path[1], F_OK) == 0 && access(path[2], F_OK) == 0 && access(path[3], F_OK) == 0,
       "tempSweep keeps a live writer's, an old-style .tmp-<id> and other files");
    for (int i = 1; i < 4; i++) unlink(path[i]);
    rmdir(dir);
}

/* The threads of this process, from /proc/self/status. */
static int threadCount(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

/* The threads of this process once a joined thread has left it: a
 * thread's pthread_join returns when the kernel clears its tid, a moment
 * before the kernel stops counting it in /proc, so the count is read again
 * until it is at most want (bounded at 10 s only against a hang). */
static int threadCountSettled(int want) {
    struct timespec ms = {0, 1000 * 1000};
    int n = threadCount();
    for (int i = 0; i < 10000 && n > want; i++) {
        nanosleep(&ms, NULL);
        n = threadCount();
    }
    return n;
}

/* Byte i of the test stream: not periodic in the ring's size. */
static char streamByte(size_t i) { return (char)((i * 31 + i / 977) % 251); }

/* Put len bytes of the test stream through a ring of cap bytes (chunk
 * cap/4) into fd, asking for odd amounts and queueing less than given at
 * times.  Returns 0, or -1 with errno at the first failure; *threads is
 * the most threads the process had meanwhile. */
static int ringStream(int fd, size_t cap, size_t len, int *threads) {
    writeRing *w = writeRingNew(fd, cap, cap / 4, 4096);
    size_t done = 0, step = 0;
    int rc = 0;
    *threads = threadCount();
    while (w && done < len) {
        size_t want = 1 + (step * 7919) % (cap / 3), got;
        char *p = writeRingSpace(w, want, &got);
        if (!p) { rc = -1; break; }
        if (got < 1 || got > want) { errno = EINVAL; rc = -1; break; }
        size_t n = got - (step % 3 == 0 && got > 1); /* sometimes less than given */
        if (n > len - done) n = len - done;
        for (size_t i = 0; i < n; i++) p[i] = streamByte(done + i);
        writeRingQueue(w, n);
        done += n;
        step++;
        int t = threadCount();
        if (t > *threads) *threads = t;
    }
    int e = errno;
    if (!w) rc = -1, e = ENOMEM;
    else if (!rc && writeRingFinish(w) < 0) rc = -1, e = errno;
    writeRingFree(w);
    errno = e;
    return rc;
}

/* The write ring: bytes in order whatever the pieces, a thread only past
 * the ring's size, a failed write reported with its errno. */
static void testWriteRing(void) {
    char path[] = "/tmp/lake-unit-ring-XXXXXX";
    int fd = mkstemp(path), threads = 0, base = threadCountSettled(1); /* the earlier tests' threads gone */
    if (fd < 0) { ok(0, "mkstemp"); return; }
    unlink(path);

    int rc = ringStream(fd, 65536, 60000, &threads);
    ok(rc == 0 && lseek(fd, 0, SEEK_CUR) == 60000, "a stream smaller than the ring is written whole");
    ok(threads == base, "... by the caller alone (%d threads, %d before)", threads, base);

    size_t len = 3 * 1024 * 1024 + 12345;
    ftruncate(fd, 0);
    lseek(fd, 0, SEEK_SET);
    rc = ringStream(fd, 65536, len, &threads);
    ok(rc == 0 && lseek(fd, 0, SEEK_CUR) == (off_t)len, "a stream 48 times the ring is written whole");
    ok(threads == base + 1, "... by a second thread (%d threads, %d before)", threads, base);
    ok(threadCountSettled(base) == base, "which has ended at the finish");
    char *back = malloc(len);
    size_t same = 0;
    if (back && pread(fd, back, len, 0) == (ssize_t)len)
        while (same < len && back[same] == streamByte(same)) same++;
    ok(same == len, "its bytes are in order (first difference at %zu of %zu)", same, len);
    free(back);
    close(fd);

    int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (full < 0) { ok(0, "/dev/full"); return; }
    errno = 0;
    rc = ringStream(full, 65536, 100, &threads);
    ok(rc < 0 && errno == ENOSPC, "a failed write of a small stream is reported at the finish (%s)", strerror(errno));
    errno = 0;
    rc = ringStream(full, 65536, 1024 * 1024, &threads);
    ok(rc < 0 && errno == ENOSPC, "a failed write of the writer thread stops the stream (%s)", strerror(errno));
    close(full);

    /* given up with chunks queued: the thread ends, nothing leaks (ASan) */
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    writeRing *w = writeRingNew(null, 65536, 16384, 0);
    size_t got, queued = 0;
    char *p;
    while (w && queued < 1024 * 1024 && (p = writeRingSpace(w, 16384, &got))) {
        memset(p, 'x', got);
        writeRingQueue(w, got);
        queued += got;
    }
    writeRingFree(w);
    ok(w && queued == 1024 * 1024 && threadCountSettled(base) == base, "a ring freed mid-stream ends its thread");
    close(null);
}

/* What a warning sink saw, and on which thread. */
typedef struct {
    char line[256];
    int lines;
} sinkSeen;

static void sinkTake(void *ctx, const char *line) {
    sinkSeen *s = ctx;
    snprintf(s->line, sizeof s->line, "%s", line);
    s->lines++;
}

/* On a thread threadStart started: a warning, and whether every signal
 * is blocked. */
static void *warnOnThread(void *arg) {
    int *blocked = arg;
    logWarn("from a worker: %d", 42);
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    *blocked = sigismember(&now, SIGINT) && sigismember(&now, SIGTERM) && sigismember(&now, SIGHUP) &&
               sigismember(&now, SIGUSR1) && sigismember(&now, SIGPIPE) && sigismember(&now, SIGALRM);
    return NULL;
}

static void testThreadStart(void) {
    sinkSeen seen = {{0}, 0};
    logSink sink = {sinkTake, &seen};
    const logSink *old = logSinkSet(&sink);
    sigset_t before, after;
    pthread_sigmask(SIG_SETMASK, NULL, &before);
    pthread_t t;
    int blocked = 0;
    int e = threadStart(&t, warnOnThread, &blocked);
    if (!e) pthread_join(t, NULL);
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    logSinkSet(old);
    ok(e == 0, "threadStart starts a thread (%d)", e);
    ok(seen.lines == 1 && strcmp(seen.line, "from a worker: 42") == 0,
       "a warning on the thread reaches its starter's sink (%d lines, \"%s\")", seen.lines, seen.line);
    ok(blocked, "the thread blocks every signal");
    ok(sigismember(&after, SIGINT) == sigismember(&before, SIGINT) &&
           sigismember(&after, SIGUSR1) == sigismember(&before, SIGUSR1),
       "the starter's own mask is as it was");

    /* a sink dropping everything (fn NULL) is inherited as such */
    logSink drop = {NULL, NULL};
    FILE *err = tmpfile();
    int saved = dup(STDERR_FILENO);
    if (!err || saved < 0) { ok(0, "tmpfile, dup"); return; }
    fflush(stderr);
    dup2(fileno(err), STDERR_FILENO);
    old = logSinkSet(&drop);
    e = threadStart(&t, warnOnThread, &blocked);
    if (!e) pthread_join(t, NULL);
    logSinkSet(old);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    long printed = lseek(fileno(err), 0, SEEK_END);
    fclose(err);
    ok(e == 0 && printed == 0 && seen.lines == 1,
       "a dropping sink drops the thread's warnings too (%ld bytes on stderr)", printed);
}

int main(void) {
    testThreadStart();
    testWriteRing();
    testTempSweep();
    testDurations();
    testByteSizes();
    testRetrySchedule();
    testEndpoints();
    testText();
    testValueText();
    testIds();
    testSha256();
    testErrors();
    testAtomic();
    return tapDone();
}
