/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * at.c - AT (VERSION => N) and AT (TIMESTAMP => '…') rewritten into
 * names SQLite reads (see at.h).
 */
#include "query/at.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/names.h"
#include "core/rfc3339.h"
#include "query/sqlscan.h"

static const char *blanks(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
    return p;
}

static int identChar(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A bare word at p equal to w (any case): the end of it, else NULL. */
static const char *word(const char *p, const char *w) {
    size_t n = strlen(w);
    return strncasecmp(p, w, n) == 0 && !identChar(p[n]) ? p + n : NULL;
}

/* The clause after AT at p ("(VERSION => 12)"): its end, with *version or
 * time set; NULL when it is not one (err set when it starts like one). */
static const char *clause(const char *p, int64_t *version, char time[32], lakeError *err) {
    const char *q = blanks(p), *e;
    if (*q != '(') return NULL;
    q = blanks(q + 1);
    int isVersion = (e = word(q, "VERSION")) != NULL;
    if (!e && !(e = word(q, "TIMESTAMP"))) goto bad;
    q = blanks(e);
    if (q[0] != '=' || q[1] != '>') goto bad;
    q = blanks(q + 2);
    if (isVersion) {
        char *end;
        if (!isdigit((unsigned char)*q)) goto bad;
        long long v = strtoll(q, &end, 10);
        if (v < 0 || identChar(*end)) goto bad;
        *version = v;
        q = end;
    } else {
        char lit[64];
        size_t n = 0;
        if (*q != '\'') goto bad;
        for (q++; *q && !(*q == '\'' && q[1] != '\''); q += *q == '\'' ? 2 : 1)
            if (n < sizeof lit - 1) lit[n++] = *q;
        if (!*q) goto bad;
        lit[n] = '\0';
        q++;
        long long secs;
        if (n >= sizeof lit - 1 || rfc3339Parse(lit, &secs, NULL, NULL)) {
            errSet(err, LAKE_EUSAGE, "AT (TIMESTAMP => '%s'): not an RFC 3339 time such as 2026-12-01T00:00:00Z", lit);
            return NULL;
        }
        rfc3339Format(time, secs); /* UTC, whole seconds: as commits are recorded */
    }
    q = blanks(q);
    if (*q != ')') goto bad;
    return q + 1;
bad:
    errSet(err, LAKE_EUSAGE, "a table is read at a version with AT (VERSION => N) or AT (TIMESTAMP => 'TIME')");
    return NULL;
}

int queryAtRewrite(const char *sql, char **out, lakeError *err) {
    *out = NULL;
    char *copy = NULL;
    /* the token before, blanks and comments aside: 0 other, 1 an
     * identifier, 2 "identifier .", 3 the T of "NS . T" (at tStart, its
     * name in t) */
    int state = 0;
    const char *tStart = NULL;
    char t[NAME_MAX_LEN + 1];
    for (const char *p = sql;;) {
        sqlToken k = sqlNextToken(p);
        if (k.kind == SQLTOK_END) break;
        p = k.end;
        if (k.kind == SQLTOK_BLANK || k.kind == SQLTOK_COMMENT) continue;
        if (k.kind == SQLTOK_IDENT && state == 3 && word(k.start, "AT")) {
            /* NS.T AT (…): the clause, when one follows */
            int64_t version = -1;
            char time[32] = "";
            lakeError cerr = {0};
            const char *end = clause(k.end, &version, time, &cerr);
            if (end) {
                char rep[200];
                int n = version >= 0 ? snprintf(rep, sizeof rep, "\"%s%cv%lld\"", t, QUERY_AT_MARK, (long long)version)
                                     : snprintf(rep, sizeof rep, "\"%s%ct%s\"", t, QUERY_AT_MARK, time);
                if (n < 0 || (size_t)n > (size_t)(end - tStart) || strchr(t, '"')) {
                    free(copy);
                    return errSet(err, LAKE_EUSAGE, "%s AT (...): cannot be read at a version", t);
                }
                if (!copy && !(copy = strdup(sql))) return errSet(err, LAKE_EFAIL, "out of memory");
                char *at = copy + (tStart - sql);
                memcpy(at, rep, (size_t)n);
                memset(at + n, ' ', (size_t)(end - tStart) - (size_t)n);
                p = end;
                state = 0;
                continue;
            }
            if (cerr.code) { /* it started like a clause and is not one */
                free(copy);
                *err = cerr;
                return err->code;
            }
        }
        if (k.kind == SQLTOK_IDENT || k.kind == SQLTOK_QUOTED) {
            if (state == 2) {
                state = 3;
                tStart = k.start;
                sqlTokenName(&k, t, sizeof t);
            } else {
                state = 1;
            }
        } else {
            state = state == 1 && *k.start == '.' ? 2 : 0;
        }
    }
    *out = copy;
    return 0;
}

int queryAtSplit(const char *name, char *base, size_t n, int64_t *version, char time[32]) {
    *version = -1;
    time[0] = '\0';
    const char *at = strchr(name, QUERY_AT_MARK);
    size_t len = at ? (size_t)(at - name) : strlen(name);
    if (len + 1 > n) return -1;
    memcpy(base, name, len);
    base[len] = '\0';
    if (!at) return 0;
    if (at[1] == 'v') {
        char *end;
        long long v = strtoll(at + 2, &end, 10);
        if (end == at + 2 || *end || v < 0) return -1;
        *version = v;
        return 0;
    }
    long long secs;
    if (at[1] != 't' || strlen(at + 2) > 31 || rfc3339Parse(at + 2, &secs, NULL, NULL)) return -1;
    snprintf(time, 32, "%s", at + 2);
    return 0;
}
