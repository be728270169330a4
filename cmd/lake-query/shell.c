/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shell.c - lake-query at a terminal: the interactive shell (lake-query(1),
 * INTERACTIVE USE).
 *
 * Lines are read with libedit's readline interface.  A statement may span
 * lines and ends at a ';' that ends it for SQLite (sqlite3_complete: not
 * one inside a string or a comment); a line may hold several.  A line that
 * starts with '.' while no statement is pending is a meta-command: sqlite3's
 * dot-commands, since the engine is SQLite and its shell is the one people
 * who know it know.  Each input runs as one -c would: its tables pinned
 * afresh, so a version appended elsewhere is seen by the next statement.
 *
 * Ctrl-C while a statement runs cancels it (core/interrupt.h, cooperative:
 * SQLite's progress handler stops it and the statement's writes roll back,
 * so a cancelled INSERT appends nothing); at the prompt it drops the input
 * being typed.  SIGTERM and SIGHUP stop a running statement the same way,
 * then end the session: main dies of the signal.  Ctrl-D on an empty line
 * ends the session.  Errors print their one line and the shell goes on;
 * the session exits 0.  In the C locale the editor decodes UTF-8; a byte
 * the locale's encoding does not have refuses the line, never drops it.
 *
 * History: $LAKE_QUERY_HISTORY (empty: none), else
 * $XDG_STATE_HOME/lake/query_history (~/.local/state/...), mode 0600: each
 * input appended as it is entered (sessions at once keep theirs), cut back
 * to the last SHELL_HISTORY_MAX past twice that; a file that is not one of
 * libedit's history files is never written.  TAB completes SQL keywords, NS.T names
 * and the columns of the tables the input names, from the on-disk catalog
 * cache: never a call to the source.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <langinfo.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <cjson/cJSON.h>
#include <editline/readline.h>
#include <histedit.h>

#include "catalog/names.h"
#include "core/dlib.h"
#include "core/fsutil.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "query.h"

/* libedit, loaded when the shell starts (core/dlib.h): a script or -c
 * run does not pay for it and its libraries at start-up.  Its readline
 * interface: functions, and the addresses of the variables it reads. */
#define EDIT_NAMES(X)                                                                                              \
    X(readline) X(add_history) X(read_history) X(stifle_history) X(history_init) X(history_end) X(history)         \
    X(rl_completion_matches)                                                                                       \
    X(rl_line_buffer) X(rl_completion_append_character) X(rl_attempted_completion_over)                            \
    X(rl_completer_word_break_characters) X(rl_attempted_completion_function) X(rl_getc_function) X(rl_readline_name)
typedef struct editApi {
    char *(*readline)(const char *);
    int (*add_history)(const char *);
    int (*read_history)(const char *);
    void (*stifle_history)(int);
    History *(*history_init)(void);
    void (*history_end)(History *);
    int (*history)(History *, HistEvent *, int, ...);
    char **(*rl_completion_matches)(const char *, rl_compentry_func_t *);
    char **rl_line_buffer;
    int *rl_completion_append_character;
    int *rl_attempted_completion_over;
    char **rl_completer_word_break_characters;
    rl_completion_func_t **rl_attempted_completion_function;
    int (**rl_getc_function)(FILE *);
    const char **rl_readline_name;
} editApi;
LAKE_DLIB_DEFINE(editApi, EDIT_NAMES, "libedit.so.2", "libedit 2 (the interactive shell)", editLoad, editHandle,
                 editReady)
static const editApi *ed;

#define SHELL_HISTORY_MAX 1000
/* TAB looks at the columns of at most this many tables the input does
 * not name (when it names none). */
#define SHELL_COLUMN_TABLES_MAX 1000
#define PROMPT "lake> "
#define PROMPT_MORE "  ...> "

typedef struct shell {
    run *r;
    char *history; /* its file, or NULL */
    int histFd;    /* open on it (O_APPEND), or -1: none kept */
    History *enc;  /* one entry, encoded as libedit's files hold it */
    long histEntries; /* in the file, as far as this session knows */
    int timer;
    int done;
} shell;

/* --- completion ----------------------------------------------------------- */

/* A list of owned strings, each once. */
typedef struct strv {
    char **v;
    size_t n, cap;
} strv;

static void strvClear(strv *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    *l = (strv){0};
}

static void strvAdd(strv *l, const char *s, size_t len) {
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i]) == len && strncmp(l->v[i], s, len) == 0) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return;
        l->v = v;
        l->cap = cap;
    }
    char *c = strndup(s, len);
    if (c) l->v[l->n++] = c;
}

/* What TAB offers, made afresh at each completion, and the next to hand
 * to libedit. */
static strv cands;
static size_t candNext;

/* The pending statement's earlier lines, for the columns of the tables it
 * names (NULL when none). */
static const char *pendingText;

/* Does text name table ns.name as a whole word? */
static int names(const char *text, const char *ns, const char *name) {
    size_t nl = strlen(ns), tl = strlen(name);
    for (const char *p = text ? strcasestr(text, ns) : NULL; p; p = strcasestr(p + 1, ns)) {
        if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.')) continue;
        const char *q = p + nl;
        if (*q != '.' || strncasecmp(q + 1, name, tl) != 0) continue;
        q += 1 + tl;
        if (!isalnum((unsigned char)*q) && *q != '_') return 1;
    }
    return 0;
}

/* The column names of schema (the canonical schema JSON) that start with
 * word, into l. */
static void addColumns(strv *l, const char *schema, const char *word, size_t wl) {
    cJSON *s = cJSON_Parse(schema), *col;
    cJSON_ArrayForEach(col, s) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(col, "name");
        if (cJSON_IsString(name) && strncasecmp(name->valuestring, word, wl) == 0)
            strvAdd(l, name->valuestring, strlen(name->valuestring));
    }
    cJSON_Delete(s);
}

/* TAB's own view of the catalog cache: opened --offline once per session
 * (never a call to the source), its files read again at each completion
 * (cacheForget), so what statements fetched meanwhile is offered. */
static struct {
    int tried;
    lakeConfig cfg;
    catalogSource *src;
    catalogCache *cache;
} tab;

static void tabClose(void) {
    cacheClose(tab.cache);
    sourceClose(tab.src);
    configFree(&tab.cfg);
    memset(&tab, 0, sizeof tab);
}

/* The tables the on-disk cache knows: the directory, else (a principal
 * denied it) its listing, else the tables it resolved on this host.
 * Calls fn for each entry. */
static void cachedTables(void (*fn)(const cacheEntry *e, void *arg), void *arg) {
    lakeError err = {0};
    if (!tab.tried) {
        tab.tried = 1;
        if (configLoad(&tab.cfg, NULL, 0, &err) == 0 && sourceOpen(&tab.cfg, &tab.src, &err) == 0) {
            cacheOptions opt = {tab.cfg.catalog_ttl, 1, 0}; /* offline */
            cacheOpen(&tab.cfg, tab.src, &opt, &tab.cache, &err);
        }
    }
    if (!tab.cache) return;
    cacheForget(tab.cache);
    const cacheEntry *e = NULL;
    size_t n = 0;
    if (cacheDirectory(tab.cache, &e, &n, &err) && cacheListing(tab.cache, &e, &n, &err) &&
        cacheResolvedTables(tab.cache, &e, &n, &err))
        n = 0;
    for (size_t i = 0; i < n; i++) fn(&e[i], arg);
}

typedef struct wordArg {
    const char *word;
    size_t wl;
    const char *dot;  /* in word, or NULL */
    int named;        /* tables the input names */
    size_t others;    /* tables it does not, whose columns were looked at */
    strv otherCols;   /* their columns */
} wordArg;

static void offerEntry(const cacheEntry *e, void *arg) {
    wordArg *w = arg;
    char full[2 * NAME_MAX_LEN + 2];
    if (!e->name) { /* a namespace: "NS." leads to its tables */
        snprintf(full, sizeof full, "%s.", e->ns);
        if (!w->dot && strncasecmp(full, w->word, w->wl) == 0) strvAdd(&cands, full, strlen(full));
        return;
    }
    snprintf(full, sizeof full, "%s.%s", e->ns, e->name);
    if (w->dot) {
        if (strncasecmp(full, w->word, w->wl) == 0) strvAdd(&cands, full, strlen(full));
    } else if (e->schema && (names(*ed->rl_line_buffer, e->ns, e->name) || names(pendingText, e->ns, e->name))) {
        w->named++;
        addColumns(&cands, e->schema, w->word, w->wl);
    } else if (e->schema && !w->named && w->others++ < SHELL_COLUMN_TABLES_MAX) {
        addColumns(&w->otherCols, e->schema, w->word, w->wl);
    }
}

static char *nextCandidate(const char *text, int state) {
    (void)text;
    if (state == 0) candNext = 0;
    return candNext < cands.n ? strdup(cands.v[candNext++]) : NULL;
}

/* TAB: the candidates for the word before the cursor: keywords, "NS."
 * and NS.T names, and the columns of the tables the input names (of
 * every table, up to SHELL_COLUMN_TABLES_MAX, when it names none). */
static char **complete(const char *text, int start, int end) {
    (void)start;
    (void)end;
    *ed->rl_attempted_completion_over = 1; /* never file names */
    strvClear(&cands);
    wordArg w = {text, strlen(text), strchr(text, '.'), 0, 0, {0}};
    if (!w.dot) { /* keywords, in the case the word was typed in */
        int lower = w.wl && islower((unsigned char)text[0]);
        for (int i = 0; i < sqlite3_keyword_count(); i++) {
            const char *k;
            int kl;
            char buf[32];
            if (sqlite3_keyword_name(i, &k, &kl) != SQLITE_OK || kl >= (int)sizeof buf) continue;
            for (int j = 0; j < kl; j++) buf[j] = lower ? (char)tolower((unsigned char)k[j]) : k[j];
            if ((size_t)kl >= w.wl && strncasecmp(buf, text, w.wl) == 0) strvAdd(&cands, buf, (size_t)kl);
        }
    }
    cachedTables(offerEntry, &w);
    for (size_t i = 0; !w.named && i < w.otherCols.n; i++) strvAdd(&cands, w.otherCols.v[i], strlen(w.otherCols.v[i]));
    strvClear(&w.otherCols);
    /* "NS." goes on to its tables: no space after it */
    int allNs = cands.n > 0;
    for (size_t i = 0; i < cands.n && allNs; i++) allNs = cands.v[i][strlen(cands.v[i]) - 1] == '.';
    *ed->rl_completion_append_character = allNs ? '\0' : ' ';
    return cands.n ? ed->rl_completion_matches(text, nextCandidate) : NULL;
}

/* --- history ---------------------------------------------------------------- */

/* The history file: $LAKE_QUERY_HISTORY, else under $XDG_STATE_HOME/lake
 * (made 0700); NULL for none. */
static char *historyPath(void) {
    const char *env = getenv("LAKE_QUERY_HISTORY");
    if (env) return *env ? strdup(env) : NULL;
    lakeError err = {0};
    char *state = configXdgDir("XDG_STATE_HOME", ".local/state", "LAKE_QUERY_HISTORY", &err), *path = NULL;
    if (state && asprintf(&path, "%s/lake", state) > 0 && mkdirs(path, 0700, &err) == 0) {
        free(path);
        path = asprintf(&path, "%s/lake/query_history", state) > 0 ? path : NULL;
    } else {
        if (!err.code) errSetErrno(&err, LAKE_EFAIL, errno, "history");
        logWarn("no history kept: %s", err.msg);
        free(path);
        path = NULL;
    }
    free(state);
    return path;
}

/* The first line of libedit's history files: what makes a file one. */
#define HISTORY_COOKIE "_HiStOrY_V2_\n"

/* Give the history up for the session, saying why once. */
static void historyDrop(shell *sh, const char *why) {
    logWarn("%s: %s: no history kept", sh->history, why);
    if (sh->histFd >= 0) close(sh->histFd);
    sh->histFd = -1;
    free(sh->history);
    sh->history = NULL;
}

/* The lines in fd's file (read from its start), or -1. */
static long countLines(int fd) {
    char buf[65536];
    long lines = 0;
    ssize_t n;
    if (lseek(fd, 0, SEEK_SET) < 0) return -1;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))) != NULL; p++) lines++;
    return n < 0 ? -1 : lines;
}

/* Open the history file for appending: one this shell creates (0600, its
 * first line written), or an existing regular file that is one of
 * libedit's (its first line HISTORY_COOKIE) or empty, made 0600.  Anything
 * else (a device such as /dev/null, a FIFO, a file of other content) is
 * never opened for writing, read, changed in mode nor truncated: the
 * session keeps no history, with one warning. */
static void historyOpen(shell *sh) {
    struct stat st;
    char head[sizeof HISTORY_COOKIE - 1];
    const char *why = NULL;
    ssize_t n = 0;
    errno = 0;
    int fd = open(sh->history, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), made = fd >= 0;
    if (fd < 0 && errno == EEXIST && !(stat(sh->history, &st) == 0 && !S_ISREG(st.st_mode)))
        /* O_NONBLOCK, O_NOCTTY: harmless should it have become a FIFO or a terminal since */
        fd = open(sh->history, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    sh->histFd = fd;
    if (fd < 0 && errno == EEXIST) why = "not a regular file";
    else if (fd < 0) why = strerror(errno);
    else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) why = "not a regular file";
    else if (!made && (n = pread(fd, head, sizeof head, 0)) > 0 &&
             (n != (ssize_t)sizeof head || memcmp(head, HISTORY_COOKIE, sizeof head) != 0))
        why = "not a lake-query history file (no _HiStOrY_V2_ line)";
    else if (n < 0 || fcntl(fd, F_SETFL, O_APPEND) != 0 || ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) ||
             (n == 0 && write(fd, HISTORY_COOKIE, sizeof head) != (ssize_t)sizeof head))
        why = strerror(errno ? errno : EIO);
    else if ((sh->histEntries = countLines(fd) - 1) < 0)
        why = strerror(errno ? errno : EIO);
    else if (!(sh->enc = ed->history_init()))
        why = strerror(ENOMEM);
    if (why) historyDrop(sh, why);
}

/* Save the entries of sh->enc to the history file's descriptor, whose
 * position is where they go (mode: "a" appends, "w" after a truncation
 * writes the first line too).  0, or -1 with errno. */
static int historyWrite(shell *sh, const char *mode) {
    HistEvent ev;
    int fd = dup(sh->histFd);
    FILE *f = fd >= 0 ? fdopen(fd, mode) : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int rc = ed->history(sh->enc, &ev, H_SAVE_FP, f) < 0 ? -1 : 0;
    if (fclose(f) != 0) rc = -1;
    return rc;
}

/* The file past twice SHELL_HISTORY_MAX entries: rewritten in place as its
 * last SHELL_HISTORY_MAX, under the lock the sessions append under (so
 * another session's entries are read first, never lost to a race). */
static void historyTrim(shell *sh) {
    HistEvent ev;
    struct stat a, b;
    if (flock(sh->histFd, LOCK_EX) != 0) return;
    /* (a history of size N loads the last N - 1 entries of a file) */
    if (fstat(sh->histFd, &a) == 0 && stat(sh->history, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev &&
        ed->history(sh->enc, &ev, H_SETSIZE, SHELL_HISTORY_MAX + 1) >= 0 && ed->history(sh->enc, &ev, H_LOAD, sh->history) >= 0) {
        if (ftruncate(sh->histFd, 0) != 0 || historyWrite(sh, "w") != 0)
            logWarn("%s: history not trimmed: %s", sh->history, strerror(errno ? errno : EIO));
        sh->histEntries = countLines(sh->histFd) - 1;
    }
    ed->history(sh->enc, &ev, H_CLEAR);
    ed->history(sh->enc, &ev, H_SETSIZE, 1);
    flock(sh->histFd, LOCK_UN);
}

/* Add entry to the session's history and append it to the file: one
 * entry under the lock, never a rewrite; trimmed past twice the cap. */
static void historyAdd(shell *sh, const char *entry) {
    HistEvent ev;
    ed->add_history(entry);
    if (sh->histFd < 0) return;
    errno = 0;
    int rc = flock(sh->histFd, LOCK_EX);
    if (!rc) {
        ed->history(sh->enc, &ev, H_CLEAR);
        rc = ed->history(sh->enc, &ev, H_ENTER, entry) < 0 ? -1 : historyWrite(sh, "a");
        flock(sh->histFd, LOCK_UN);
    }
    if (rc) {
        historyDrop(sh, strerror(errno ? errno : EIO));
        return;
    }
    if (++sh->histEntries > 2 * SHELL_HISTORY_MAX) historyTrim(sh);
}

/* Open the history (historyOpen), trim it when long, read it back. */
static void historyStart(shell *sh) {
    HistEvent ev;
    ed->stifle_history(SHELL_HISTORY_MAX);
    if (!sh->history) return;
    historyOpen(sh);
    if (sh->histFd < 0) return;
    ed->history(sh->enc, &ev, H_SETSIZE, 1);
    if (sh->histEntries > 2 * SHELL_HISTORY_MAX) historyTrim(sh);
    ed->read_history(sh->history);
}

/* --- meta-commands ---------------------------------------------------------- */

static const char *const helpText =
    ".explain on|off    list what each scan keeps and prunes instead of running (--explain)\n"
    ".headers on|off    a header row in tsv and csv (-H)\n"
    ".help              this list\n"
    ".mode [FORMAT]     the output format: table, tsv, csv, json or jsonl (-f)\n"
    ".quit              leave (so does .exit, or Ctrl-D on an empty line)\n"
    ".read FILE         run the statements of FILE\n"
    ".schema NS.T       the columns of a table\n"
    ".tables [NS]       the tables (of namespace NS), as lake-catalog list\n"
    ".timer on|off      the time each input took, on standard error\n"
    "Statements end at ';' and may span lines; Ctrl-C cancels the one running.\n";

/* "on" or "off" into *flag; -1 (said) otherwise. */
static int onOff(const char *cmd, const char *arg, int *flag) {
    if (arg && strcmp(arg, "on") == 0) *flag = 1;
    else if (arg && strcmp(arg, "off") == 0) *flag = 0;
    else {
        logErrorf("%s: on or off", cmd);
        return -1;
    }
    return 0;
}

/* The catalog cache, read as the next statement would read it (runText):
 * its files read again, so what another process created, altered or
 * dropped on this host meanwhile is seen. */
static int metaCatalog(shell *sh, lakeError *err) {
    int rc = querySessionLake(&sh->r->s, err);
    if (!rc) cacheForget(sh->r->s.cache);
    return rc;
}

static int metaTables(shell *sh, const char *ns, lakeError *err) {
    const cacheEntry *e;
    size_t n;
    if (ns && !nameIsValid(ns)) return errSet(err, LAKE_EUSAGE, ".tables: %s: not a valid namespace name", ns);
    int rc = metaCatalog(sh, err);
    if (!rc) rc = cacheListing(sh->r->s.cache, &e, &n, err);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++)
        if (e[i].name && (!ns || strcmp(e[i].ns, ns) == 0)) printf("%s.%s\n", e[i].ns, e[i].name);
    return 0;
}

static int metaSchema(shell *sh, const char *table, lakeError *err) {
    char *ns = NULL, *name = NULL;
    const cacheEntry *e;
    if (!table) return errSet(err, LAKE_EUSAGE, ".schema: which table? (.schema NS.T)");
    int rc = nameSplitTable(table, &ns, &name, err);
    if (!rc) rc = metaCatalog(sh, err);
    if (!rc) rc = cacheTable(sh->r->s.cache, ns, name, &e, err);
    cJSON *s = rc ? NULL : cJSON_Parse(e->schema), *col;
    if (!rc && !s) rc = errSet(err, LAKE_EFAIL, "%s: a malformed schema in the cache", table);
    cJSON_ArrayForEach(col, s) {
        const cJSON *cn = cJSON_GetObjectItemCaseSensitive(col, "name"), *ct = cJSON_GetObjectItemCaseSensitive(col, "type");
        if (cJSON_IsString(cn) && cJSON_IsString(ct)) printf("%s\t%s\n", cn->valuestring, ct->valuestring);
    }
    cJSON_Delete(s);
    free(ns);
    free(name);
    return rc;
}

static int runText(shell *sh, const char *text, const char *label, const char *file);

static int metaRead(shell *sh, const char *path, lakeError *err) {
    if (!path) return errSet(err, LAKE_EUSAGE, ".read: which file? (.read FILE)");
    char *text = readScript(path, err);
    if (!text) return err->code;
    runText(sh, text, "", path);
    free(text);
    return 0;
}

/* One meta-command line. */
static void meta(shell *sh, char *line) {
    char *argv[4] = {0}, *save = NULL;
    int argc = 0;
    for (char *t = strtok_r(line, " \t", &save); t && argc < 4; t = strtok_r(NULL, " \t", &save)) argv[argc++] = t;
    const char *cmd = argv[0];
    lakeError err = {0};
    int rc = 0;
    if (argc > 2 || (argc == 2 && (!strcmp(cmd, ".help") || !strcmp(cmd, ".quit") || !strcmp(cmd, ".exit")))) {
        rc = errSet(&err, LAKE_EUSAGE, "%s: too many arguments (.help lists the commands)", cmd);
    } else if (!strcmp(cmd, ".quit") || !strcmp(cmd, ".exit")) {
        sh->done = 1;
    } else if (!strcmp(cmd, ".help")) {
        fputs(helpText, stdout);
    } else if (!strcmp(cmd, ".tables")) {
        rc = metaTables(sh, argv[1], &err);
    } else if (!strcmp(cmd, ".schema")) {
        rc = metaSchema(sh, argv[1], &err);
    } else if (!strcmp(cmd, ".mode")) {
        static const char *const fmtName[] = {"tsv", "csv", "json", "jsonl", "table"};
        if (!argv[1]) printf("%s\n", fmtName[sh->r->fmt]);
        else if (formatParse(argv[1], &sh->r->fmt))
            rc = errSet(&err, LAKE_EUSAGE, ".mode: '%s' is not table, tsv, csv, json or jsonl", argv[1]);
    } else if (!strcmp(cmd, ".headers")) {
        onOff(cmd, argv[1], &sh->r->header);
    } else if (!strcmp(cmd, ".timer")) {
        onOff(cmd, argv[1], &sh->timer);
    } else if (!strcmp(cmd, ".explain")) {
        onOff(cmd, argv[1], &sh->r->explain);
    } else if (!strcmp(cmd, ".read")) {
        rc = metaRead(sh, argv[1], &err);
    } else {
        rc = errSet(&err, LAKE_EUSAGE, "%s: no such command (.help lists them)", cmd);
    }
    if (rc) logError(&err);
    fflush(stdout);
}

/* --- running ------------------------------------------------------------------ */

static double seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* Run the statements of text as one -c would, each pinned afresh; a
 * failure prints its line (a cancelled one "interrupted") and returns. */
static int runText(shell *sh, const char *text, const char *label, const char *file) {
    run *r = sh->r;
    script sc = {.text = text, .name = file, .located = file != NULL};
    snprintf(sc.label, sizeof sc.label, "%s", label);
    /* as a new process would: the catalog cache's files read again, the
     * tables declared again, an unknown one asked for again */
    cacheForget(r->s.cache);
    queryForget(r->s.db);
    r->s.refreshed = 0;
    r->printedHeader = 0;
    struct timespec t0, t1;
    struct rusage u0, u1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    getrusage(RUSAGE_SELF, &u0);
    lakeError err = {0};
    int rc = runScript(r, &sc, &err);
    fflush(stdout);
    if (interruptPending() && interruptPending() != SIGINT) return LAKE_EFAIL; /* the session ends (shellRun) */
    if (interruptPending()) {
        interruptClear();
        logErrorf("interrupted");
        rc = LAKE_EFAIL;
    } else if (rc) {
        logError(&err);
    }
    if (sh->timer) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        getrusage(RUSAGE_SELF, &u1);
        fprintf(stderr, "Run Time: real %.3f user %.3f sys %.3f\n",
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                seconds(u1.ru_utime) - seconds(u0.ru_utime), seconds(u1.ru_stime) - seconds(u0.ru_stime));
    }
    return rc;
}

/* libedit's reads of the terminal, one character at a time (decoded in
 * the locale's encoding, as libedit's own reads are): through
 * interruptReadSome, which notices a Ctrl-C within 100 ms wherever it
 * arrived, so the prompt always comes back (a signal that came while the
 * editor was not blocked in read(2) would otherwise wait for a key).
 * EOF at the end of the input and when a stop signal came. */
static int undecodable; /* the line being read has a byte the locale cannot decode */

static int shellGetc(FILE *in) {
    mbstate_t st;
    memset(&st, 0, sizeof st);
    for (;;) {
        char ch;
        if (interruptReadSome(fileno(in), &ch, 1) != 1) return EOF;
        wchar_t wc;
        size_t n = mbrtowc(&wc, &ch, 1, &st);
        if (n == (size_t)-2) continue; /* more bytes of one character */
        if (n == (size_t)-1) { /* not the locale's: the line is refused (shellRun) */
            undecodable = 1;
            return '?';
        }
        return (int)wc;
    }
}

/* The terminal's characters, as the editor decodes and shows them: the
 * locale's; in the C (POSIX) locale, whose encoding is ASCII, UTF-8
 * (C.UTF-8, when the system has it): SQL text is UTF-8, and the editor
 * would otherwise have no character for any other byte. */
static void shellLocale(void) {
    setlocale(LC_CTYPE, "");
    if (strcmp(nl_langinfo(CODESET), "ANSI_X3.4-1968") == 0) setlocale(LC_CTYPE, "C.UTF-8");
}

/* A stop signal other than Ctrl-C's (SIGTERM, SIGHUP): the session ends,
 * and main dies of it (interruptExit). */
static int ended(void) { return interruptPending() && interruptPending() != SIGINT; }

/* Is line only blanks? */
static int blank(const char *line) {
    while (isspace((unsigned char)*line)) line++;
    return !*line;
}

int shellRun(run *r, lakeError *err) {
    shell sh = {.r = r, .history = historyPath(), .histFd = -1};
    char *pending = NULL; /* the statement's lines so far */
    size_t plen = 0;
    shellLocale();
    ed = editLoad();
    *ed->rl_readline_name = "lake-query";
    *ed->rl_getc_function = shellGetc;
    *ed->rl_attempted_completion_function = complete;
    /* '.' is part of a word: NS.T completes as one */
    static char breaks[] = " \t\n\"'`@$><=;|&{(,";
    *ed->rl_completer_word_break_characters = breaks;
    historyStart(&sh);
    if (isatty(STDOUT_FILENO)) {
        printf("lake-query %s: SQL over lake tables; .help for help, Ctrl-D to leave\n", LAKE_VERSION);
        fflush(stdout);
    }
    while (!sh.done && !ended()) {
        pendingText = pending;
        errno = 0;
        undecodable = 0;
        char *line = ed->readline(pending ? PROMPT_MORE : PROMPT);
        if (ended()) {
            free(line);
            break;
        }
        if (interruptPending() || (line && undecodable)) { /* Ctrl-C at the prompt: the input goes */
            if (!interruptPending())
                logErrorf("a byte the locale's encoding (%s) does not have: the input was not run", nl_langinfo(CODESET));
            else putchar('\n');
            interruptClear();
            free(line);
            free(pending);
            pending = NULL;
            plen = 0;
            continue;
        }
        if (!line) { /* Ctrl-D, or the end of the terminal */
            if (pending && !blank(pending)) logWarn("an unfinished statement was not run");
            if (isatty(STDOUT_FILENO)) putchar('\n');
            break;
        }
        if (!pending && line[0] == '.') {
            historyAdd(&sh, line);
            meta(&sh, line);
            free(line);
            continue;
        }
        if (!pending && blank(line)) {
            free(line);
            continue;
        }
        size_t ll = strlen(line);
        char *grown = realloc(pending, plen + ll + 2);
        if (!grown) {
            free(line);
            free(pending);
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "input");
        }
        pending = grown;
        if (plen) pending[plen++] = '\n';
        memcpy(pending + plen, line, ll + 1);
        plen += ll;
        free(line);
        if (!sqlite3_complete(pending)) continue;
        historyAdd(&sh, pending);
        runText(&sh, pending, "", NULL);
        free(pending);
        pending = NULL;
        plen = 0;
    }
    pendingText = NULL;
    strvClear(&cands);
    tabClose();
    free(pending);
    if (sh.histFd >= 0) close(sh.histFd);
    if (sh.enc) ed->history_end(sh.enc);
    free(sh.history);
    return 0;
}
