/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * regindex.h - a cached registration's segments, pre-parsed.
 *
 * A registration lists every segment of a version with its statistics:
 * a query that prunes by them would parse all of it (some 10 µs a
 * segment) to keep a few.  Beside a registration cached as JSON
 * (catalog/cache.h, registrations/ID/VERSION.json) the cache keeps its
 * index, VERSION.rix: each segment's row count, its statistics as
 * segmentStatsColumn reads them, and where its record lies in the JSON
 * file, so pruning reads no JSON and only the segments kept are parsed.
 *
 * Promises:
 *  - The index is rebuildable client-side state: absent, torn, edited (a
 *    CRC-32 over it), of another format (REGINDEX_FORMAT) or of another
 *    byte order, or not of the JSON file beside it (its size and checksum
 *    line), it is ignored, and the caller builds it again from the JSON.
 *  - Its statistics answer exactly what segmentStatsColumn answers of the
 *    same record, for any column id: they are segmentStatsColumn's
 *    answers, taken when the index is built.
 *  - A record read back is checked against the CRC-32 taken when the
 *    index was built, then parsed strictly.
 *  - The index is mapped (and checked) whole, never copied: its size is
 *    bounded by REGINDEX_MAX_BYTES (32 bytes a segment and 48 a column
 *    of it, plus the text bounds; a larger one is not written).  Only
 *    the records of the segments kept are read from the JSON file.
 */
#ifndef LAKE_REGINDEX_H
#define LAKE_REGINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/schema.h"

struct cJSON;

#define REGINDEX_FORMAT 1
/* Registrations of fewer segments are parsed whole, as fast as an index
 * is read: none is written for them. */
#define REGINDEX_MIN_SEGMENTS 64
#define REGINDEX_MAX_BYTES (256LL * 1024 * 1024)

typedef struct regIndex regIndex;

/* Build the index of reg, the registration parsed from text[0..len)
 * (the first line of its cached file, whose checksum line carries crc and
 * whose size is file_size: parsed from it, not the tree it was printed
 * from, since a number cJSON prints may read back as another), and write
 * it as dir/name atomically.  0, or -1 when nothing was written (fewer than
 * REGINDEX_MIN_SEGMENTS segments, a registration it cannot index, a full
 * disk: the JSON is then read as before). */
int regIndexWrite(const char *dir, const char *name, const struct cJSON *reg, const char *text, size_t len,
                  uint32_t crc, uint64_t file_size);

/* The index at path of the JSON file at json_path, or NULL when it is
 * absent or not to be trusted (see above).  The JSON file is kept open:
 * its records are read from it (regIndexRecord). */
regIndex *regIndexOpen(const char *path, const char *json_path);
void regIndexClose(regIndex *x);

/* The registration without its "segments" (caller deletes), or NULL for
 * want of memory. */
struct cJSON *regIndexHead(const regIndex *x);
/* How many segments the registration lists. */
int regIndexCount(const regIndex *x);
/* Segment i's "rows", or -1 when it is not a whole number. */
int64_t regIndexRows(const regIndex *x, int i);
/* segmentStatsColumn of segment i for the column of id col_id: 1 with
 * *out set (text borrowed from x), 0 when unknown. */
int regIndexStats(const regIndex *x, int i, int64_t col_id, segmentColumnStats *out);
/* Segment i's record, parsed (caller deletes), or NULL when it cannot be
 * read back whole and unchanged. */
struct cJSON *regIndexRecord(const regIndex *x, int i);

#endif
