/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bytesize.h - byte counts as people write them on a command line.
 *
 * "5242880", "512K", "512KiB", "5M", "5MiB", "1G", "1GiB": a whole number
 * with an optional binary suffix (powers of 1024).  Shared by the options
 * that take a size (lake-put --part-size and --max-skipped,
 * lake-catalog compact --target-size).
 */
#ifndef LAKE_BYTESIZE_H
#define LAKE_BYTESIZE_H

#include <stddef.h>
#include <stdint.h>

/* Parse text into *bytes: 0 on success; -1 when text is not a whole
 * number of bytes with an optional suffix K, KiB, M, MiB, G or GiB, or
 * the count does not fit (*bytes is then untouched). */
int bytesParse(const char *text, int64_t *bytes);

/* Write bytes into buf (of size len) the way bytesParse reads it back
 * exactly: with the largest suffix GiB, MiB or KiB that divides it
 * ("1GiB", "64MiB", "1500"). */
void bytesFormat(int64_t bytes, char *buf, size_t len);

#endif
