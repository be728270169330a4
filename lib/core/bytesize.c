/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bytesize.c - byte counts with binary suffixes (see bytesize.h).
 */
#include "core/bytesize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bytesParse(const char *s, int64_t *bytes) {
    static const struct { const char *suffix; int64_t unit; } units[] = {
        {"", 1}, {"K", 1LL << 10}, {"KiB", 1LL << 10}, {"M", 1LL << 20},
        {"MiB", 1LL << 20}, {"G", 1LL << 30}, {"GiB", 1LL << 30},
    };
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0 || !(*s >= '0' && *s <= '9')) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) != 0) continue;
        if (v > INT64_MAX / units[i].unit) return -1;
        *bytes = (int64_t)v * units[i].unit;
        return 0;
    }
    return -1;
}

void bytesFormat(int64_t bytes, char *buf, size_t len) {
    static const char *const suffix[] = {"GiB", "MiB", "KiB"};
    for (int i = 0; i < 3; i++) {
        int64_t unit = 1LL << (10 * (3 - i));
        if (bytes > 0 && bytes % unit == 0) {
            snprintf(buf, len, "%lld%s", (long long)(bytes / unit), suffix[i]);
            return;
        }
    }
    snprintf(buf, len, "%lld", (long long)bytes);
}
