/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqlval.h - test values as SQLite makes them: sqlval(db, "1.5"),
 * sqlval(db, "x'00ff'"), sqlval(db, "NULL") … (the caller frees with
 * sqlite3_value_free; NULL when the expression does not compile).
 */
#ifndef LAKE_TEST_SQLVAL_H
#define LAKE_TEST_SQLVAL_H

#include <sqlite3.h>
#include <stdio.h>

static sqlite3_value *sqlval(sqlite3 *db, const char *expr) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s", expr);
    sqlite3_stmt *st = NULL;
    sqlite3_value *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_value_dup(sqlite3_column_value(st, 0));
    sqlite3_finalize(st);
    return v;
}

#endif
