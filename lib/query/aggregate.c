/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * aggregate.c - aggregates computed segment by segment and merged (see
 * aggregate.h).
 */
#include "query/aggregate.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonstrict.h"
#include "core/thread.h"
#include "core/log.h"
#include "query/prefetch.h"
#include "query/prune.h"

/* --- tokens -------------------------------------------------------------- */

typedef enum { T_ID, T_STR, T_NUM, T_PARAM, T_OP } tokKind;

typedef struct tok {
    tokKind kind;
    int quoted;    /* T_ID: "quoted", `quoted` or [quoted] */
    const char *p; /* its text in the statement */
    int n;
} tok;

static int isIdStart(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80; }
static int isIdChar(unsigned char c) { return isIdStart(c) || (c >= '0' && c <= '9') || c == '$'; }

/* Split the statement at sql into tokens (comments and blanks dropped),
 * up to its first ';' outside quotes; *end is the text after it.  -1 for
 * want of memory, 0 for text that is no statement to split (an
 * unterminated quote or comment). */
static int lex(const char *sql, tok **out, int *count, const char **end) {
    tok *v = NULL;
    int n = 0, cap = 0;
    const char *p = sql;
    *out = NULL;
    *count = 0;
    while (*p && *p != ';') {
        unsigned char c = (unsigned char)*p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') { p++; continue; }
        if (p[0] == '-' && p[1] == '-') { p += strcspn(p, "\n"); continue; }
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            if (!e) goto refuse;
            p = e + 2;
            continue;
        }
        tok t = {T_OP, 0, p, 1};
        if (c == '\'' || ((c == 'x' || c == 'X') && p[1] == '\'')) { /* a string, or a blob x'…' */
            const char *q = p + (c == '\'' ? 1 : 2);
            for (;; q++) {
                if (!*q) goto refuse;
                if (*q == '\'' && q[1] == '\'') q++;
                else if (*q == '\'') break;
            }
            t = (tok){T_STR, 0, p, (int)(q + 1 - p)};
        } else if (c == '"' || c == '`' || c == '[') {
            char close = c == '[' ? ']' : (char)c;
            const char *q = p + 1;
            for (;; q++) {
                if (!*q) goto refuse;
                if (*q == close && close != ']' && q[1] == close) q++;
                else if (*q == close) break;
            }
            t = (tok){T_ID, 1, p, (int)(q + 1 - p)};
        } else if (isIdStart(c)) {
            const char *q = p;
            while (isIdChar((unsigned char)*q)) q++;
            t = (tok){T_ID, 0, p, (int)(q - p)};
        } else if ((c >= '0' && c <= '9') || (c == '.' && p[1] >= '0' && p[1] <= '9')) {
            /* as SQLite reads them: 0x and hex digits, and nothing more (a
             * name right after is another token); else digits, a point,
             * digits, an exponent, and any name characters after them
             * (which make the whole an error) */
            const char *q = p;
            if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
                for (q = p + 2; isxdigit((unsigned char)*q); q++) {}
            } else {
                while (isdigit((unsigned char)*q)) q++;
                if (*q == '.')
                    for (q++; isdigit((unsigned char)*q); q++) {}
                if ((*q == 'e' || *q == 'E') &&
                    (isdigit((unsigned char)q[1]) || ((q[1] == '+' || q[1] == '-') && isdigit((unsigned char)q[2]))))
                    for (q += 2; isdigit((unsigned char)*q); q++) {}
                while (isIdChar((unsigned char)*q)) q++;
            }
            t = (tok){T_NUM, 0, p, (int)(q - p)};
        } else if (c == '?' || c == ':' || c == '@' || c == '$' || c == '#') { /* #NAME too */
            t.kind = T_PARAM;
        } else {
            static const char *const two[] = {"||", "<<", ">>", "<=", ">=", "==", "!=", "<>", "->"};
            if (strncmp(p, "->>", 3) == 0) t.n = 3;
            else
                for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
                    if (strncmp(p, two[i], 2) == 0) t.n = 2;
        }
        if (n == cap) {
            tok *more = realloc(v, sizeof *v * (size_t)(cap = cap ? cap * 2 : 64));
            if (!more) {
                free(v);
                return -1;
            }
            v = more;
        }
        v[n++] = t;
        p += t.n;
    }
    *end = *p == ';' ? p + 1 : p;
    *out = v;
    *count = n;
    return 1;
refuse:
    free(v);
    return 0;
}

/* Is t the bare word w (any case)? */
static int isWord(const tok *t, const char *w) {
    return t->kind == T_ID && !t->quoted && (size_t)t->n == strlen(w) && sqlite3_strnicmp(t->p, w, t->n) == 0;
}

static int isOp(const tok *t, const char *op) {
    return t->kind == T_OP && (size_t)t->n == strlen(op) && strncmp(t->p, op, (size_t)t->n) == 0;
}

/* An identifier's name (quotes removed, doubled quotes undone), into buf. */
static void idName(const tok *t, char *buf, size_t size) {
    size_t k = 0;
    if (!t->quoted) {
        snprintf(buf, size, "%.*s", t->n, t->p);
        return;
    }
    for (int i = 1; i < t->n - 1 && k + 1 < size; i++) {
        buf[k++] = t->p[i];
        if (t->p[i] == t->p[0] && t->p[0] != '[') i++;
    }
    buf[k] = '\0';
}

/* Do two tokens say the same? (identifiers by name, ignoring case) */
static int tokEq(const tok *a, const tok *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == T_ID) {
        char x[256], y[256];
        idName(a, x, sizeof x);
        idName(b, y, sizeof y);
        return sqlite3_stricmp(x, y) == 0;
    }
    return a->n == b->n && memcmp(a->p, b->p, (size_t)a->n) == 0;
}

/* --- the statement's parts ------------------------------------------------ */

typedef struct span { int a, b; } span; /* tokens [a, b) */

/* The aggregates split into partials, and those left to SQLite's
 * row-by-row path (which knows them whole). */
static const char *const splittable[] = {"count", "sum", "total", "avg", "min", "max"};
static const char *const otherAggregates[] = {"group_concat", "string_agg", "json_group_array", "json_group_object",
                                              "jsonb_group_array", "jsonb_group_object"};
/* Words that may stand outside an aggregate without being a column. */
static const char *const keywords[] = {"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "GLOB", "REGEXP",
                                       "MATCH", "ESCAPE", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "AS", "TRUE",
                                       "FALSE", "ISNULL", "NOTNULL", "CURRENT_DATE", "CURRENT_TIME",
                                       "CURRENT_TIMESTAMP"};
/* Those of them an expression cannot end with: a name after one is an
 * operand, not an alias. */
static const char *const operatorWords[] = {"AND", "OR", "NOT", "IS", "IN", "BETWEEN", "LIKE", "GLOB", "REGEXP",
                                            "MATCH", "ESCAPE", "CASE", "WHEN", "THEN", "ELSE", "CAST", "AS",
                                            "COLLATE"};
/* Those of them SQLite's parser never takes for a name, so never an
 * alias; TRUE, FALSE, CAST, CURRENT_DATE … are names to it (after an
 * expression, an alias), and so is an END that closes no CASE. */
static const char *const neverAliases[] = {"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "GLOB",
                                           "REGEXP", "MATCH", "ESCAPE", "CASE", "WHEN", "THEN", "ELSE", "AS",
                                           "ISNULL", "NOTNULL"};
/* Words after FROM NS.T that make it a join (or a hint SQLite would
 * refuse on a virtual table). */
static const char *const joins[] = {"JOIN", "NATURAL", "LEFT", "RIGHT", "FULL", "INNER", "CROSS", "INDEXED", "NOT"};
/* Words that end an ORDER BY term after its expression. */
static const char *const orderWords[] = {"ASC", "DESC", "NULLS", "FIRST", "LAST"};
/* Words that take the statement off this path wherever they stand. */
static const char *const refused[] = {"SELECT", "DISTINCT", "OVER", "FILTER", "WINDOW", "UNION", "INTERSECT",
                                      "EXCEPT", "EXISTS", "WITH", "RAISE"};

static int inList(const tok *t, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isWord(t, list[i])) return 1;
    return 0;
}
#define IN_LIST(t, list) inList((t), (list), sizeof(list) / sizeof(list)[0])

/* Does the span's last token, an END, close a CASE in it? */
static int closesCase(const tok *t, span s) {
    if (!isWord(&t[s.b - 1], "END")) return 0;
    int open = 0;
    for (int i = s.a; i < s.b - 1; i++) open += isWord(&t[i], "CASE") - isWord(&t[i], "END");
    return open > 0;
}

typedef struct planner {
    const tok *t;
    int n;
    span *items;       /* each item's expression */
    span *alias;       /* its alias (a one-token span), or {0, 0} */
    int nitems;
    span from, where, having, limit;
    span *group, *order;
    int ngroup, norder;
    span *groups;      /* the group keys, as expressions */
    sqlite3_str *partials; /* the partials' SQL, ", "-separated */
    char **pkeys;      /* each partial's SQL, to share equal ones */
    int npartials;
    int oom;
} planner;

/* The index of the ')' closing the '(' at i, or -1. */
static int closing(const planner *pl, int i, int b) {
    for (int depth = 0; i < b; i++) {
        if (isOp(&pl->t[i], "(")) depth++;
        else if (isOp(&pl->t[i], ")") && --depth == 0) return i;
    }
    return -1;
}

/* Split [a, b) at its top-level commas into *parts (to free): 1, or 0
 * for an empty part, -1 for want of memory (*parts then NULL). */
static int splitList(const planner *pl, span s, span **parts, int *n) {
    *parts = NULL;
    *n = 0;
    int depth = 0, start = s.a;
    for (int i = s.a; i <= s.b; i++) {
        if (i < s.b && isOp(&pl->t[i], "(")) depth++;
        else if (i < s.b && isOp(&pl->t[i], ")")) depth--;
        if (i == s.b || (depth == 0 && isOp(&pl->t[i], ","))) {
            span *more = i == start ? NULL : realloc(*parts, sizeof **parts * (size_t)(*n + 1));
            if (!more) {
                free(*parts);
                *parts = NULL;
                return i == start ? 0 : -1; /* an empty part, or no memory */
            }
            *parts = more;
            (*parts)[(*n)++] = (span){start, i};
            start = i + 1;
        }
    }
    return 1;
}

static int spanEq(const planner *pl, span x, span y) {
    if (x.b - x.a != y.b - y.a) return 0;
    for (int i = 0; i < x.b - x.a; i++)
        if (!tokEq(&pl->t[x.a + i], &pl->t[y.a + i])) return 0;
    return 1;
}

/* The statement's text of [a, b), as written. */
static char *spanText(const planner *pl, span s) {
    if (s.a >= s.b) return sqlite3_mprintf("");
    const tok *first = &pl->t[s.a], *last = &pl->t[s.b - 1];
    return sqlite3_mprintf("%.*s", (int)(last->p + last->n - first->p), first->p);
}

/* Is there a call of an aggregate function at token i of [a, b)?  (min
 * and max of several arguments are scalar functions.) */
static int isAggregateCall(const planner *pl, int i, span s) {
    const tok *t = &pl->t[i];
    if (i + 1 >= s.b || !isOp(&pl->t[i + 1], "(")) return 0;
    if (IN_LIST(t, otherAggregates)) return 1;
    if (!IN_LIST(t, splittable)) return 0;
    if (!isWord(t, "min") && !isWord(t, "max")) return 1;
    for (int k = i + 2, depth = 1; k < s.b && depth > 0; k++) {
        if (isOp(&pl->t[k], "(")) depth++;
        else if (isOp(&pl->t[k], ")")) depth--;
        else if (depth == 1 && isOp(&pl->t[k], ",")) return 0;
    }
    return 1;
}

/* Does [a, b) call an aggregate function? */
static int hasAggregate(const planner *pl, span s) {
    for (int i = s.a; i < s.b; i++)
        if (isAggregateCall(pl, i, s)) return 1;
    return 0;
}

/* The partial column holding sql, added when new: its name "pN". */
static int partial(planner *pl, char *sql) {
    if (!sql) {
        pl->oom = 1;
        return -1;
    }
    for (int i = 0; i < pl->npartials; i++)
        if (strcmp(pl->pkeys[i], sql) == 0) {
            sqlite3_free(sql);
            return i;
        }
    char **more = realloc(pl->pkeys, sizeof *more * (size_t)(pl->npartials + 1));
    if (!more) {
        sqlite3_free(sql);
        pl->oom = 1;
        return -1;
    }
    pl->pkeys = more;
    pl->pkeys[pl->npartials] = sql;
    sqlite3_str_appendf(pl->partials, "%s%s", pl->npartials ? ", " : "", sql);
    return pl->npartials++;
}

/* Write into out the expression [a, b) over the partials' table: each
 * aggregate as the merge of its partials, the whole as gN when it is
 * group key N.  0 when it cannot be (a column outside every aggregate
 * that is not a whole group key, an aggregate that does not split). */
static int rewrite(planner *pl, span s, sqlite3_str *out) {
    for (int g = 0; g < pl->ngroup; g++)
        if (spanEq(pl, s, pl->groups[g])) {
            sqlite3_str_appendf(out, "g%d", g);
            return 1;
        }
    for (int i = s.a; i < s.b; i++) {
        const tok *t = &pl->t[i];
        int call = i + 1 < s.b && isOp(&pl->t[i + 1], "(");
        const char *sep = i > s.a ? " " : "";
        if (isWord(t, "COLLATE") || t->kind == T_PARAM) return 0;
        if (isAggregateCall(pl, i, s)) {
            if (IN_LIST(t, otherAggregates)) return 0;
            int close = closing(pl, i + 1, s.b);
            if (close < 0) return 0;
            span arg = {i + 2, close};
            span *parts;
            int nparts, r = splitList(pl, arg, &parts, &nparts);
            free(parts);
            if (r < 0) {
                pl->oom = 1;
                return 0;
            }
            if (r == 0 || nparts != 1 || hasAggregate(pl, arg)) return 0;
            for (int k = arg.a; k < arg.b; k++)
                if (isWord(&pl->t[k], "COLLATE")) return 0;
            int star = arg.b - arg.a == 1 && isOp(&pl->t[arg.a], "*");
            if (star && !isWord(t, "count")) return 0;
            char *text = star ? sqlite3_mprintf("*") : spanText(pl, arg);
            if (!text) {
                pl->oom = 1;
                return 0;
            }
            char lower[8];
            snprintf(lower, sizeof lower, "%.*s", t->n, t->p);
            for (char *c = lower; *c; c++) *c = (char)(*c | 0x20);
            if (strcmp(lower, "avg") == 0) {
                int sum = partial(pl, sqlite3_mprintf("total(%s)", text)), cnt = partial(pl, sqlite3_mprintf("count(%s)", text));
                sqlite3_str_appendf(out, "%s(total(p%d) / sum(p%d))", sep, sum, cnt);
            } else if (strcmp(lower, "count") == 0) {
                sqlite3_str_appendf(out, "%scoalesce(sum(p%d), 0)", sep, partial(pl, sqlite3_mprintf("count(%s)", text)));
            } else {
                sqlite3_str_appendf(out, "%s%s(p%d)", sep, lower, partial(pl, sqlite3_mprintf("%s(%s)", lower, text)));
            }
            sqlite3_free(text);
            if (pl->oom) return 0;
            i = close;
            continue;
        }
        if (t->kind == T_ID && !call && !IN_LIST(t, keywords) && !(i > s.a && isWord(&pl->t[i - 1], "AS")))
            return 0; /* a column outside an aggregate */
        sqlite3_str_appendf(out, "%s%.*s", sep, t->n, t->p);
    }
    return 1;
}

/* Parse the statement's clauses into pl; 0 when it is not of the shape. */
static int parse(planner *pl) {
    const tok *t = pl->t;
    int n = pl->n, i = 1;
    if (n < 4 || !isWord(&t[0], "SELECT")) return 0;
    for (int k = 1; k < n; k++) {
        if (IN_LIST(&t[k], refused) || t[k].kind == T_PARAM) return 0;
        char id[16];
        idName(&t[k], id, sizeof id);
        /* a segment's rowid is not the table's (vtab.c, xRowid) */
        if (t[k].kind == T_ID && (sqlite3_stricmp(id, "rowid") == 0 || sqlite3_stricmp(id, "oid") == 0 ||
                                  sqlite3_stricmp(id, "_rowid_") == 0))
            return 0;
    }
    /* the items, up to FROM */
    int depth = 0, start = i;
    for (; i < n && !(depth == 0 && isWord(&t[i], "FROM")); i++) {
        if (isOp(&t[i], "(")) depth++;
        else if (isOp(&t[i], ")")) depth--;
    }
    if (i >= n) return 0;
    span *items;
    int r = splitList(pl, (span){start, i}, &items, &pl->nitems);
    if (r <= 0) {
        pl->oom = r < 0;
        return 0;
    }
    pl->items = items;
    if (!(pl->alias = calloc((size_t)pl->nitems, sizeof *pl->alias))) {
        pl->oom = 1;
        return 0;
    }
    for (int k = 0; k < pl->nitems; k++) {
        span *it = &pl->items[k];
        const tok *last = &t[it->b - 1];
        if (isOp(last, "*")) return 0; /* * and a.* */
        /* an alias: a name, or a string ('alias' is one to SQLite), after
         * AS or after the end of an expression */
        if ((last->kind == T_STR || (last->kind == T_ID && !IN_LIST(last, neverAliases) && !closesCase(t, *it))) &&
            it->b - it->a >= 2) {
            const tok *before = &t[it->b - 2];
            if (isWord(before, "AS")) {
                pl->alias[k] = (span){it->b - 1, it->b};
                it->b -= 2;
            } else if ((before->kind != T_OP || isOp(before, ")")) && !IN_LIST(before, operatorWords)) {
                pl->alias[k] = (span){it->b - 1, it->b}; /* "expr alias" */
                it->b -= 1;
            }
        }
        if (it->a >= it->b) return 0;
    }
    /* FROM NS.T [[AS] alias] */
    i++;
    if (i + 3 > n || t[i].kind != T_ID || !isOp(&t[i + 1], ".") || t[i + 2].kind != T_ID) return 0;
    pl->from = (span){i, i + 3};
    i += 3;
    static const char *const clauses[] = {"WHERE", "GROUP", "HAVING", "ORDER", "LIMIT"};
    if (i < n && isWord(&t[i], "AS")) i++;
    if (i < n && t[i].kind == T_ID && !IN_LIST(&t[i], clauses)) {
        if (IN_LIST(&t[i], joins)) return 0;
        pl->from.b = ++i; /* the alias is the span's last token */
    }
    /* the clauses, each up to the next at depth 0 */
    int have = 0; /* clauses seen, in order */
    while (i < n) {
        int which = -1;
        for (int c = 0; c < 5; c++)
            if (isWord(&t[i], clauses[c])) which = c;
        if (which < have) return 0; /* out of order, or something else */
        have = which + 1;
        i++;
        if (which == 1 || which == 3) {
            if (i >= n || !isWord(&t[i], "BY")) return 0;
            i++;
        }
        start = i;
        for (depth = 0; i < n; i++) {
            if (isOp(&t[i], "(")) depth++;
            else if (isOp(&t[i], ")")) depth--;
            else if (depth == 0 && which < 4 && IN_LIST(&t[i], clauses)) break;
        }
        span s = {start, i};
        if (s.a >= s.b || depth != 0) return 0;
        if (which == 0) pl->where = s;
        else if (which == 2) pl->having = s;
        else if (which == 4) pl->limit = s;
        else if ((r = splitList(pl, s, which == 1 ? &pl->group : &pl->order, which == 1 ? &pl->ngroup : &pl->norder)) <= 0) {
            pl->oom = r < 0;
            return 0;
        }
    }
    return 1;
}

/* The group keys as expressions: GROUP BY N is item N, GROUP BY alias
 * the aliased item (when no column has that name: SQLite then takes
 * the column). */
static int resolveGroups(planner *pl, const segmentSchema *cols) {
    if (pl->ngroup && !(pl->groups = calloc((size_t)pl->ngroup, sizeof *pl->groups))) {
        pl->oom = 1;
        return 0;
    }
    for (int g = 0; g < pl->ngroup; g++) {
        span s = pl->group[g];
        const tok *t = &pl->t[s.a];
        pl->groups[g] = s;
        if (s.b - s.a != 1) goto check;
        if (t->kind == T_NUM) {
            char *e;
            long k = strtol(t->p, &e, 10);
            if (e != t->p + t->n || k < 1 || k > pl->nitems) return 0;
            pl->groups[g] = pl->items[k - 1];
        } else if (t->kind == T_ID) {
            for (int k = 0; k < pl->nitems; k++) {
                if (pl->alias[k].b == 0 || !tokEq(t, &pl->t[pl->alias[k].a])) continue;
                char name[256];
                idName(t, name, sizeof name);
                if (segmentSchemaFind(cols, name) >= 0) return 0; /* a column and an alias: leave it to SQLite */
                pl->groups[g] = pl->items[k];
            }
        }
    check:
        if (hasAggregate(pl, pl->groups[g])) return 0;
        for (int i = pl->groups[g].a; i < pl->groups[g].b; i++)
            if (isWord(&pl->t[i], "COLLATE")) return 0;
    }
    return 1;
}

/* sqlite3_str_finish, but "" (not NULL) for an empty string: NULL only
 * when memory ran out. */
static char *finish(sqlite3_str *s) {
    int failed = sqlite3_str_errcode(s) != SQLITE_OK;
    char *text = sqlite3_str_finish(s);
    if (failed) {
        sqlite3_free(text);
        return NULL;
    }
    return text ? text : sqlite3_mprintf("");
}

static void plannerFree(planner *pl) {
    free(pl->items);
    free(pl->alias);
    free(pl->group);
    free(pl->order);
    free(pl->groups);
    for (int i = 0; i < pl->npartials; i++) sqlite3_free(pl->pkeys[i]);
    free(pl->pkeys);
    sqlite3_free(sqlite3_str_finish(pl->partials));
}

void aggregatePlanFree(aggregatePlan *plan) {
    sqlite3_free(plan->ns);
    sqlite3_free(plan->name);
    sqlite3_free(plan->probe);
    sqlite3_free(plan->segment);
    free(plan->groupItem);
    for (int i = 0; i < plan->nitems && plan->items; i++) sqlite3_free(plan->items[i]);
    free(plan->items);
    sqlite3_free(plan->tail);
    memset(plan, 0, sizeof *plan);
}

int aggregatePlanMake(const char *sql, aggregateSchemaOf schemaOf, void *arg, aggregatePlan *plan) {
    memset(plan, 0, sizeof *plan);
    planner pl = {0};
    tok *toks = NULL;
    int ok = 0;
    char ns[256], name[256], alias[256];
    const char *end;
    sqlite3_str *tail = NULL;
    int r = lex(sql, &toks, &pl.n, &end);
    if (r <= 0) return r;
    pl.t = toks;
    pl.partials = sqlite3_str_new(NULL);
    if (!parse(&pl)) goto out;
    idName(&toks[pl.from.a], ns, sizeof ns);
    idName(&toks[pl.from.a + 2], name, sizeof name);
    idName(&toks[pl.from.b - 1], alias, sizeof alias);
    const segmentSchema *cols = schemaOf(arg, ns, name);
    if (!cols || !resolveGroups(&pl, cols)) goto out;
    if (!(plan->items = calloc((size_t)pl.nitems, sizeof *plan->items))) goto oom;
    plan->nitems = pl.nitems;
    for (int k = 0; k < pl.nitems; k++) {
        sqlite3_str *s = sqlite3_str_new(NULL);
        ok = rewrite(&pl, pl.items[k], s);
        plan->items[k] = finish(s);
        if (!ok || !plan->items[k]) goto out;
    }
    ok = 0;
    tail = sqlite3_str_new(NULL);
    for (int g = 0; g < pl.ngroup; g++) sqlite3_str_appendf(tail, "%s g%d", g ? "," : " GROUP BY", g);
    if (pl.having.b) {
        sqlite3_str_appendall(tail, " HAVING ");
        if (!rewrite(&pl, pl.having, tail)) goto out;
    }
    for (int o = 0; o < pl.norder; o++) {
        span s = pl.order[o];
        int b = s.b; /* the expression, before ASC/DESC and NULLS FIRST/LAST */
        while (b > s.a && IN_LIST(&toks[b - 1], orderWords)) b--;
        if (b == s.a) goto out;
        sqlite3_str_appendall(tail, o ? ", " : " ORDER BY ");
        int alone = b - s.a == 1, kept = 0; /* a position or an alias stays as it is */
        if (alone && toks[s.a].kind == T_NUM) kept = 1;
        for (int k = 0; alone && toks[s.a].kind == T_ID && k < pl.nitems; k++)
            kept |= pl.alias[k].b && tokEq(&toks[s.a], &toks[pl.alias[k].a]);
        if (kept) sqlite3_str_appendf(tail, "%.*s", toks[s.a].n, toks[s.a].p);
        else if (!rewrite(&pl, (span){s.a, b}, tail)) goto out;
        for (int i = b; i < s.b; i++) sqlite3_str_appendf(tail, " %.*s", toks[i].n, toks[i].p);
    }
    if (pl.limit.b) {
        char *l = spanText(&pl, pl.limit);
        sqlite3_str_appendf(tail, " LIMIT %s", l ? l : "");
        if (!l) goto oom;
        sqlite3_free(l);
    }
    if (pl.oom) goto oom;
    if (!pl.ngroup && !pl.npartials) goto out; /* no aggregate query at all */

    /* the statement each segment runs */
    sqlite3_str *seg = sqlite3_str_new(NULL);
    sqlite3_str_appendall(seg, "SELECT ");
    for (int g = 0; g < pl.ngroup; g++) {
        char *text = spanText(&pl, pl.groups[g]);
        sqlite3_str_appendf(seg, "%s%s", g ? ", " : "", text ? text : "");
        sqlite3_free(text);
    }
    char *partials = finish(pl.partials);
    pl.partials = NULL;
    sqlite3_str_appendf(seg, "%s%s FROM rows AS \"%w\"", pl.ngroup && pl.npartials ? ", " : "", partials ? partials : "",
                        alias);
    sqlite3_free(partials);
    char *where = pl.where.b ? spanText(&pl, pl.where) : NULL;
    /* the rowids read, one span at a time (the row ranges kept, see
     * runSegment) */
    if (where) sqlite3_str_appendf(seg, " WHERE (%s) AND \"%w\".rowid BETWEEN :lake_lo AND :lake_hi", where, alias);
    for (int g = 0; g < pl.ngroup; g++) sqlite3_str_appendf(seg, "%s%d", g ? ", " : " GROUP BY ", g + 1);
    plan->segment = sqlite3_str_finish(seg);
    plan->probe = sqlite3_mprintf("SELECT 1 FROM \"%w\".\"%w\" AS \"%w\"%s%s", ns, name, alias, where ? " WHERE " : "",
                                  where ? where : "");
    sqlite3_free(where);
    plan->ns = sqlite3_mprintf("%s", ns);
    plan->name = sqlite3_mprintf("%s", name);
    plan->tail = finish(tail);
    tail = NULL;
    plan->ngroups = pl.ngroup;
    plan->npartials = pl.npartials;
    if (pl.ngroup && !(plan->groupItem = malloc(sizeof *plan->groupItem * (size_t)pl.ngroup))) goto oom;
    for (int g = 0; g < pl.ngroup; g++) {
        plan->groupItem[g] = -1;
        for (int k = pl.nitems - 1; k >= 0; k--)
            if (spanEq(&pl, pl.items[k], pl.groups[g])) plan->groupItem[g] = k;
    }
    if (!plan->segment || !plan->probe || !plan->ns || !plan->name || !plan->tail) goto oom;
    plan->end = end;
    ok = 1;
    goto out;
oom:
    pl.oom = 1;
out:
    sqlite3_free(sqlite3_str_finish(tail));
    plannerFree(&pl);
    free(toks);
    if (ok != 1) aggregatePlanFree(plan);
    return pl.oom ? -1 : ok;
}

char *aggregatePartialsTable(const aggregatePlan *plan, sqlite3_stmt *whole) {
    sqlite3_str *ddl = sqlite3_str_new(NULL);
    sqlite3_str_appendall(ddl, "CREATE TEMP TABLE \"" QUERY_PARTIALS "\"(");
    for (int g = 0; g < plan->ngroups; g++) {
        const char *decl = plan->groupItem[g] >= 0 ? sqlite3_column_decltype(whole, plan->groupItem[g]) : NULL;
        sqlite3_str_appendf(ddl, "%sg%d", g ? ", " : "", g);
        if (decl) sqlite3_str_appendf(ddl, " \"%w\"", decl);
    }
    for (int p = 0; p < plan->npartials; p++) sqlite3_str_appendf(ddl, "%sp%d", plan->ngroups || p ? ", " : "", p);
    sqlite3_str_appendall(ddl, ")");
    return sqlite3_str_finish(ddl);
}

char *aggregateMergeSql(const aggregatePlan *plan, sqlite3_stmt *whole) {
    sqlite3_str *merge = sqlite3_str_new(NULL);
    sqlite3_str_appendall(merge, "SELECT ");
    for (int k = 0; k < plan->nitems; k++)
        sqlite3_str_appendf(merge, "%s%s AS \"%w\"", k ? ", " : "", plan->items[k], sqlite3_column_name(whole, k));
    sqlite3_str_appendf(merge, " FROM temp.\"" QUERY_PARTIALS "\"%s", plan->tail);
    return sqlite3_str_finish(merge);
}

/* --- running ---------------------------------------------------------------- */

typedef struct aggRun {
    queryContext *ctx;
    const char *schema;   /* the table's schema JSON */
    const char *sql;      /* the statement each segment runs */
    const char *ns, *name;
    fileValue *segs;      /* the kept segments */
    const cJSON **recs;   /* and their records */
    const segmentSchema *cols; /* the table's columns */
    const pruneTerm *terms; /* the scan's terms, for the segments' row ranges */
    int nterms;
    int n, ncols;         /* how many; the columns of sql's rows */
    pthread_mutex_t mu;   /* guards what follows, and ins */
    int next;             /* the next segment to take */
    int stop;             /* a failure: take no more */
    sqlite3_stmt *ins;    /* INSERT INTO the partials, on the statement's connection */
    int64_t rows;         /* partial rows kept */
    lakeError err;        /* the first failure */
    prefetch *pf;
} aggRun;

/* The next segment to read, or -1. */
static int take(aggRun *r) {
    pthread_mutex_lock(&r->mu);
    int i = r->stop || r->next >= r->n || queryStopped(r->ctx) ? -1 : r->next++;
    pthread_mutex_unlock(&r->mu);
    if (i >= 0) prefetchAt(r->pf, i);
    return i;
}

/* Keep the first failure and stop the others. */
static void failRun(aggRun *r, const lakeError *e) {
    pthread_mutex_lock(&r->mu);
    if (!r->err.code) r->err = *e;
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->mu);
}

/* SQLite's progress handler on a segment: give up when the statement is
 * asked to stop (a signal, lake_interrupt) or on another thread's failure. */
static int stopped(void *arg) {
    aggRun *r = arg;
    return queryStopped(r->ctx) || __atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

/* Run the statement on kept segment i (fetched through c and st) and add
 * its rows to the partials. */
static int runSegment(aggRun *r, segcache *c, stage *st, const pruneTerm *terms, int i, lakeError *err) {
    char *path = NULL;
    segmentReader *rd = NULL;
    sqlite3_stmt *q = NULL;
    int rc, locked = 0, s;
    cJSON *ranges = NULL;
    pruneSpan *spans = NULL;
    int nspans = 1, kept = 0;
    if ((rc = segcacheGet(c, st, &r->segs[i], &path, err))) goto out;
    if ((rc = segmentReaderOpen(path, r->schema, r->recs[i], &rd, err))) goto out;
    sqlite3 *db = segmentReaderDb(rd);
    sqlite3_progress_handler(db, 1000, stopped, r);
    if (sqlite3_prepare_v2(db, r->sql, -1, &q, NULL) != SQLITE_OK) {
        rc = errSet(err, LAKE_EDATA, "%s.%s: a segment cannot be read: %s", r->ns, r->name, sqlite3_errmsg(db));
        goto out;
    }
    /* the rowids of the row ranges the terms keep (all without them) */
    int lo = sqlite3_bind_parameter_index(q, ":lake_lo"), hi = sqlite3_bind_parameter_index(q, ":lake_hi");
    if (lo && r->nterms &&
        (segmentRangesRead(db, "main", r->recs[i], &ranges) ||
         (ranges && pruneRanges(ranges, r->cols, terms, r->nterms, &spans, &nspans, &kept)))) {
        rc = errSet(err, LAKE_EFAIL, "out of memory");
        goto out;
    }
    if (ranges)
        traceLine("query", "aggregate %s.%s segment %d: %d of %d row ranges kept", r->ns, r->name, i, kept,
                  cJSON_GetArraySize(ranges));
    s = SQLITE_DONE;
    /* one span after another, each adding its partial rows */
    for (int sp = 0; sp < nspans && s == SQLITE_DONE; sp++) {
        sqlite3_reset(q);
        if (lo && hi) {
            sqlite3_bind_int64(q, lo, spans ? spans[sp].first : INT64_MIN);
            sqlite3_bind_int64(q, hi, spans ? spans[sp].last : INT64_MAX);
        }
        /* the first step does the work; the rows after it come quickly */
        if ((s = sqlite3_step(q)) == SQLITE_ROW && !locked) {
            pthread_mutex_lock(&r->mu);
            locked = 1;
        }
        for (; s == SQLITE_ROW; s = sqlite3_step(q)) {
            for (int k = 0; k < r->ncols; k++) sqlite3_bind_value(r->ins, k + 1, sqlite3_column_value(q, k));
            int w = sqlite3_step(r->ins);
            sqlite3_reset(r->ins);
            if (w != SQLITE_DONE) {
                rc = errSet(err, LAKE_EFAIL, "%s.%s: partial results cannot be kept: %s", r->ns, r->name,
                            sqlite3_errmsg(r->ctx->db));
                goto out;
            }
            r->rows++;
        }
    }
    if (s == SQLITE_DONE) goto out;
    int code = sqlite3_errcode(db) & 0xff;
    if (code == SQLITE_INTERRUPT) rc = errSet(err, LAKE_EFAIL, "interrupted");
    else if (code == SQLITE_ERROR || code == SQLITE_MISMATCH || code == SQLITE_TOOBIG || code == SQLITE_RANGE)
        rc = errSet(err, LAKE_EDATA, "%s", sqlite3_errmsg(db)); /* as the statement's own, e.g. integer overflow */
    else if (code == SQLITE_NOMEM || code == SQLITE_IOERR || code == SQLITE_FULL)
        rc = errSet(err, LAKE_EFAIL, "%s.%s: %s", r->ns, r->name, sqlite3_errmsg(db));
    else
        rc = errSet(err, LAKE_EDATA, "%s.%s: a segment cannot be read", r->ns, r->name);
    snprintf(err->cause, sizeof err->cause, "sqlite %d", sqlite3_extended_errcode(db));
out:
    if (locked) pthread_mutex_unlock(&r->mu);
    free(spans);
    cJSON_Delete(ranges);
    sqlite3_finalize(q);
    segmentReaderClose(rd);
    if (path) segcacheRelease(c, r->segs[i].sha256);
    free(path);
    return rc;
}

/* Read segments until none is left, or one fails. */
static void readSegments(aggRun *r, segcache *c, stage *st, const pruneTerm *terms) {
    lakeError err = {0};
    for (int i; (i = take(r)) >= 0;) {
        errClear(&err);
        if (runSegment(r, c, st, terms, i, &err)) {
            failRun(r, &err);
            return;
        }
    }
}

/* A thread beside the statement's own: handles of its own on the stage
 * and the segment cache. */
static void *worker(void *arg) {
    aggRun *r = arg;
    lakeError err = {0};
    segcache *c = NULL;
    stage *st = NULL;
    /* the terms' values of its own: pruning may settle their numeric type */
    pruneTerm *terms = NULL;
    if (pruneTermsCopy(r->terms, r->nterms, &terms)) {
        errSet(&err, LAKE_EFAIL, "out of memory");
        failRun(r, &err);
        return NULL;
    }
    if (segcacheDup(r->ctx->segs, &c, &err) || stageDup(r->ctx->stage, &st, &err)) {
        failRun(r, &err);
    } else {
        /* the threads read segments side by side already: one GET each */
        stageSetGetJobs(st, 1, 0);
        readSegments(r, c, st, terms);
    }
    pruneTermsFree(terms, r->nterms);
    stageClose(st);
    segcacheClose(c);
    return NULL;
}

static const segmentSchema *schemaOf(void *arg, const char *ns, const char *name) {
    return queryTableColumns(arg, ns, name);
}

/* Does plan's segment statement compile on a table of the schema's
 * shape, giving one column per group key and partial? */
static int segmentCompiles(const aggregatePlan *plan, const segmentSchema *cols) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *sql = segmentSchemaTableSql(cols, "rows");
    int ok = sql && sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
             sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, plan->segment, -1, &st, NULL) == SQLITE_OK && st &&
             sqlite3_column_count(st) == plan->ngroups + plan->npartials;
    sqlite3_finalize(st);
    sqlite3_close(db);
    sqlite3_free(sql);
    return ok;
}

/* Read the kept segments into the partials' table, on up to
 * ctx->threads threads. */
static int readAll(aggRun *r, int64_t rows, lakeError *err) {
    queryContext *ctx = r->ctx;
    /* a thread is worth its start-up only with enough rows to read */
    int64_t useful = 1 + rows / AGGREGATE_THREAD_ROWS;
    int threads = ctx->threads < r->n ? ctx->threads : r->n;
    if (threads > useful) threads = (int)useful;
    pthread_t tid[QUERY_THREADS_MAX];
    int started = 0;
    if (r->n > 1 && stageCanPresign(ctx->stage) && prefetchStart(ctx->segs, ctx->stage, r->segs, r->n, &r->pf, err)) {
        traceLine("query", "no fetching ahead: %s", err->msg);
        errClear(err);
    }
    while (started < threads - 1 && threadStart(&tid[started], worker, r) == 0) started++;
    readSegments(r, ctx->segs, ctx->stage, r->terms); /* this thread reads too */
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    prefetchStop(r->pf);
    r->pf = NULL;
    /* stopped before a segment's statement noticed (or before one began) */
    if (!r->err.code && queryStopped(ctx)) errSet(&r->err, LAKE_EFAIL, "interrupted");
    if (r->err.code) {
        *err = r->err;
        return err->code;
    }
    traceLine("query", "aggregate %s.%s: %d segment%s read on %d thread%s, %lld partial row%s", r->ns, r->name,
              r->n, r->n == 1 ? "" : "s", started + 1, started ? "s" : "", (long long)r->rows, r->rows == 1 ? "" : "s");
    return 0;
}

int queryAggregate(sqlite3 *db, queryContext *ctx, const char *sql, char **rewritten, const char **end,
                   lakeError *err) {
    *rewritten = NULL;
    if (ctx->no_pushdown || ctx->explain || !ctx->tables) return 0;
    aggregatePlan plan;
    int r = aggregatePlanMake(sql, schemaOf, ctx, &plan);
    if (r < 0) return errSet(err, LAKE_EFAIL, "out of memory");
    if (r == 0) return 0;
    int rc = 0, nkept = 0;
    sqlite3_stmt *whole = NULL;
    const cJSON **kept = NULL;
    aggRun run = {.ctx = ctx, .sql = plan.segment, .ns = plan.ns, .name = plan.name,
                  .ncols = plan.ngroups + plan.npartials};
    pthread_mutex_init(&run.mu, NULL);
    /* the statement as written compiles, reads only and has the plan's
     * columns (their names and declared types are taken from it) */
    if (sqlite3_prepare_v2(db, sql, (int)(plan.end - sql), &whole, NULL) != SQLITE_OK || !whole ||
        !sqlite3_stmt_readonly(whole) || sqlite3_column_count(whole) != plan.nitems ||
        !segmentCompiles(&plan, queryTableColumns(ctx, plan.ns, plan.name)))
        goto out;
    int64_t version = 0;
    run.cols = queryTableColumns(ctx, plan.ns, plan.name);
    if ((rc = queryKeptSegments(ctx, plan.ns, plan.name, plan.probe, &kept, &nkept, &run.schema, &version, &run.terms,
                                &run.nterms, err)) ||
        !kept)
        goto out;

    /* the partials' table */
    char *create = aggregatePartialsTable(&plan, whole), *insert = NULL;
    sqlite3_exec(db, "DROP TABLE IF EXISTS temp.\"" QUERY_PARTIALS "\"", NULL, NULL, NULL);
    int made = create && sqlite3_exec(db, create, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_free(create);
    if (made) {
        ctx->partials = 1;
        sqlite3_str *ins = sqlite3_str_new(NULL);
        sqlite3_str_appendall(ins, "INSERT INTO temp.\"" QUERY_PARTIALS "\" VALUES(");
        for (int k = 0; k < run.ncols; k++) sqlite3_str_appendf(ins, "%s?", k ? ", " : "");
        sqlite3_str_appendall(ins, ")");
        insert = sqlite3_str_finish(ins);
    }
    if (!insert || sqlite3_prepare_v2(db, insert, -1, &run.ins, NULL) != SQLITE_OK) {
        sqlite3_free(insert);
        rc = errSet(err, LAKE_EFAIL, "%s.%s: partial results cannot be kept: %s", plan.ns, plan.name,
                    sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_free(insert);

    /* the kept segments, read */
    if (nkept > 0 && (!(run.segs = calloc((size_t)nkept, sizeof *run.segs)) ||
                      !(run.recs = calloc((size_t)nkept, sizeof *run.recs)))) {
        rc = errSet(err, LAKE_EFAIL, "out of memory");
        goto out;
    }
    int64_t rows = 0, segRows;
    for (int i = 0; i < nkept; i++) {
        if (!segmentRecordFile(kept[i], &run.segs[run.n]) ||
            !jsonWhole(cJSON_GetObjectItemCaseSensitive(kept[i], "rows"), 0, &segRows)) {
            rc = errSet(err, LAKE_EDATA, "%s.%s: a malformed segment in the registration", plan.ns, plan.name);
            goto out;
        }
        rows += segRows;
        run.recs[run.n++] = kept[i];
    }
    if ((rc = readAll(&run, rows, err))) goto out;

    /* the statement that merges them */
    if (!(*rewritten = aggregateMergeSql(&plan, whole))) rc = errSet(err, LAKE_EFAIL, "out of memory");
    traceLine("query", "aggregate %s.%s v%lld: merged by: %s", plan.ns, plan.name, (long long)version,
              *rewritten ? *rewritten : "");
    *end = plan.end;
out:
    sqlite3_finalize(run.ins);
    sqlite3_finalize(whole);
    free(run.segs); /* their locations belong to the pinned registration */
    free(run.recs);
    free(kept);
    pthread_mutex_destroy(&run.mu);
    aggregatePlanFree(&plan);
    return rc;
}
