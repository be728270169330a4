/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_segcache.c - unit tests of lib/query/segcache: fetch once, hits cost
 * no stage request, corrupt copies are refetched, LRU eviction under the
 * bound, pinned files survive, concurrent processes coalesce.
 *
 * Stage requests are counted from the stage's own LAKE_TRACE lines: stderr
 * goes to a file opened O_APPEND (children of fork share it).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "query/segcache.h"
#include "stage/stage.h"
#include "memreader.h"
#include "tap.h"

static char traceFile[300];


/* "trace: stage GET" lines written so far. */
static int stageGets(void) {
    fflush(stderr);
    FILE *f = fopen(traceFile, "r");
    char line[2048];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "trace: stage GET ", 17) == 0) n++;
    if (f) fclose(f);
    return n;
}

/* Put len bytes, every one c, as a segment; fills fv. */
static void putSeg(stage *st, char c, size_t len, fileValue *fv) {
    char *buf = malloc(len);
    memset(buf, c, len);
    memReader m = {buf, len, 0, 0};
    lakeReader r = {memRead, &m, "memory"};
    stagePutOptions po = {.expect_size = -1};
    lakeError err = {0};
    if (stagePut(st, &r, &po, fv, &err)) fprintf(stderr, "put: %s\n", err.msg);
    free(buf);
}

/* 1 when path holds exactly len bytes, every one c. */
static int holds(const char *path, char c, size_t len) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return 0;
    size_t n = 0;
    int ch, good = 1;
    while ((ch = fgetc(f)) != EOF) {
        if (ch != (unsigned char)c) good = 0;
        n++;
    }
    fclose(f);
    return good && n == len;
}

static int cached(const char *cache, const fileValue *fv) {
    char p[600];
    snprintf(p, sizeof p, "%s/segments/%s", cache, fv->sha256);
    return access(p, F_OK) == 0;
}

static int64_t cachedTotal(const char *cache) {
    char p[600];
    int64_t total = 0;
    snprintf(p, sizeof p, "ls -l '%s/segments' | awk '$9 ~ /^[0-9a-f]+$/ && length($9) == 64 "
                          "{ s += $5 } END { print s + 0 }'", cache);
    FILE *f = popen(p, "r");
    if (f && fscanf(f, "%lld", (long long *)&total) != 1) total = -1;
    if (f) pclose(f);
    return total;
}

/* Coarse file timestamps (a clock tick) must not tie the LRU order. */
static void tick(void) {
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

int main(void) {
    char dir[] = "/tmp/lake-segcache-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char url[320], path[300], cache[300];
    lakeError err = {0};
    snprintf(path, sizeof path, "%s/stage", dir);
    mkdirs(path, 0755, &err);
    snprintf(url, sizeof url, "file://%s", path);
    snprintf(traceFile, sizeof traceFile, "%s/trace", dir);
    int tfd = open(traceFile, O_WRONLY | O_CREAT | O_APPEND, 0600);
    setvbuf(stdout, NULL, _IOLBF, 0);
    dup2(tfd, 2);
    close(tfd);
    setenv("LAKE_TRACE", "1", 1);

    stage *st;
    ok(stageOpen(url, &st, &err) == 0, "open a temporary local stage");
    fileValue a, b, cc, d, big;
    putSeg(st, 'a', 1000, &a);
    putSeg(st, 'b', 1000, &b);
    putSeg(st, 'c', 1000, &cc);
    putSeg(st, 'd', 1000, &d);
    putSeg(st, 'e', 3 << 20, &big);

    /* fetch once, then hits */
    segcache *c;
    snprintf(cache, sizeof cache, "%s/cache1", dir);
    ok(segcacheOpen(cache, SEGCACHE_MAX_DEFAULT, &c, &err) == 0, "open a segment cache");
    char *p = NULL;
    int g0 = stageGets();
    ok(segcacheGet(c, st, &a, &p, &err) == 0 && holds(p, 'a', 1000), "a first get fetches (%s)",
       err.msg);
    ok(stageGets() == g0 + 1, "the fetch is one stage GET");
    ok(p && strstr(p, a.sha256) && strncmp(p, cache, strlen(cache)) == 0,
       "the copy is named by its digest under cache_dir/segments");
    free(p);
    ok(segcacheGet(c, st, &a, &p, &err) == 0 && holds(p, 'a', 1000), "a second get is a hit");
    ok(stageGets() == g0 + 1, "a hit makes no stage request");
    free(p);
    segcacheRelease(c, a.sha256);
    segcacheRelease(c, a.sha256);
    segcacheClose(c);
    ok(segcacheOpen(cache, SEGCACHE_MAX_DEFAULT, &c, &err) == 0 &&
           segcacheGet(c, st, &a, &p, &err) == 0 && stageGets() == g0 + 1,
       "another handle (a later process) reuses the copy");
    segcacheRelease(c, a.sha256);

    /* corrupt copies: same size, flipped byte; then truncated */
    int fd = open(p, O_WRONLY);
    ok(fd >= 0 && pwrite(fd, "X", 1, 500) == 1, "corrupt one byte of the cached copy");
    close(fd);
    free(p);
    ok(segcacheGet(c, st, &a, &p, &err) == 0 && holds(p, 'a', 1000) && stageGets() == g0 + 2,
       "a corrupt copy is detected and fetched again");
    segcacheRelease(c, a.sha256);
    ok(truncate(p, 10) == 0, "truncate the cached copy");
    free(p);
    ok(segcacheGet(c, st, &a, &p, &err) == 0 && holds(p, 'a', 1000) && stageGets() == g0 + 3,
       "a truncated copy is detected and fetched again");
    free(p);

    /* bytes that fail their digest publish nothing */
    fileValue lie = b;
    memcpy(lie.sha256, a.sha256, sizeof lie.sha256);
    lie.sha256[0] = lie.sha256[0] == '0' ? '1' : '0';
    ok(segcacheGet(c, st, &lie, &p, &err) == LAKE_EDATA && !p && strstr(err.msg, "SHA-256"),
       "a segment failing its SHA-256 is 65 (%s)", err.msg);
    ok(!cached(cache, &lie), "and nothing is published under its digest");
    lie = b;
    lie.size = 999;
    ok(segcacheGet(c, st, &lie, &p, &err) == LAKE_EDATA && !cached(cache, &lie),
       "a segment longer than stated is 65 (%s)", err.msg);
    lie.size = 1001;
    ok(segcacheGet(c, st, &lie, &p, &err) == LAKE_EDATA, "a segment shorter than stated is 65");
    lie = b;
    lie.sha256[0] = '\0';
    ok(segcacheGet(c, st, &lie, &p, &err) == LAKE_EDATA, "a segment without a digest is 65");
    lie = b;
    lie.location = "file:///etc/passwd";
    int before = stageGets();
    ok(segcacheGet(c, st, &lie, &p, &err) == LAKE_EDATA && stageGets() == before,
       "a location outside the stage is 65, no request (%s)", err.msg);
    segcacheClose(c);

    /* LRU eviction under a bound of three segments */
    snprintf(cache, sizeof cache, "%s/cache2", dir);
    ok(segcacheOpen(cache, 3000, &c, &err) == 0, "open a cache bounded to 3000 bytes");
    const fileValue *order[] = {&a, &b, &cc};
    for (int i = 0; i < 3; i++) {
        segcacheGet(c, st, order[i], &p, &err);
        segcacheRelease(c, order[i]->sha256);
        free(p);
        tick();
    }
    ok(cachedTotal(cache) == 3000, "three segments fill the bound");
    segcacheGet(c, st, &a, &p, &err); /* a is now the most recently used */
    segcacheRelease(c, a.sha256);
    free(p);
    tick();
    before = stageGets();
    ok(segcacheGet(c, st, &d, &p, &err) == 0 && holds(p, 'd', 1000), "a fourth segment fetched");
    segcacheRelease(c, d.sha256);
    free(p);
    ok(!cached(cache, &b), "the least recently used segment was evicted");
    ok(cached(cache, &a) && cached(cache, &cc) && cached(cache, &d),
       "the recently used ones stay");
    ok(cachedTotal(cache) <= 3000, "the total stays under the bound (%lld)",
       (long long)cachedTotal(cache));
    tick();
    ok(segcacheGet(c, st, &b, &p, &err) == 0 && stageGets() == before + 2 && !cached(cache, &cc),
       "an evicted segment is fetched again, evicting the next oldest");
    segcacheRelease(c, b.sha256);
    free(p);
    tick();

    /* a pinned segment is never evicted, even when least recently used */
    char *pa = NULL;
    segcacheGet(c, st, &a, &pa, &err); /* pinned from here on */
    tick();
    segcacheGet(c, st, &d, &p, &err); /* d newer than a, unpinned */
    segcacheRelease(c, d.sha256);
    free(p);
    tick();
    ok(segcacheGet(c, st, &cc, &p, &err) == 0, "fetch into a full cache with a pinned LRU entry");
    segcacheRelease(c, cc.sha256);
    free(p);
    ok(cached(cache, &a) && holds(pa, 'a', 1000), "the pinned segment stays");
    ok(!cached(cache, &b) && cached(cache, &d), "the oldest unpinned one went instead");
    ok(segcacheGet(c, st, &big, &p, &err) == 0 && holds(p, 'e', 3 << 20),
       "a segment larger than the bound is still served");
    ok(cached(cache, &a), "the pinned segment survived that too");
    free(p);
    free(pa);
    segcacheClose(c);

    /* concurrent processes coalesce on one download */
    snprintf(cache, sizeof cache, "%s/cache3", dir);
    int go[2];
    if (pipe(go) < 0) return 1;
    before = stageGets();
    enum { KIDS = 4 };
    pid_t kids[KIDS];
    for (int i = 0; i < KIDS; i++) {
        if ((kids[i] = fork()) == 0) {
            close(go[1]);
            char x;
            if (read(go[0], &x, 1) < 0) _exit(3);
            segcache *k;
            char *kp = NULL;
            lakeError kerr = {0};
            int rc = segcacheOpen(cache, SEGCACHE_MAX_DEFAULT, &k, &kerr) ||
                     segcacheGet(k, st, &big, &kp, &kerr) || !holds(kp, 'e', 3 << 20);
            free(kp);
            segcacheClose(k);
            _exit(rc ? 1 : 0);
        }
    }
    close(go[0]);
    close(go[1]); /* every child's read returns at once */
    int allOk = 1;
    for (int i = 0; i < KIDS; i++) {
        int status;
        waitpid(kids[i], &status, 0);
        allOk &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    ok(allOk, "%d processes getting one segment at once all get a verified copy", KIDS);
    ok(stageGets() == before + 1, "and it was downloaded once (%d GETs)", stageGets() - before);

    /* the age bound: a segment unused for longer is evicted, unless pinned */
    snprintf(cache, sizeof cache, "%s/cache-age", dir);
    ok(segcacheOpen(cache, 1LL << 30, &c, &err) == 0, "open a cache for the age bound");
    const fileValue *all[] = {&a, &b, &cc, &d};
    char *pd = NULL;
    for (int i = 0; i < 4; i++) {
        segcacheGet(c, st, all[i], i == 3 ? &pd : &p, &err);
        if (i < 3) {
            segcacheRelease(c, all[i]->sha256);
            free(p);
        }
    }
    struct timespec old[2] = {{time(NULL) - 2 * 86400, 0}, {0, UTIME_OMIT}};
    for (int i = 0; i < 4; i++) {
        if (i == 2) continue; /* cc was used just now */
        char f[600];
        snprintf(f, sizeof f, "%s/segments/%s", cache, all[i]->sha256);
        utimensat(AT_FDCWD, f, old, 0);
    }
    segcacheSetMaxAge(c, 7 * 86400);
    ok(cached(cache, &a) && cached(cache, &b), "segments unused for 2 days stay under a 7-day bound");
    segcacheSetMaxAge(c, 86400);
    ok(!cached(cache, &a) && !cached(cache, &b), "segments unused for 2 days are evicted under a 1-day bound");
    ok(cached(cache, &cc) && cached(cache, &d), "a recently used one and a pinned one stay");
    /* forgetting: only the digests kept stay, pinned ones go too */
    char *keep[] = {cc.sha256};
    int64_t removed = -1;
    ok(segcacheForget(cache, keep, 1, &removed, &err) == 0 && removed == 1 && cached(cache, &cc) && !cached(cache, &d),
       "segcacheForget removes every segment not kept, a pinned one too (%lld)", (long long)removed);
    free(pd);
    ok(segcacheForget(cache, NULL, 0, &removed, &err) == 0 && removed == 1 && !cached(cache, &cc),
       "keeping none removes all");
    segcacheClose(c);

    /* the bound from the environment */
    int64_t max;
    unsetenv("LAKE_SEGMENT_CACHE_MAX");
    ok(segcacheMaxFromEnv(&max, &err) == 0 && max == SEGCACHE_MAX_DEFAULT, "default bound 1 GiB");
    setenv("LAKE_SEGMENT_CACHE_MAX", "256M", 1);
    ok(segcacheMaxFromEnv(&max, &err) == 0 && max == 256LL << 20, "LAKE_SEGMENT_CACHE_MAX=256M");
    setenv("LAKE_SEGMENT_CACHE_MAX", "5000", 1);
    ok(segcacheMaxFromEnv(&max, &err) == 0 && max == 5000, "LAKE_SEGMENT_CACHE_MAX=5000");
    setenv("LAKE_SEGMENT_CACHE_MAX", "12x", 1);
    ok(segcacheMaxFromEnv(&max, &err) == LAKE_ECONFIG, "a malformed bound is 78");
    setenv("LAKE_SEGMENT_CACHE_MAX", "0", 1);
    ok(segcacheMaxFromEnv(&max, &err) == LAKE_ECONFIG, "a zero bound is 78");

    fileValueFree(&a);
    fileValueFree(&b);
    fileValueFree(&cc);
    fileValueFree(&d);
    fileValueFree(&big);
    stageClose(st);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tapDone();
}
