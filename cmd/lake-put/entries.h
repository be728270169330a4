/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * entries.h - lake-put --archive: the regular entries of an archive, one at
 * a time, each as a lakeReader over its data.
 *
 * A tar (ustar, pax, GNU), cpio, zip or 7z archive, plain or compressed
 * with gzip, bzip2, xz, zstd, lz4 or compress (and nothing else: lake-put(1)
 * lists these), is read from a file descriptor as a stream: nothing is
 * buffered beyond libarchive's own blocks, whatever the size of an entry.
 * At most 3 layers of compression, and libarchive's steps may add at most
 * 256 MiB of resident memory (else the process ends with 65, from a
 * watchdog thread).
 *
 * Promises:
 *  - Directories are skipped silently; symbolic and hard links, devices,
 *    fifos and sockets are skipped with one warning each naming the entry.
 *    The data of skipped entries is decoded (and dropped) by steps, and
 *    once more than max_skipped bytes of it over the archive: 65 naming
 *    the entry and --max-skipped.
 *  - An entry's data is what tar x would write (a sparse entry's holes as
 *    zeros) and exactly the size its header declares, or the read fails
 *    and archiveInDataError gives 65.
 *  - An entry's name is made safe (leading '/', empty, "." and ".."
 *    components dropped, bytes that are not UTF-8 replaced by '?'), with one
 *    warning when that changed it.
 *  - A damaged or truncated archive is 65 naming the archive and, when known,
 *    the entry.  The stop flag (a signal) makes reads fail with EINTR.
 *  - A 7z archive is read only from a regular file (libarchive seeks in
 *    it): from a pipe it is 65, saying so, before its first entry.
 */
#ifndef LAKE_PUT_ENTRIES_H
#define LAKE_PUT_ENTRIES_H

#include <signal.h>
#include <stdint.h>

#include "core/error.h"
#include "stage/stage.h"

typedef struct archiveIn archiveIn;

/* The current regular entry: valid until the next archiveInNext. */
typedef struct archiveEntryInfo {
    const char *path; /* the safe name; NULL at the end of the archive */
    int64_t size;     /* as the header states it, -1 when it does not */
    lakeReader reader;
} archiveEntryInfo;

/* Start reading fd (kept open by the caller until archiveInClose) as an
 * archive; what names it in messages ("stdin", a path).  stop may be NULL.
 * max_skipped bounds the data (holes excluded) of the entries skipped,
 * over the whole archive.  1 when out of memory. */
int archiveInOpen(int fd, const char *what, const volatile sig_atomic_t *stop, int64_t max_skipped,
                  archiveIn **out, lakeError *err);

/* Move to the next regular entry (skipping the rest of the current one)
 * and fill *e; e->path is NULL at the end.  65 for a damaged archive (or
 * one in no format lake-put reads), 1 "interrupted" after a stop. */
int archiveInNext(archiveIn *in, archiveEntryInfo *e, lakeError *err);

/* After a put of the current entry failed: when the cause was the archive
 * itself (its data damaged or cut short), replace *err by that error (65,
 * naming the archive and the entry) and return its code; else 0 and *err
 * is left alone. */
int archiveInDataError(const archiveIn *in, lakeError *err);

void archiveInClose(archiveIn *in);

#endif
