/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * at.h - time travel in SQL: a lake table read at an older version.
 *
 *   SELECT count(*) FROM docs.scans AT (VERSION => 12)
 *   SELECT count(*) FROM docs.scans AT (TIMESTAMP => '2026-12-01T00:00:00Z')
 *
 * (DuckLake's form; keywords in any case.)  SQLite has no such clause, so
 * the statement's text is rewritten before SQLite reads it: each
 * "NS.T AT (...)" becomes NS."T@vN" or NS."T@tTIME" (TIME in UTC, whole
 * seconds), padded with blanks to the same length, so that every offset
 * into the text (the next statement, an error's position) stays valid.
 * That name declares a virtual table of its own (query/vtab.h), which
 * resolves the table at that version, or at the last version committed
 * at or before that time, and refuses changes.
 */
#ifndef LAKE_QUERY_AT_H
#define LAKE_QUERY_AT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* The separator of a table's name and its version in a rewritten name. */
#define QUERY_AT_MARK '@'

/* sql with its AT clauses rewritten: *out a copy of the same length
 * (caller frees), or NULL when sql holds none.  64 for an AT clause that
 * is not one of the two forms, or a time that is not RFC 3339. */
int queryAtRewrite(const char *sql, char **out, lakeError *err);

/* Split a declared name: base (NUL-terminated, at most n bytes with the
 * NUL) and, after QUERY_AT_MARK, *version (else -1) or time (else "").
 * 0, or -1 when name is not a base name or a rewritten one. */
int queryAtSplit(const char *name, char *base, size_t n, int64_t *version, char time[32]);

#endif
