/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filevalue.h - FILE values (DESIGN §3): parse, validate, print canonically.
 *
 * A FILE value is a JSON object naming one object in the managed stage:
 *   {"location":…,"size":…,"sha256":…,"content_type":…,"name":…,
 *    "last_modified":…}
 * location, size and sha256 are required; the others may be absent.
 * Canonical text has exactly these keys in this order, no spaces.
 */
#ifndef LAKE_FILEVALUE_H
#define LAKE_FILEVALUE_H

#include <stdint.h>

#include "core/error.h"
#include "core/sha256.h"

struct cJSON;

typedef struct fileValue {
    char *location;
    int64_t size;                       /* -1: unknown (a bare location) */
    char sha256[SHA256_HEX_LEN + 1];    /* "" when unknown */
    char *content_type;                 /* may be NULL */
    char *name;                         /* may be NULL */
    char *last_modified;                /* RFC 3339 UTC, may be NULL */
} fileValue;

/* Largest size a FILE value may state: exact in a JSON number (2^53). */
#define FILE_SIZE_MAX 9007199254740992LL

/* Validate a parsed JSON object as a FILE value and copy it into fv.
 * Fails with 65 naming the bad field.  fv is owned by the caller
 * (fileValueFree) whether or not this fails. */
int fileValueFromJson(const struct cJSON *obj, fileValue *fv, lakeError *err);
/* True when obj looks like a FILE value (an object with a "location"). */
int fileValueLooksLike(const struct cJSON *obj);

/* Canonical one-line JSON text; caller frees.  NULL when out of memory. */
char *fileValueToJson(const fileValue *fv);

void fileValueFree(fileValue *fv);

/* Parse one REF (DESIGN §9): a location, a FILE value, or a JSON object with
 * exactly one FILE-valued field (given as an object or as JSON text).
 * A null FILE (the text "null", or a row with no FILE-valued field but a
 * null one, as lake-query prints a NULL FILE column) succeeds with
 * fv->location NULL: there is nothing to get.  Fails with 65 on malformed
 * JSON, or when no single FILE value is found and no field is null. */
int refParse(const char *text, fileValue *fv, lakeError *err);

/* The safe form of a FILE name as a relative path (for an archive entry,
 * or a file written from one) into out (size n): a leading '/', ".."
 * components and bytes that are not UTF-8 (each becomes '?') are changes
 * worth a warning (return 1); empty and "." components (the "./" of
 * "tar -c .", a doubled or trailing '/') are mere spelling and dropped
 * silently (return 0); -1 when nothing is left or it does not fit. */
int fileNameSafe(const char *name, char *out, size_t n);

#endif
