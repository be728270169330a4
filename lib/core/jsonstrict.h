/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jsonstrict.h - RFC 8259 strictness in front of cJSON.
 *
 * cJSON is lenient: it reads "1.", "-01" and "0.e1" as numbers, takes raw
 * control characters and unknown escapes inside strings, keeps both
 * members of a repeated key (lookups see the first), and returns strings
 * NUL-terminated, so a "\u0000" silently cuts one short.  Every JSON text
 * that comes from outside a process goes through jsonStrictParse: one
 * linear validation pass over the bytes, then cJSON, then a check of the
 * parsed objects for repeated keys.  What it refuses:
 *  - anything RFC 8259 refuses: numbers outside its grammar (leading
 *    zeros, "1.", ".5", "+1", hex, NaN, Infinity), escapes other than
 *    \" \\ \/ \b \f \n \r \t \uXXXX, raw U+0000..U+001F inside strings,
 *    bytes that are not UTF-8, anything after the value but white space;
 *  - on top of it, for lake: a \u0000 escape (no name, key or TEXT value
 *    of lake may hold U+0000 from JSON; BLOBs travel as hex), a lone
 *    surrogate escape (it names no character), a key repeated in one
 *    object (byte for byte), and nesting deeper than cJSON's limit.
 */
#ifndef LAKE_JSONSTRICT_H
#define LAKE_JSONSTRICT_H

#include "core/error.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Why a text was refused: the byte offset (from 0) where it went wrong
 * (JSON_NO_OFFSET for a repeated key, found after parsing), and a phrase
 * for a message ("a leading zero in a number"). */
#define JSON_NO_OFFSET ((size_t)-1)
typedef struct jsonFault {
    size_t off;
    const char *why;
    int nomem; /* refused for want of memory, not for the text */
} jsonFault;

/* Called with the offset of each number of the text, in order; nonzero
 * stops the parse as out of memory. */
typedef int (*jsonNumberFn)(void *arg, size_t off);

/* 1 when p[0..n) is one JSON value by the rules above, with white space
 * around it allowed; 0 with *f set otherwise.  on_number, when not NULL,
 * is told of every number (f->nomem set when it fails). */
int jsonStrictValid(const char *p, size_t n, jsonNumberFn on_number, void *arg, jsonFault *f);

/* Validate p[0..n) and parse it with cJSON: the tree (caller deletes), or
 * NULL with *f set. */
cJSON *jsonStrictParse(const char *p, size_t n, jsonNumberFn on_number, void *arg, jsonFault *f);

/* f as "WHY at byte K" (K from 1), or "WHY", into buf. */
void jsonFaultText(const jsonFault *f, char *buf, size_t n);

/* jsonStrictParse for a caller with a lakeError: the tree, or NULL with
 * err set to LAKE_EDATA "WHAT: malformed JSON: WHY at byte K" (K from 1),
 * or to LAKE_EFAIL when out of memory. */
cJSON *jsonStrictLoad(const char *p, size_t n, const char *what, lakeError *err);

/* Largest whole number a JSON number carries exactly (2^53). */
#define JSON_WHOLE_MAX 9007199254740992.0

/* 1 with *out set when v is a number holding a whole value in
 * [min, 2^53]; 0 otherwise (not a number, a fraction, out of range), so
 * that no caller converts a double C cannot hold as int64_t. */
int jsonWhole(const cJSON *v, int64_t min, int64_t *out);

#endif
