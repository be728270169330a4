/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memreader.h - a lakeReader over bytes in memory, for unit tests and fuzz
 * harnesses.  chunk, when not 0, is the most one read hands out, so that
 * records, quotes and CRLF pairs straddle buffer refills.
 */
#ifndef LAKE_TEST_MEMREADER_H
#define LAKE_TEST_MEMREADER_H

#include <string.h>
#include <sys/types.h>

typedef struct memReader {
    const char *data;
    size_t len, off;
    size_t chunk; /* 0: no limit */
} memReader;

static ssize_t memRead(void *ctx, void *buf, size_t len) {
    memReader *m = ctx;
    size_t n = m->len - m->off < len ? m->len - m->off : len;
    if (m->chunk && n > m->chunk) n = m->chunk;
    memcpy(buf, m->data + m->off, n);
    m->off += n;
    return (ssize_t)n;
}

#endif
