/*
 * memreader.h - a lakeReader over bytes in memory, for unit tests that put
 * known content into a stage.
 */
#ifndef LAKE_TEST_MEMREADER_H
#define LAKE_TEST_MEMREADER_H

#include <string.h>
#include <sys/types.h>

typedef struct memReader {
    const char *data;
    size_t len, off;
} memReader;

static ssize_t memRead(void *ctx, void *buf, size_t len) {
    memReader *m = ctx;
    size_t n = m->len - m->off < len ? m->len - m->off : len;
    memcpy(buf, m->data + m->off, n);
    m->off += n;
    return (ssize_t)n;
}

#endif
