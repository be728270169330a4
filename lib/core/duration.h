/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * duration.h - durations as people write them on a command line.
 *
 * "86400", "45s", "30m", "12h", "1d": a whole number with an optional unit
 * (s, m, h, d; nothing means seconds).  Shared by the options that take a
 * time span (lake-catalog gc --grace; later lake-get --presign).
 */
#ifndef LAKE_DURATION_H
#define LAKE_DURATION_H

#include <stdint.h>

/* Parse text into *seconds: 0 on success; -1 when text is not a whole
 * number with an optional unit s, m, h or d, or the span is longer than
 * max_s seconds (*seconds is then untouched). */
int durationParse(const char *text, int64_t max_s, int64_t *seconds);

#endif
