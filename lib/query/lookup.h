/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup.h - the rows a join looks up, held in memory and hashed by key.
 *
 * The inner table of a join (query/vtab.c) is looked up once per outer
 * row.  Up to a cap of bytes, the rows its scan keeps are copied here
 * and hashed by the lookup column's key, so that each lookup is a hash
 * probe instead of a statement run; past the cap the caller builds its
 * temporary SQLite index instead.
 *
 * Keys: any two values SQLite may find equal (=, BINARY, whatever
 * affinity the join's two sides apply) have the same key.  A number, and
 * a text that reads as a number (numeric affinity, as SQLite applies
 * it), key as that number, a double; other text and BLOBs key as
 * themselves; NULL has no key and finds nothing.  Some values that
 * differ share a key (1 and '1.0', integers beyond 2^53): a lookup gives
 * a superset, and SQLite checks every row it is given again.
 */
#ifndef LAKE_QUERY_LOOKUP_H
#define LAKE_QUERY_LOOKUP_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lookupMem lookupMem;

/* A value's key (lookupKeyOf); text and blob keys point into the value. */
typedef struct lookupKey {
    int type; /* SQLITE_FLOAT (any number), SQLITE_TEXT or SQLITE_BLOB */
    double num;
    const void *bytes;
    int n;
} lookupKey;

/* No row: what lookupMemFirst and lookupMemNext return at the end. */
#define LOOKUP_NONE UINT32_MAX

/* The key of v into *k: 1, or 0 for NULL (no key).  v is not changed;
 * k->bytes is valid while v is unchanged.  -1 when out of memory. */
int lookupKeyOf(sqlite3_value *v, lookupKey *k);

/* lake_key(V), the same key as an SQL function (a REAL for numbers,
 * else V), for the temporary SQLite index beyond the cap. */
void lookupKeyFunction(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* A new, empty store of rows of ncol values, keyed by value key_col
 * (0-based), holding at most max_bytes in all.  NULL when out of memory. */
lookupMem *lookupMemNew(int ncol, int key_col, size_t max_bytes);

/* Add a row: rowid, and columns first .. first + ncol - 1 of st's
 * current row.  0; 1 when the store would pass its cap (it is then of no
 * use: free it); -1 when out of memory. */
int lookupMemAdd(lookupMem *m, int64_t rowid, sqlite3_stmt *st, int first);

/* Hash the rows added (once, after the last): 0, or -1 when out of
 * memory or past the cap. */
int lookupMemIndex(lookupMem *m);

int64_t lookupMemRows(const lookupMem *m);

/* The first row whose key is k, in the order they were added, or
 * LOOKUP_NONE; then the next after row. */
uint32_t lookupMemFirst(const lookupMem *m, const lookupKey *k);
uint32_t lookupMemNext(const lookupMem *m, const lookupKey *k, uint32_t row);

int64_t lookupMemRowid(const lookupMem *m, uint32_t row);

/* Set ctx's result to a value of SQLite type `type`: i (INTEGER), r
 * (FLOAT) or the n bytes at p (TEXT, BLOB; the empty BLOB stays a BLOB),
 * copied; NULL for any other type. */
void lookupResult(sqlite3_context *ctx, int type, int64_t i, double r, const void *p, int n);
/* Value col (0-based) of row as ctx's result (copied). */
void lookupMemResult(const lookupMem *m, uint32_t row, int col, sqlite3_context *ctx);

void lookupMemFree(lookupMem *m);

#endif
