/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_sqlscan.c - the SQL tokens lake reads (query/sqlscan.h) and the AT
 * clauses rewritten on them (query/at.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/at.h"
#include "query/sqlscan.h"
#include "tap.h"

/* The tokens of sql as "KIND:text|…", blanks left out. */
static const char *tokens(const char *sql) {
    static char out[1024];
    static const char kinds[] = {'E', 'B', 'C', 'S', 'I', 'Q', 'O'};
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = sql;;) {
        sqlToken t = sqlNextToken(p);
        if (t.kind == SQLTOK_END || t.end <= p) break;
        if (t.kind != SQLTOK_BLANK)
            n += (size_t)snprintf(out + n, sizeof out - n, "%s%c:%.*s", n ? "|" : "", kinds[t.kind],
                                  (int)(t.end - t.start), t.start);
        p = t.end;
    }
    return out;
}

/* The name the first token of sql spells. */
static const char *name(const char *sql, size_t cap) {
    static char buf[64];
    sqlToken t = sqlNextToken(sql);
    sqlTokenName(&t, buf, cap);
    return buf;
}

/* queryAtRewrite of sql: the rewritten text, "-" for none, or "ERR n". */
static const char *rewrite(const char *sql) {
    static char out[512];
    char *r = NULL;
    lakeError err = {0};
    int rc = queryAtRewrite(sql, &r, &err);
    if (rc) snprintf(out, sizeof out, "ERR %d", rc);
    else if (!r) snprintf(out, sizeof out, "-");
    else snprintf(out, sizeof out, "%s%s", r, strlen(r) == strlen(sql) ? "" : " (another length)");
    free(r);
    return out;
}

int main(void) {
    ok(strcmp(tokens("SELECT a.b, 'x''y' -- c\n/* d */ \"q\"\"r\" `s` [t u] 1e5;"),
              "I:SELECT|I:a|O:.|I:b|O:,|S:'x''y'|C:-- c|C:/* d */|Q:\"q\"\"r\"|Q:`s`|Q:[t u]|O:1|I:e5|O:;") == 0,
       "words, quoted names, strings, both comments, one character of anything else: %s",
       tokens("SELECT a.b, 'x''y' -- c\n/* d */ \"q\"\"r\" `s` [t u] 1e5;"));
    ok(strcmp(tokens("'open"), "S:'open") == 0 && strcmp(tokens("/* open"), "C:/* open") == 0 &&
           strcmp(tokens("\"open"), "Q:\"open") == 0,
       "an unclosed string, comment or quoted name runs to the end");
    ok(strcmp(name("\"a\"\"b\" x", 64), "a\"b") == 0 && strcmp(name("[a\"b]", 64), "a\"b") == 0 &&
           strcmp(name("`a``b`", 64), "a`b") == 0 && strcmp(name("plain rest", 64), "plain") == 0,
       "a name without its quotes, a doubled quote once");
    ok(strcmp(name("abcdef", 4), "abc") == 0 && strcmp(name("\"abcdef\"", 4), "abc") == 0,
       "a name cut to the buffer");

    ok(strcmp(rewrite("SELECT * FROM d.t AT (VERSION => 12) WHERE k = 1"),
              "SELECT * FROM d.\"t@v12\"              WHERE k = 1") == 0,
       "AT (VERSION => N): the name rewritten, the text padded to the same length");
    ok(strcmp(rewrite("SELECT 1 FROM d /* c */ . \"t\" at(timestamp=>'2026-12-01T01:00:00+01:00') x"),
              "SELECT 1 FROM d /* c */ . \"t@t2026-12-01T00:00:00Z\"                      x") == 0,
       "a quoted table, a comment before the dot, any case, a time to UTC: %s",
       rewrite("SELECT 1 FROM d /* c */ . \"t\" at(timestamp=>'2026-12-01T01:00:00+01:00') x"));
    ok(strcmp(rewrite("SELECT 'd.t AT (VERSION => 1)' -- d.t AT (VERSION => 2)\nFROM x"), "-") == 0,
       "nothing in a string or a comment");
    ok(strcmp(rewrite("SELECT at FROM d.t at"), "-") == 0, "a table aliased at: no clause, no change");
    ok(strcmp(rewrite("SELECT * FROM d.t AT (VERSION => x)"), "ERR 64") == 0 &&
           strcmp(rewrite("SELECT * FROM d.t AT (TIMESTAMP => 'yesterday')"), "ERR 64") == 0,
       "a clause of another form, or not an RFC 3339 time: 64");
    return tapDone();
}
