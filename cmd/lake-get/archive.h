/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive.h - lake-get --archive: one pax tar stream of stage objects,
 * written by libarchive to a file descriptor.
 *
 * Promises:
 *  - Nothing is written before the first entry's header: a stream whose
 *    first REF is refused leaves the descriptor untouched.
 *  - Entry names are safe (no leading '/', no empty, "." or ".."
 *    components) and unique within the stream, also against directory
 *    prefixes ("a" and "a/b" never both); every changed name is warned
 *    about.  Duplicates keep their extension (names.h): "a.txt", "a.1.txt",
 *    "a.2.txt"…
 *  - Each entry's bytes stream from the stage with bounded memory and are
 *    verified as lake_reader_read(3) verifies them; the count must equal the FILE
 *    value's size even without verification (the tar header states it).
 *  - A failed stream is abandoned (tarAbort): no end-of-archive blocks, and
 *    the last byte handed to the descriptor is held back, so the stream
 *    never ends on a tar block boundary and every tar reader reports a
 *    truncated archive.
 */
#ifndef LAKE_GET_ARCHIVE_H
#define LAKE_GET_ARCHIVE_H

#include "core/error.h"
#include "stage/stage.h"

typedef struct tarOut tarOut;

/* Start a stream to fd; writes nothing yet.  Caller ends it with tarClose
 * or tarAbort. */
int tarOpen(tarOut **out, int fd, lakeError *err);

/* Writes an entry's bytes into w, all of them, verified (or not) as the
 * caller asked; 0 or the failure. */
typedef int (*tarCopyFn)(void *ctx, lakeWriter *w, lakeError *err);

/* Append the object fv names, its bytes from copy(ctx, ...).  fv must
 * carry a size (a bare location is 65) and its location must have been
 * checked to lie inside the stage (the caller opens the object first).
 * On failure the stream must be abandoned with tarAbort. */
int tarAdd(tarOut *t, const fileValue *fv, tarCopyFn copy, void *ctx, lakeError *err);

/* Write the end-of-archive blocks and free t (also on failure). */
int tarClose(tarOut *t, lakeError *err);

/* Abandon the stream (see above) and free t.  NULL is allowed. */
void tarAbort(tarOut *t);

#endif
