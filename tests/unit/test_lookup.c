/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_lookup.c - unit tests of lib/query/lookup: which values share a
 * key (every pair SQLite finds equal must), the order rows are found in,
 * and the store's cap on its bytes.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "query/lookup.h"
#include "sqlval.h"
#include "tap.h"

static sqlite3 *db;

/* The value of the SQL expression expr (a fresh copy). */
static sqlite3_value *val(const char *expr) { return sqlval(db, expr); }

/* Do a and b have the same key?  -1 when either has none. */
static int sameKey(const char *a, const char *b) {
    sqlite3_value *x = val(a), *y = val(b);
    lookupKey kx, ky;
    int hx = lookupKeyOf(x, &kx), hy = lookupKeyOf(y, &ky), same = -1;
    if (hx == 1 && hy == 1)
        same = kx.type == ky.type && (kx.type == SQLITE_FLOAT ? kx.num == ky.num
                                                              : kx.n == ky.n && memcmp(kx.bytes, ky.bytes, (size_t)kx.n) == 0);
    sqlite3_value_free(x);
    sqlite3_value_free(y);
    return same;
}

/* Rows (k, v) from the SQL of a VALUES list, into a store capped at max. */
static lookupMem *store(const char *values, size_t max, int *last) {
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT column1, column2 FROM (VALUES %s)", values);
    sqlite3_stmt *st = NULL;
    lookupMem *m = lookupMemNew(2, 0, max);
    *last = 0;
    if (!m || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return m;
    for (int64_t r = 0; sqlite3_step(st) == SQLITE_ROW && !*last; r++) *last = lookupMemAdd(m, r, st, 0);
    sqlite3_finalize(st);
    if (!*last) *last = lookupMemIndex(m);
    return m;
}

/* The rowids the store finds for expr, as "r,r,…". */
static const char *found(lookupMem *m, const char *expr) {
    static char out[256];
    sqlite3_value *v = val(expr);
    lookupKey k;
    out[0] = '\0';
    if (lookupKeyOf(v, &k) == 1)
        for (uint32_t r = lookupMemFirst(m, &k); r != LOOKUP_NONE; r = lookupMemNext(m, &k, r))
            snprintf(out + strlen(out), sizeof out - strlen(out), "%s%lld", out[0] ? "," : "", (long long)lookupMemRowid(m, r));
    sqlite3_value_free(v);
    return out;
}

int main(void) {
    sqlite3_open(":memory:", &db);

    /* numbers and numeric text key as the number */
    ok(sameKey("1", "1.0") == 1, "1 and 1.0 share a key");
    ok(sameKey("1", "'1'") == 1, "1 and '1' share a key");
    ok(sameKey("1", "' 1 '") == 1, "1 and ' 1 ' share a key (SQLite allows spaces around a number)");
    ok(sameKey("5", "'5e0'") == 1, "5 and '5e0' share a key");
    ok(sameKey("7", "'007'") == 1, "7 and '007' share a key");
    ok(sameKey("-0.0", "0") == 1, "-0.0 and 0 share a key");
    ok(sameKey("'.5'", "0.5") == 1, "'.5' and 0.5 share a key");
    /* text that is not a number keys as itself */
    ok(sameKey("'abc'", "'abc'") == 1, "'abc' keys as itself");
    ok(sameKey("'1abc'", "1") == 0, "'1abc' is not the number 1");
    ok(sameKey("'0x10'", "16") == 0, "'0x10' is not the number 16 (SQLite reads no hex text)");
    ok(sameKey("'abc'", "x'616263'") == 0, "a text and a BLOB of the same bytes differ (SQLite never finds them equal)");
    ok(sameKey("x'01'", "x'01'") == 1, "equal BLOBs share a key");
    ok(sameKey("''", "''") == 1, "the empty text keys as itself");
    ok(sameKey("NULL", "NULL") == -1, "NULL has no key");

    /* a value's key leaves the value as it was: '1' stays text */
    sqlite3_value *t = val("'1'");
    lookupKey k;
    lookupKeyOf(t, &k);
    ok(sqlite3_value_type(t) == SQLITE_TEXT, "keying '1' leaves it a text");
    sqlite3_value_free(t);

    /* rows found in the order added, NULL keys never */
    int last;
    lookupMem *m = store("(1,'a'),('1','b'),(2,'c'),(NULL,'d'),(1.0,'e'),('x',NULL),(x'78','f'),('',1)", 1 << 20, &last);
    ok(m && last == 0, "a store of 8 rows is built");
    ok(m && lookupMemRows(m) == 8, "it holds 8 rows");
    ok(m && strcmp(found(m, "1"), "0,1,4") == 0, "1 finds rows 0, 1 and 4 in order: %s", m ? found(m, "1") : "");
    ok(m && strcmp(found(m, "'2'"), "2") == 0, "'2' finds row 2");
    ok(m && strcmp(found(m, "'x'"), "5") == 0, "'x' finds the text, not the BLOB x'78'");
    ok(m && strcmp(found(m, "x'78'"), "6") == 0, "x'78' finds the BLOB");
    ok(m && strcmp(found(m, "''"), "7") == 0, "'' finds the empty text");
    ok(m && strcmp(found(m, "NULL"), "") == 0, "NULL finds nothing");
    ok(m && strcmp(found(m, "3"), "") == 0, "3 finds nothing");
    lookupMemFree(m);

    /* many rows: every key found once, through the chains */
    char values[1024] = "";
    for (int i = 0; i < 60; i++) snprintf(values + strlen(values), sizeof values - strlen(values), "%s(%d,%d)", i ? "," : "", i % 30, i);
    m = store(values, 1 << 20, &last);
    int all = m && last == 0;
    for (int i = 0; all && i < 30; i++) {
        char expr[16], want[32];
        snprintf(expr, sizeof expr, "%d", i);
        snprintf(want, sizeof want, "%d,%d", i, i + 30);
        all = strcmp(found(m, expr), want) == 0;
    }
    ok(all, "60 rows under 30 keys: each key finds its two rows");
    lookupMemFree(m);

    /* the cap: a store that would pass it says so */
    m = store("(1, 'a')", 4096, &last);
    ok(last == 1, "a store capped at 4096 bytes refuses its first row (its arrays alone pass the cap)");
    lookupMemFree(m);
    m = store("(1, ''), (2, 'text')", 20000, &last);
    ok(last == 1, "a store capped at 20000 bytes refuses the first text (its bytes would pass the cap)");
    lookupMemFree(m);
    m = store("(1, 'a')", 256 * 1024, &last);
    ok(last == 0 && lookupMemRows(m) == 1, "within its cap it takes the row");
    lookupMemFree(m);

    sqlite3_close(db);
    return tapDone();
}
