/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * duration.c - "1d", "12h", "30m", "45s" or plain seconds.
 */
#include "core/duration.h"

#include <stddef.h>

int durationParse(const char *text, int64_t max_s, int64_t *seconds) {
    int64_t n = 0;
    const char *p = text;
    if (!text || *p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (INT64_MAX - (*p - '0')) / 10) return -1;
        n = n * 10 + (*p - '0');
    }
    int64_t unit = 1;
    switch (*p) {
    case '\0': break;
    case 's': unit = 1; p++; break;
    case 'm': unit = 60; p++; break;
    case 'h': unit = 3600; p++; break;
    case 'd': unit = 86400; p++; break;
    default: return -1;
    }
    if (*p || n > max_s / unit) return -1;
    *seconds = n * unit;
    return 0;
}
