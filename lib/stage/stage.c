/*
 * stage.c - choosing a backend by URL, and what all backends share.
 */
#include "stage/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"

int stageOpen(const char *url, stage **out, lakeError *err) {
    *out = NULL;
    if (strncmp(url, "file://", 7) == 0) return localStageOpen(url, out, err);
    if (strncmp(url, "s3://", 5) == 0)
        return errSet(err, LAKE_ECONFIG, "%s: S3 stages are not supported yet", url);
    return errSet(err, LAKE_ECONFIG,
                  "%s: stage must be file:///abs/dir or s3://bucket/prefix", url);
}

void stageClose(stage *s) {
    if (s) s->ops->close(s);
}

const char *stageUrl(const stage *s) { return s->url; }

int stagePut(stage *s, lakeReader *r, const stagePutOptions *opt, fileValue *out,
             lakeError *err) {
    return s->ops->put(s, r, opt, out, err);
}

int stageGet(stage *s, const fileValue *fv, lakeWriter *w, int verify,
             progress *prog, lakeError *err) {
    if (stageContains(s, fv->location, err)) return err->code;
    return s->ops->get(s, fv, w, verify, prog, err);
}

int stageContains(const stage *s, const char *location, lakeError *err) {
    char *rel = s->ops->relative(s, location);
    if (!rel) return errSet(err, LAKE_EDATA, "%s: outside the managed stage", location);
    free(rel);
    return 0;
}

char *stageRelativePath(const stage *s, const char *location) {
    return s->ops->relative(s, location);
}

ssize_t fdRead(void *ctx, void *buf, size_t len) {
    return readFull(*(int *)ctx, buf, len);
}

int fdWrite(void *ctx, const void *buf, size_t len) {
    return writeAll(*(int *)ctx, buf, len);
}

void stageTimestamp(char out[32], long long t) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void stageKeyDir(char out[32], long long t) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "files/%Y/%m/", &tm);
}
