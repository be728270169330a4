/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rfc3339.h - the lake's one reading and writing of RFC 3339 times.
 *
 * Written: "2026-12-02T13:08:02Z" (UTC, whole seconds), as FILE values,
 * the registry and the server's log lines carry them.  Read: what RFC 3339
 * allows, YYYY-MM-DD(T|t| )hh:mm:ss[.fraction](Z|z|+hh:mm|-hh:mm), with
 * the calendar checked (no February 30, no second 60); S3's
 * "…T13:08:02.000Z" is one such.
 */
#ifndef LAKE_RFC3339_H
#define LAKE_RFC3339_H

#include <stddef.h>

/* t (seconds since the epoch) as "YYYY-MM-DDThh:mm:ssZ". */
void rfc3339Format(char out[32], long long t);
/* "YYYY-MM-DDThh:mm:ssZ" for now. */
void rfc3339Now(char out[32]);

/* Parse s whole: *secs gets the instant in seconds since the epoch, and,
 * when frac is not NULL, *frac and *nfrac the digits of its fraction
 * (nfrac 0, at most 9).  0 on success, -1 when s is not such a time. */
int rfc3339Parse(const char *s, long long *secs, const char **frac, size_t *nfrac);

#endif
