/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqlscan.h - the tokens of SQL text as far as lake needs them: what is a
 * string literal or a comment (never a name), what is an identifier
 * (bare, "quoted", `quoted` or [quoted]) and what is anything else.  The
 * one scanner behind the names a statement declares (query/vtab.h) and
 * the AT clauses rewritten before SQLite reads it (query/at.h).
 */
#ifndef LAKE_QUERY_SQLSCAN_H
#define LAKE_QUERY_SQLSCAN_H

#include <stddef.h>

typedef enum {
    SQLTOK_END,     /* the text's NUL */
    SQLTOK_BLANK,   /* a run of white space */
    SQLTOK_COMMENT, /* -- to the end of the line, or a block comment (to the end if unclosed) */
    SQLTOK_STRING,  /* a '…' literal, '' inside (to the end if unclosed) */
    SQLTOK_IDENT,   /* a bare word: [A-Za-z_][A-Za-z0-9_]* */
    SQLTOK_QUOTED,  /* a quoted identifier, its quote doubled inside ("" ``; [] has none) */
    SQLTOK_OTHER    /* one character of anything else (a digit, '.', '(' …) */
} sqlTokenKind;

typedef struct sqlToken {
    sqlTokenKind kind;
    const char *start, *end; /* the token's text: [start, end) */
} sqlToken;

/* The token at p. */
sqlToken sqlNextToken(const char *p);

/* The name an SQLTOK_IDENT or SQLTOK_QUOTED token spells (quotes removed,
 * doubled quotes undone) into buf, cut to cap - 1 bytes. */
void sqlTokenName(const sqlToken *t, char *buf, size_t cap);

#endif
