/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3url.c - S3 stage URLs, locations and keys, and the part-size plan.
 *
 * Everything here is string work: containment is decided before any
 * request, on the decoded key, the same way the local backend decides it on
 * the decoded path (stage.c's shared percent coding and component checks).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage/backend.h"
#include "stage/s3.h"

/* S3's rules for a bucket name that works with virtual-host addressing. */
static int validBucket(const char *b, size_t n) {
    if (n < 3 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = b[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '.' && ch != '-') return 0;
        if ((i == 0 || i == n - 1) && !alnum) return 0;
        if (ch == '.' && b[i + 1] == '.') return 0;
    }
    return 1;
}

/* True when s holds a control character (which no key of ours has, and
 * which would not survive a header or an XML document). */
static int hasControl(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return 1;
    return 0;
}

int s3ParseStage(const char *url, char **bucket, char **prefix, lakeError *err) {
    *bucket = *prefix = NULL;
    const char *usage = "stage must be s3://bucket/prefix";
    if (strncmp(url, "s3://", 5) != 0) return errSet(err, LAKE_ECONFIG, "%s: %s", url, usage);
    const char *b = url + 5;
    size_t bl = strcspn(b, "/");
    if (!validBucket(b, bl))
        return errSet(err, LAKE_ECONFIG,
                      "%s: '%.*s' is not a valid bucket name (3 to 63 of a-z, 0-9, '.' and '-')",
                      url, (int)(bl > 63 ? 63 : bl), b);
    const char *p = b + bl + (b[bl] == '/');
    size_t pl = strlen(p);
    while (pl && p[pl - 1] == '/') pl--;
    if (pl == 0) return errSet(err, LAKE_ECONFIG, "%s: %s (the prefix may not be empty)", url, usage);
    char *raw = strndup(p, pl), *dec = NULL;
    if (!raw) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    if (strpbrk(raw, "?#") || !(dec = stagePercentDecode(raw)) || hasControl(dec) ||
        !stageCleanRelative(dec)) {
        free(raw);
        free(dec);
        return errSet(err, LAKE_ECONFIG,
                      "%s: the prefix must be a clean key prefix (no empty, '.' or '..' "
                      "component, no '?' or '#', no bad escape)", url);
    }
    free(raw);
    *bucket = strndup(b, bl);
    *prefix = dec;
    if (!*bucket) {
        free(*prefix);
        *prefix = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    return 0;
}

char *s3Location(const char *bucket, const char *key) {
    char *enc = stagePercentEncode(key), *loc = NULL;
    if (enc && asprintf(&loc, "s3://%s/%s", bucket, enc) < 0) loc = NULL;
    free(enc);
    return loc;
}

char *s3Relative(const char *bucket, const char *prefix, const char *location) {
    if (strncmp(location, "s3://", 5) != 0) return NULL;
    const char *b = location + 5;
    size_t bl = strlen(bucket);
    if (strncmp(b, bucket, bl) != 0 || b[bl] != '/') return NULL;
    const char *rawKey = b + bl + 1;
    if (strpbrk(rawKey, "?#")) return NULL;
    char *key = stagePercentDecode(rawKey);
    if (!key) return NULL;
    size_t pl = strlen(prefix);
    char *rel = NULL;
    if (!hasControl(key) && strncmp(key, prefix, pl) == 0 && key[pl] == '/' &&
        stageCleanRelative(key + pl + 1))
        rel = strdup(key + pl + 1);
    free(key);
    return rel;
}

int64_t s3PartSize(int64_t requested, int64_t expect) {
    const int64_t mib = 1024 * 1024;
    int64_t part = requested > 0 ? requested : STAGE_PART_DEFAULT;
    if (expect > part * S3_MAX_PARTS) {
        int64_t need = (expect + S3_MAX_PARTS - 1) / S3_MAX_PARTS;
        part = (need + mib - 1) / mib * mib;
    }
    return part;
}
