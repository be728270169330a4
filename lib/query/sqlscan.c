/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sqlscan.c - SQL tokens (see sqlscan.h).
 */
#include "query/sqlscan.h"

#include <string.h>

static int isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int identStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int identChar(char c) { return identStart(c) || (c >= '0' && c <= '9'); }

sqlToken sqlNextToken(const char *p) {
    sqlToken t = {SQLTOK_OTHER, p, p + 1};
    const char *e = p;
    if (!*p) {
        t.kind = SQLTOK_END;
        t.end = p;
    } else if (isBlank(*p)) {
        while (isBlank(*e)) e++;
        t.kind = SQLTOK_BLANK;
        t.end = e;
    } else if (p[0] == '-' && p[1] == '-') {
        t.kind = SQLTOK_COMMENT;
        t.end = p + strcspn(p, "\n");
    } else if (p[0] == '/' && p[1] == '*') {
        const char *close = strstr(p + 2, "*/");
        t.kind = SQLTOK_COMMENT;
        t.end = close ? close + 2 : p + strlen(p);
    } else if (*p == '\'') {
        for (e = p + 1; *e && !(*e == '\'' && e[1] != '\''); e += *e == '\'' ? 2 : 1) {}
        t.kind = SQLTOK_STRING;
        t.end = e + (*e != '\0');
    } else if (*p == '"' || *p == '`' || *p == '[') {
        char close = *p == '[' ? ']' : *p;
        for (e = p + 1; *e && !(*e == close && (close == ']' || e[1] != close)); e++)
            if (*e == close) e++; /* a doubled quote */
        t.kind = SQLTOK_QUOTED;
        t.end = e + (*e != '\0');
    } else if (identStart(*p)) {
        while (identChar(*e)) e++;
        t.kind = SQLTOK_IDENT;
        t.end = e;
    }
    return t;
}

void sqlTokenName(const sqlToken *t, char *buf, size_t cap) {
    size_t n = 0;
    if (t->kind == SQLTOK_IDENT) {
        for (const char *p = t->start; p < t->end && n + 1 < cap; p++) buf[n++] = *p;
    } else if (t->kind == SQLTOK_QUOTED) {
        char close = *t->start == '[' ? ']' : *t->start;
        const char *last = t->end - (t->end > t->start + 1 && t->end[-1] == close); /* unclosed: to the end */
        for (const char *p = t->start + 1; p < last && n + 1 < cap; p++) {
            buf[n++] = *p;
            if (*p == close && close != ']') p++; /* a doubled quote is one */
        }
    }
    if (cap) buf[n] = '\0';
}
