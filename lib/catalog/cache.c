/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c - the snapshot file, its locks, and the refresh protocol.
 *
 * The snapshot file is text, one record a line, so that a fresh `list`
 * costs one read, one hash and one pass over the lines:
 *
 *   lake-snapshot 1
 *   source <name>
 *   endpoint <URL>      (remote: the endpoint that answered last; optional,
 *                        absent in files written before several endpoints)
 *   generation <G>
 *   authority <id, or - when the authority has no marker>
 *   fetched_ms <ms>
 *   failed_ms <ms>
 *   last_error <one line>
 *   tables <n>
 *   <id> <epoch> <version> <resolved_ms>        (n lines)
 *   entries <n>
 *   n<TAB><namespace>                           (namespace entry)
 *   t<TAB><namespace><TAB><name><TAB><id><TAB><schema JSON>
 *   crc32 <8 hex digits: CRC-32 of every byte above>
 *
 * The checksum detects torn and corrupted files; it is CRC-32 (zlib), not
 * SHA-256, because OpenSSL's first digest costs about 1.5 ms of start-up,
 * more than the rest of a fresh `list` of 10,000 tables.
 * Names are [A-Za-z0-9_], ids are base32 and schema JSON is printed
 * without white space, so no field can hold a tab or a newline.
 *
 * A principal denied the snapshot (role user), or refused it as larger
 * than the server's caps, keeps the tables it may read, as list_tables
 * pages them, in the file "listing" of the same
 * format (its tables section empty, a namespace entry before the first
 * table of each namespace), and refreshes it by the same protocol: the
 * refresh functions work on c->snap and c->path, which listingSwap points
 * at the listing while it is in use.
 */
#include "catalog/cache.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "catalog/actions.h"
#include "catalog/names.h"
#include "catalog/regindex.h"
#include "core/fsutil.h"
#include "core/interrupt.h"
#include "core/jsonstrict.h"
#include "core/log.h"
#include "query/segcache.h"

typedef struct tableState {
    char id[64];
    int64_t epoch;       /* lowest version this host may serve */
    int64_t version;     /* last resolved current version */
    int64_t resolved_ms; /* when; 0 = never */
} tableState;

typedef struct snapshot {
    int valid;
    char *buf; /* the file; entries point into it */
    int64_t generation, fetched_ms, failed_ms;
    char *authority;
    char *endpoint; /* NULL: none known */
    char *last_error;
    tableState *tables;
    size_t ntables;
    cacheEntry *entries;
    size_t n;
} snapshot;

/* A row of the points file (below): a table a principal denied the
 * directory resolved on this host. */
typedef struct pointRow {
    char ns[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1], id[64];
    int64_t epoch, version, resolved_ms;
} pointRow;

typedef struct pointsFile {
    int64_t failed_ms; /* the source's last failure, 0 after a success */
    char last_error[512];
    pointRow *rows;    /* sorted by (namespace, name) */
    size_t n;
} pointsFile;

/* A table this process knows from a resolve by name, because its
 * principal may not read the directory (role user): the directory entry
 * the callers use, and the current registration while it is fresh.  id
 * NULL: the source said there is no such table. */
typedef struct pointTable {
    struct pointTable *next;
    cacheEntry e; /* its strings are owned, below */
    char *ns, *name, *id, *schema;
    cJSON *reg;          /* current registration; NULL after this host appended */
    int64_t resolved_ms;
    int asked; /* this process asked the source for reg: kept for the
                * process's life, as the snapshot is (catalogCache.refreshed) */
} pointTable;

struct catalogCache {
    catalogSource *src;
    cacheOptions opt;
    char *root; /* cache_dir: every source's cache and the segment cache */
    char *dir;
    char *path; /* dir/snapshot */
    int64_t max_stale_ms; /* catalog_max_stale: the oldest registration served stale */
    int lockfd;
    snapshot snap;
    int refreshed; /* this process asked the source already */
    /* the principal may not take the snapshot: tables are resolved by
     * name (DESIGN §5); denied_msg is the source's refusal */
    int denied;
    char denied_msg[sizeof ((lakeError *)0)->msg];
    pointTable *points;
    pointsFile pts;       /* the points file as last read */
    cacheEntry *pentries; /* cacheResolvedTables' answer */
    int warned;    /* about a corrupt snapshot file, once per process */
    /* Served stale: the directory, whoami, the last table's registration.
     * A statement asks the cache many times; during one outage each kind
     * of warning is printed once per process, not once per question. */
    int warned_stale, warned_whoami;
    char warned_table[2 * 64 + 2];
    char **appended; /* "ns.name" of each table this process appended to */
    int nappended;
    /* The listing of a principal denied the snapshot: swapped with snap,
     * path and refreshed by listingSwap while the refresh protocol runs
     * on it (in_listing); listing: this process's directory is it. */
    snapshot lsnap;
    char *lpath;
    int lrefreshed, in_listing, listing;
};

/* Table ids are generated: 1 to 63 letters and digits. */
static int idIsValid(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' && s[n] <= 'z')))
            return 0;
    return n > 0 && n < 64;
}

static int64_t nowMs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void snapFree(snapshot *s) {
    free(s->buf);
    free(s->authority);
    free(s->endpoint);
    free(s->last_error);
    free(s->tables);
    free(s->entries);
    memset(s, 0, sizeof *s);
}

/* --- reading --------------------------------------------------------- */

/* Next line of the buffer, NUL-terminated in place; NULL at the end. */
static char *nextLine(char **p, char *end) {
    if (*p >= end) return NULL;
    char *line = *p, *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl) return NULL;
    *nl = '\0';
    *p = nl + 1;
    return line;
}

static int keyed(const char *line, const char *key, const char **value) {
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0 || line[n] != ' ') return 0;
    *value = line + n + 1;
    return 1;
}

static int wholeNumber(const char *v, int64_t *out) {
    char *e;
    *out = strtoll(v, &e, 10);
    return *v && *e == '\0';
}

static int keyedInt(char **p, char *end, const char *key, int64_t *out) {
    const char *line = nextLine(p, end), *v;
    return line && keyed(line, key, &v) && wholeNumber(v, out);
}

/* The snapshot and points files end with the line "crc32 <8 hex digits>"
 * over every byte before it.  The start of that line in buf (len bytes,
 * ending in a newline, which becomes a NUL), so the body ends there; NULL
 * when the file is torn or corrupt. */
static char *checksumEnd(char *buf, size_t len) {
    if (!len || buf[len - 1] != '\n') return NULL;
    char *last = buf + len - 1, hex[16];
    while (last > buf && last[-1] != '\n') last--;
    const char *hexp;
    buf[len - 1] = '\0';
    if (!keyed(last, "crc32", &hexp) || strlen(hexp) != 8) return NULL;
    snprintf(hex, sizeof hex, "%08lx", crc32(0, (const Bytef *)buf, (uInt)(last - buf)));
    return strcmp(hex, hexp) == 0 ? last : NULL;
}

/* Cut line in place at its tabs into at most max fields (the last keeps
 * any tabs beyond); their number. */
static int splitTabs(char *line, char **f, int max) {
    int k = 0;
    for (char *q = line; k < max;) {
        f[k++] = q;
        char *tab = strchr(q, '\t');
        if (!tab) break;
        *tab = '\0';
        q = tab + 1;
    }
    return k;
}

/* Parse buf (len bytes, owned by s on success).  0 when the file is a
 * whole, checksummed snapshot; -1 when it must be ignored. */
static int parseSnapshot(snapshot *s, char *buf, size_t len) {
    memset(s, 0, sizeof *s);
    char *end = len >= 80 ? checksumEnd(buf, len) : NULL, *p = buf;
    if (!end) return -1;
    const char *line = nextLine(&p, end), *v;
    int64_t nt, ne;
    if (!line || strcmp(line, "lake-snapshot 1") != 0) return -1;
    if (!(line = nextLine(&p, end)) || !keyed(line, "source", &v)) return -1;
    if (!(line = nextLine(&p, end))) return -1;
    if (keyed(line, "endpoint", &v)) {
        if (strcmp(v, "-") != 0 && !(s->endpoint = strdup(v))) return -1;
        line = nextLine(&p, end);
    }
    if (!line || !keyed(line, "generation", &v) || !wholeNumber(v, &s->generation)) goto bad;
    if (!(line = nextLine(&p, end)) || !keyed(line, "authority", &v) || !(s->authority = strdup(v)))
        goto bad;
    if (!keyedInt(&p, end, "fetched_ms", &s->fetched_ms) ||
        !keyedInt(&p, end, "failed_ms", &s->failed_ms))
        goto bad;
    if (!(line = nextLine(&p, end)) || !keyed(line, "last_error", &v)) goto bad;
    if (!(s->last_error = strdup(v))) goto bad;
    if (!keyedInt(&p, end, "tables", &nt) || nt < 0 || nt > CACHE_MAX_ENTRIES) goto bad;
    s->tables = calloc((size_t)nt + 1, sizeof *s->tables);
    if (!s->tables) goto bad;
    for (s->ntables = 0; s->ntables < (size_t)nt; s->ntables++) {
        tableState *t = &s->tables[s->ntables];
        if (!(line = nextLine(&p, end)) ||
            sscanf(line, "%63s %lld %lld %lld", t->id, (long long *)&t->epoch,
                   (long long *)&t->version, (long long *)&t->resolved_ms) != 4)
            goto bad;
    }
    if (!keyedInt(&p, end, "entries", &ne) || ne < 0 || ne > CACHE_MAX_ENTRIES) goto bad;
    s->entries = calloc((size_t)ne + 1, sizeof *s->entries);
    if (!s->entries) goto bad;
    for (s->n = 0; s->n < (size_t)ne; s->n++) {
        char *l = nextLine(&p, end), *f[5];
        if (!l) goto bad;
        int k = splitTabs(l, f, 5);
        cacheEntry *e = &s->entries[s->n];
        if (k == 2 && strcmp(f[0], "n") == 0) {
            e->ns = f[1];
        } else if (k == 5 && strcmp(f[0], "t") == 0) {
            e->ns = f[1];
            e->name = f[2];
            e->id = f[3];
            e->schema = f[4];
        } else {
            goto bad;
        }
    }
    if (p != end) goto bad;
    s->buf = buf;
    s->valid = 1;
    return 0;
bad:
    free(s->authority);
    free(s->endpoint);
    free(s->last_error);
    free(s->tables);
    free(s->entries);
    memset(s, 0, sizeof *s);
    return -1;
}

/* The whole file at path in a new NUL-terminated buffer (*len bytes), or
 * NULL when it is missing (*exists 0), larger than cap, or not read
 * whole.  The cache's files are read in one piece: each is bounded. */
static char *readCapped(const char *path, off_t cap, size_t *len, int *exists) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    *exists = fd >= 0;
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size <= cap && (buf = malloc((size_t)st.st_size + 1))) {
        if (readFull(fd, buf, (size_t)st.st_size) == st.st_size) {
            buf[st.st_size] = '\0';
            *len = (size_t)st.st_size;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    close(fd);
    return buf;
}

/* Read the snapshot file into c->snap (invalid when missing or corrupt).
 * The caller holds the lock. */
static void readSnapshot(catalogCache *c) {
    snapFree(&c->snap);
    size_t len = 0;
    int exists;
    char *buf = readCapped(c->path, CACHE_FILE_MAX, &len, &exists);
    if (!exists) return;
    if (buf && parseSnapshot(&c->snap, buf, len) == 0) {
        /* the endpoint that answered last is asked first */
        sourcePrefer(c->src, c->snap.endpoint);
        return;
    }
    if (!c->warned++) logWarn("%s: catalog snapshot is corrupt; ignoring it", c->path);
    free(buf);
}

int cacheSnapshotCheck(const char *text, size_t len, size_t *ntables, size_t *nentries) {
    snapshot s;
    char *buf = malloc(len + 1);
    if (!buf) return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (parseSnapshot(&s, buf, len) != 0) {
        free(buf);
        return -1;
    }
    *ntables = s.ntables;
    *nentries = s.n;
    snapFree(&s); /* frees buf too */
    return 0;
}

/* --- writing --------------------------------------------------------- */

/* One directory entry of a snapshot answer as a snapshot-file line.
 * Refuses anything that could break the line format. */
static int entryLine(FILE *f, const cJSON *e) {
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(e, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(e, "schema");
    if (!cJSON_IsString(kind) || !cJSON_IsString(ns) || !nameIsValid(ns->valuestring)) return -1;
    if (strcmp(kind->valuestring, "namespace") == 0) {
        fprintf(f, "n\t%s\n", ns->valuestring);
        return 0;
    }
    if (strcmp(kind->valuestring, "table") != 0 || !cJSON_IsString(name) ||
        !nameIsValid(name->valuestring) || !cJSON_IsString(id) || !idIsValid(id->valuestring) ||
        !cJSON_IsArray(schema))
        return -1;
    char *text = cJSON_PrintUnformatted(schema);
    int rc = text && !strpbrk(text, "\t\n") ? 0 : -1;
    if (!rc) fprintf(f, "t\t%s\t%s\t%s\t%s\n", ns->valuestring, name->valuestring, id->valuestring, text);
    cJSON_free(text);
    return rc;
}

/* Write body (len bytes, freed here) and its "crc32" line as the file
 * name of the cache directory, atomically (a temporary file, fsync,
 * rename).  The caller holds LOCK_EX. */
static int commitChecked(catalogCache *c, const char *name, char *body, size_t len, lakeError *err) {
    char tail[32];
    snprintf(tail, sizeof tail, "crc32 %08lx\n", crc32(0, (const Bytef *)body, (uInt)len));
    atomicFile af;
    int rc = atomicOpen(&af, c->dir, name, 1, 0600, err);
    if (!rc && (writeAll(af.fd, body, len) < 0 || writeAll(af.fd, tail, strlen(tail)) < 0))
        rc = errSetErrno(err, LAKE_EFAIL, errno, "%s/%s", c->dir, name);
    if (!rc) rc = atomicCommit(&af, err);
    atomicAbort(&af);
    free(body);
    return rc;
}

/* Write the snapshot file atomically from s, with the directory taken from
 * entries (a snapshot answer's array) when not NULL, else from s.  The
 * caller holds LOCK_EX. */
static int writeSnapshot(catalogCache *c, const snapshot *s, const cJSON *entries, lakeError *err) {
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f) return errSetErrno(err, LAKE_EFAIL, errno, "snapshot");
    const char *endpoint = sourceEndpoint(c->src) ? sourceEndpoint(c->src) : s->endpoint;
    fprintf(f, "lake-snapshot 1\nsource %s\nendpoint %s\ngeneration %lld\nauthority %s\n"
               "fetched_ms %lld\nfailed_ms %lld\nlast_error %s\ntables %zu\n",
            sourceName(c->src), endpoint ? endpoint : "-", (long long)s->generation,
            s->authority && *s->authority ? s->authority : "-", (long long)s->fetched_ms,
            (long long)s->failed_ms, s->last_error ? s->last_error : "", s->ntables);
    for (size_t i = 0; i < s->ntables; i++)
        fprintf(f, "%s %lld %lld %lld\n", s->tables[i].id, (long long)s->tables[i].epoch,
                (long long)s->tables[i].version, (long long)s->tables[i].resolved_ms);
    int bad = 0;
    if (entries) {
        const cJSON *e;
        fprintf(f, "entries %d\n", cJSON_GetArraySize(entries));
        cJSON_ArrayForEach(e, entries) bad |= entryLine(f, e);
    } else {
        fprintf(f, "entries %zu\n", s->n);
        for (size_t i = 0; i < s->n; i++) {
            const cacheEntry *e = &s->entries[i];
            if (e->name) fprintf(f, "t\t%s\t%s\t%s\t%s\n", e->ns, e->name, e->id, e->schema);
            else fprintf(f, "n\t%s\n", e->ns);
        }
    }
    if (bad) {
        fclose(f);
        free(body);
        return errSetStatus(err, "internal", "catalog_snapshot: malformed entry");
    }
    if (fclose(f) != 0) {
        free(body);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "snapshot");
    }
    return commitChecked(c, c->in_listing ? "listing" : "snapshot", body, len, err);
}

/* --- opening and locking ------------------------------------------------ */

int cacheOpen(const lakeConfig *cfg, catalogSource *src, const cacheOptions *opt,
              catalogCache **out, lakeError *err) {
    *out = NULL;
    catalogCache *c = calloc(1, sizeof *c);
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (!c) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
    c->lockfd = -1;
    c->src = src;
    c->opt = *opt;
    if (c->opt.ttl_s > CACHE_TTL_MAX) c->opt.ttl_s = CACHE_TTL_MAX; /* ms arithmetic stays exact */
    snprintf(dir, sizeof dir, "%s/%s", cfg->cache_dir, sourceKey(src));
    snprintf(path, sizeof path, "%s/snapshot", dir);
    c->max_stale_ms = cfg->catalog_max_stale * 1000;
    if (!(c->root = strdup(cfg->cache_dir)) || !(c->dir = strdup(dir)) || !(c->path = strdup(path))) {
        cacheClose(c);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
    }
    snprintf(path, sizeof path, "%s/listing", dir);
    if (!(c->lpath = strdup(path))) {
        cacheClose(c);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
    }
    int rc = mkdirs(dir, 0700, err);
    if (!rc) {
        snprintf(path, sizeof path, "%s/lock", dir);
        c->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (c->lockfd < 0) rc = errSetErrno(err, LAKE_EFAIL, errno, "%s", path);
    }
    if (!rc) tempSweep(dir); /* what a killed writer of this cache left */
    if (rc) {
        cacheClose(c);
        return rc;
    }
    *out = c;
    return 0;
}

static void pointFree(pointTable *p) {
    free(p->ns);
    free(p->name);
    free(p->id);
    free(p->schema);
    cJSON_Delete(p->reg);
    free(p);
}

/* What this process read or resolved, let go (cacheForget, cacheClose). */
static void forget(catalogCache *c) {
    for (pointTable *p = c->points, *next; p; p = next) {
        next = p->next;
        pointFree(p);
    }
    c->points = NULL;
    snapFree(&c->snap);
    snapFree(&c->lsnap);
}

void cacheForget(catalogCache *c) {
    if (!c) return;
    forget(c);
    c->refreshed = c->lrefreshed = c->listing = 0;
    c->warned = c->warned_stale = c->warned_whoami = 0;
    c->warned_table[0] = '\0';
}

void cacheClose(catalogCache *c) {
    if (!c) return;
    forget(c);
    free(c->lpath);
    free(c->pts.rows);
    free(c->pentries);
    for (int i = 0; i < c->nappended; i++) free(c->appended[i]);
    free(c->appended);
    if (c->lockfd >= 0) close(c->lockfd);
    free(c->root);
    free(c->dir);
    free(c->path);
    free(c);
}

static void unlock(catalogCache *c) { flock(c->lockfd, LOCK_UN); }

static int fresh(const catalogCache *c, int64_t now) {
    return c->snap.valid && now - c->snap.fetched_ms < c->opt.ttl_s * 1000 &&
           c->snap.fetched_ms <= now + 1000;
}

/* --- refreshing ------------------------------------------------------- */

static int deniedKnown(catalogCache *c, lakeError *err);
static void deniedRecord(catalogCache *c, const lakeError *err);
static void deniedClear(catalogCache *c);

/* The source refused the directory to this principal (not "who are you":
 * unauthenticated is never remembered), or refused it as too large: past
 * the server's --max-entries or --max-bytes, or this client's
 * CACHE_MAX_BYTES.  Either way the principal works as one denied it: the
 * tables by name (resolve), the list by list_tables, page by page. */
static int isDenied(const lakeError *err) {
    return err->status &&
           (strcmp(err->status, "permission_denied") == 0 || strcmp(err->status, "payload_too_large") == 0);
}

/* Why the cache is serving what it has, naming the source once:
 * "https://h:7700 unreachable", "local:/x/registry.db: registry busy…". */
static void staleReason(const catalogCache *c, const char *why, char *buf, size_t n) {
    const char *name = sourceName(c->src);
    if (!why || !*why) why = "unreachable";
    if (strncmp(why, name, strlen(name)) == 0) snprintf(buf, n, "%s", why);
    else snprintf(buf, n, "%s%s%s", name, strcmp(why, "unreachable") ? ": " : " ", why);
}

static int serveStale(catalogCache *c, int64_t now, lakeError *err) {
    char why[700];
    staleReason(c, c->opt.offline ? "not asked (--offline)" : c->snap.last_error, why, sizeof why);
    if (c->opt.strict) return errSet(err, LAKE_EUNAVAIL, "%s; the cached catalog is stale (--strict)", why);
    if (!c->warned_stale++)
        logWarn("%s; serving generation %lld fetched %lld s ago", why, (long long)c->snap.generation,
                (long long)((now - c->snap.fetched_ms) / 1000));
    return 0;
}

/* Another process holds the lock for longer than a reader should wait: a
 * refresh stuck on a slow source.  Serve what the file holds. */
static int serveBusy(catalogCache *c, lakeError *err) {
    free(c->snap.last_error);
    c->snap.last_error = strdup("another process is still refreshing");
    return serveStale(c, nowMs(), err);
}

static int listingFetch(catalogCache *c, int64_t known, cJSON **out, lakeError *err);

/* The directory from the source, as a catalog_snapshot answer: the
 * snapshot, or for the listing (c->in_listing) list_tables' pages. */
static int fetchDirectory(catalogCache *c, int64_t known, cJSON **ans, lakeError *err) {
    if (c->in_listing) return listingFetch(c, known, ans, err);
    return sourceSnapshot(c->src, known, CACHE_MAX_ENTRIES, CACHE_MAX_BYTES, ans, err);
}

/* How many list_tables pages a listing may take, generation moves
 * included, before it is given up as a catalog that will not hold still. */
#define LISTING_ATTEMPTS 3

/* One list_tables request: the first page conditional on known (< 0:
 * not), a later one after the table `after`; limit 0 leaves the page
 * size to the server. */
static int listingCall(catalogCache *c, int64_t known, const char *after, int64_t limit, cJSON **ans,
                       lakeError *err) {
    cJSON *req = cJSON_CreateObject();
    int ok = req != NULL;
    if (ok && *after) ok = cJSON_AddStringToObject(req, "after", after) != NULL;
    else if (ok && known >= 0) ok = cJSON_AddNumberToObject(req, "known_generation", (double)known) != NULL;
    if (ok && limit > 0) ok = cJSON_AddNumberToObject(req, "limit", (double)limit) != NULL;
    int rc = ok ? sourceCall(c->src, "list_tables", req, ans, err) : errSetErrno(err, LAKE_EFAIL, ENOMEM, "list_tables");
    cJSON_Delete(req);
    return rc;
}

/* Append a page's tables to entries as snapshot entries (a namespace's
 * entry before its first table), each after the last one kept, whose
 * "NS.T" after holds (n bytes).  internal for a malformed or unordered
 * table: the pages would never end, or the file's order would break. */
static int listingKeep(const cJSON *tables, cJSON *entries, char *after, size_t n, size_t *count, lakeError *err) {
    const cJSON *t;
    cJSON_ArrayForEach(t, tables) {
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(t, "namespace");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id");
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "schema");
        if (!cJSON_IsString(ns) || !nameIsValid(ns->valuestring) || !cJSON_IsString(name) ||
            !nameIsValid(name->valuestring) || !cJSON_IsString(id) || !idIsValid(id->valuestring) ||
            !cJSON_IsArray(schema))
            return errSetStatus(err, "internal", "list_tables: malformed table");
        size_t dot = strcspn(after, ".");
        int cmp = *after ? strncmp(ns->valuestring, after, dot) : 1;
        if (!cmp && ns->valuestring[dot]) cmp = 1; /* a longer name sorts later */
        if (!cmp) cmp = strcmp(name->valuestring, after + dot + 1);
        if (cmp <= 0) return errSetStatus(err, "internal", "list_tables: tables out of order");
        if (++*count > CACHE_MAX_ENTRIES)
            return errSetStatus(err, "payload_too_large", "the listing exceeds %d entries", CACHE_MAX_ENTRIES);
        int newNs = !*after || strncmp(ns->valuestring, after, dot) != 0 || ns->valuestring[dot];
        cJSON *e = cJSON_CreateObject(), *ne = newNs ? cJSON_CreateObject() : NULL;
        if (!e || (newNs && !ne)) {
            cJSON_Delete(e);
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "listing");
        }
        if (ne) {
            cJSON_AddStringToObject(ne, "kind", "namespace");
            cJSON_AddStringToObject(ne, "namespace", ns->valuestring);
            cJSON_AddItemToArray(entries, ne);
        }
        cJSON_AddStringToObject(e, "kind", "table");
        cJSON_AddStringToObject(e, "namespace", ns->valuestring);
        cJSON_AddStringToObject(e, "name", name->valuestring);
        cJSON_AddStringToObject(e, "id", id->valuestring);
        cJSON_AddItemToObject(e, "schema", cJSON_Duplicate(schema, 1));
        cJSON_AddItemToArray(entries, e);
        snprintf(after, n, "%s.%s", ns->valuestring, name->valuestring);
    }
    return 0;
}

/* The listing of a principal denied the snapshot, as a catalog_snapshot
 * answer (*out, the caller frees): list_tables page by page, the first
 * conditional on known, all of one generation (a generation that moves
 * between pages starts the listing again, LISTING_ATTEMPTS times at
 * most).  LAKE_TEST_LIST_PAGE=N asks for pages of N tables (tests), and
 * LAKE_TEST_LIST_HOLD holds after each page (interrupt.h's testHold). */
static int listingFetch(catalogCache *c, int64_t known, cJSON **out, lakeError *err) {
    *out = NULL;
    const char *knob = getenv("LAKE_TEST_LIST_PAGE");
    int64_t limit = knob ? strtoll(knob, NULL, 10) : 0;
    for (int attempt = 1; attempt <= LISTING_ATTEMPTS; attempt++) {
        cJSON *all = cJSON_CreateObject(), *entries = cJSON_AddArrayToObject(all, "entries");
        char after[2 * NAME_MAX_LEN + 2] = "", authority[64] = "";
        int64_t g = -1;
        size_t count = 0;
        int more = 1, moved = 0, rc = entries ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "listing");
        while (!rc && more && !moved) {
            cJSON *ans = NULL;
            if ((rc = listingCall(c, known, after, limit, &ans, err))) break;
            const cJSON *status = cJSON_GetObjectItemCaseSensitive(ans, "status");
            const cJSON *auth = cJSON_GetObjectItemCaseSensitive(ans, "authority");
            const cJSON *tables = cJSON_GetObjectItemCaseSensitive(ans, "tables");
            int64_t ag;
            if (!*after && g < 0 && cJSON_IsString(status) && strcmp(status->valuestring, "not_modified") == 0) {
                cJSON_Delete(all);
                *out = ans; /* catalog_snapshot's not_modified, field for field */
                return 0;
            }
            if (!jsonWhole(cJSON_GetObjectItemCaseSensitive(ans, "generation"), 0, &ag) || !cJSON_IsArray(tables)) {
                rc = errSetStatus(err, "internal", "list_tables: unexpected answer");
            } else if (g >= 0 && ag != g) {
                moved = 1;
            } else {
                g = ag;
                if (cJSON_IsString(auth)) snprintf(authority, sizeof authority, "%s", auth->valuestring);
                more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "more"));
                if (more && !cJSON_GetArraySize(tables)) rc = errSetStatus(err, "internal", "list_tables: an empty page");
                else rc = listingKeep(tables, entries, after, sizeof after, &count, err);
            }
            testHold("LAKE_TEST_LIST_HOLD"); /* the listing suite: a change between two pages */
            cJSON_Delete(ans);
        }
        if (rc || moved) {
            cJSON_Delete(all);
            if (rc) return rc;
            continue;
        }
        cJSON_AddStringToObject(all, "status", "snapshot");
        cJSON_AddNumberToObject(all, "generation", (double)g);
        if (*authority) cJSON_AddStringToObject(all, "authority", authority);
        *out = all;
        return 0;
    }
    return errSetStatus(err, "unavailable", "the catalog changed while it was listed, %d times; retry",
                        LISTING_ATTEMPTS);
}

/* Refresh under LOCK_EX; c->snap holds the result.  started_ms: when this
 * process decided it needed a refresh (a snapshot written after that by
 * another process is as good as our own).  explicit: the user asked for
 * this refresh, so a failing source is the answer, not a stale snapshot. */
static int refreshLocked(catalogCache *c, int force, int explicit, int64_t started_ms,
                         lakeError *err) {
    readSnapshot(c);
    int64_t now = nowMs();
    if (c->snap.valid && !force && (fresh(c, now) || c->snap.fetched_ms >= started_ms)) return 0;
    if (c->opt.offline) {
        if (c->snap.valid) return c->opt.strict ? serveStale(c, now, err) : 0;
        return errSet(err, LAKE_EUNAVAIL, "no cached catalog for %s (offline)", sourceName(c->src));
    }
    /* the backoff saves a doomed call when a stale answer will do; with
     * --strict it will not, so the source is asked */
    if (c->snap.valid && !force && !explicit && !c->opt.strict && c->snap.failed_ms > c->snap.fetched_ms &&
        now - c->snap.failed_ms < CACHE_FAILURE_BACKOFF_MS && now >= c->snap.failed_ms)
        return serveStale(c, now, err);

    cJSON *ans = NULL;
    int64_t known = c->snap.valid && !force ? c->snap.generation : -1;
    c->refreshed = 1;
    /* with a snapshot to serve, an outage is answered at once from it, not
     * after retry_deadline of retries (an explicit refresh waits them out) */
    sourceNoRetry(c->src, c->snap.valid && !explicit);
    int rc = fetchDirectory(c, known, &ans, err);
    sourceNoRetry(c->src, 0);
    now = nowMs();
    if (rc && isDenied(err) && !c->in_listing) deniedRecord(c, err);
    if (!rc && !c->in_listing) deniedClear(c);
    if (rc) {
        if (!c->snap.valid || !sourceOutage(err)) return rc;
        free(c->snap.last_error);
        c->snap.last_error = strdup(err->msg);
        c->snap.failed_ms = now;
        lakeError ignored = {0};
        if (writeSnapshot(c, &c->snap, NULL, &ignored)) logWarn("%s", ignored.msg);
        if (explicit) return rc;
        errClear(err);
        return serveStale(c, now, err);
    }
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(ans, "status");
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(ans, "generation");
    const cJSON *auth = cJSON_GetObjectItemCaseSensitive(ans, "authority");
    char authority[64]; /* a copy: ans may be replaced below */
    snprintf(authority, sizeof authority, "%s",
             cJSON_IsString(auth) && idIsValid(auth->valuestring) ? auth->valuestring : "-");
    int sameAuthority = c->snap.valid && strcmp(c->snap.authority, authority) == 0;
    int64_t g = -1;
    if (c->snap.valid && !sameAuthority) {
        /* a replaced registry may reuse our generation number: only a
         * full snapshot of the new authority can be trusted */
        logWarn("%s: the catalog authority changed (%s, was %s); replacing the cached catalog",
                sourceName(c->src), authority, c->snap.authority);
        if (cJSON_IsString(status) && strcmp(status->valuestring, "not_modified") == 0) {
            cJSON_Delete(ans);
            ans = NULL;
            if ((rc = fetchDirectory(c, -1, &ans, err))) return rc;
            status = cJSON_GetObjectItemCaseSensitive(ans, "status");
            gen = cJSON_GetObjectItemCaseSensitive(ans, "generation");
        }
    }
    if (cJSON_IsString(status) && strcmp(status->valuestring, "not_modified") == 0 &&
        sameAuthority && jsonWhole(gen, 0, &g) && g == c->snap.generation) {
        c->snap.fetched_ms = now;
        c->snap.failed_ms = 0;
        free(c->snap.last_error);
        c->snap.last_error = NULL;
        rc = writeSnapshot(c, &c->snap, NULL, err);
    } else if (cJSON_IsString(status) && strcmp(status->valuestring, "snapshot") == 0 &&
               jsonWhole(gen, 0, &g) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(ans, "entries"))) {
        /* per-table state carries over (a dropped table's state is inert:
         * table ids are never reused) */
        snapshot next = c->snap;
        next.generation = g;
        next.authority = authority;
        next.fetched_ms = now;
        next.failed_ms = 0;
        next.last_error = NULL;
        rc = writeSnapshot(c, &next, cJSON_GetObjectItemCaseSensitive(ans, "entries"), err);
        /* read back what was written: one parser for the file format */
        if (!rc) {
            readSnapshot(c);
            if (!c->snap.valid) rc = errSet(err, LAKE_EFAIL, "%s: cannot read back the snapshot", c->path);
        }
    } else {
        rc = errSetStatus(err, "internal", "catalog_snapshot: unexpected answer");
    }
    cJSON_Delete(ans);
    return rc;
}

/* Take the lock (LOCK_SH or LOCK_EX), waiting at most wait_ms (forever
 * when < 0).  Returns 0 locked, 1 timed out, or an error code. */
static int lockWait(catalogCache *c, int how, int64_t wait_ms, lakeError *err) {
    if (wait_ms < 0) return lockFd(c->lockfd, how, err);
    int64_t until = nowMs() + wait_ms;
    for (;;) {
        if (flock(c->lockfd, how | LOCK_NB) == 0) return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return errSetErrno(err, LAKE_EFAIL, errno, "flock %s", c->dir);
        if (nowMs() >= until) return 1;
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* The refresh every reader of an expired snapshot goes through.  Another
 * process may be refreshing already: wait for it (coalescing) but, with a
 * snapshot to fall back on, not longer than CACHE_REFRESH_WAIT_MS. */
static int refresh(catalogCache *c, int force, lakeError *err) {
    int64_t started = nowMs();
    int rc = lockWait(c, LOCK_EX, c->snap.valid ? CACHE_REFRESH_WAIT_MS : -1, err);
    if (rc == 1) return serveBusy(c, err);
    if (rc) return rc;
    rc = refreshLocked(c, force, 0, started, err);
    unlock(c);
    return rc;
}

static int listingRefresh(catalogCache *c, int force, lakeError *err);

int cacheRefresh(catalogCache *c, int force, lakeError *err) {
    if (c->listing) return listingRefresh(c, force, err);
    /* an explicit refresh asks now, whatever the age */
    int64_t started = nowMs() + (force ? 0 : 1);
    if (lockFd(c->lockfd, LOCK_EX, err)) return err->code;
    int64_t ttl = c->opt.ttl_s;
    c->opt.ttl_s = 0;
    int rc = refreshLocked(c, force, 1, started, err);
    c->opt.ttl_s = ttl;
    unlock(c);
    return rc;
}

int cacheRefreshListing(catalogCache *c, int force, lakeError *err) { return listingRefresh(c, force, err); }

/* Load the directory: the file if fresh, else a refresh. */
static int load(catalogCache *c, lakeError *err) {
    if (c->snap.valid && (c->refreshed || fresh(c, nowMs()))) return 0;
    if (!c->in_listing && deniedKnown(c, err)) return err->code;
    int rc = lockWait(c, LOCK_SH, CACHE_REFRESH_WAIT_MS, err);
    if (rc > 1) return rc;
    /* timed out behind a refresher: the file is only ever replaced whole
     * (rename), so reading it unlocked still gives one consistent snapshot */
    readSnapshot(c);
    if (rc == 0) unlock(c);
    int64_t now = nowMs();
    if (rc == 1 && c->snap.valid && !fresh(c, now) && !c->opt.offline) return serveBusy(c, err);
    if (c->snap.valid && fresh(c, now)) return 0;
    if (c->snap.valid && c->opt.offline) return c->opt.strict ? serveStale(c, now, err) : 0;
    return refresh(c, 0, err);
}

/* Point c->snap, c->path and c->refreshed at the listing, or back. */
static void listingSwap(catalogCache *c) {
    snapshot s = c->snap;
    c->snap = c->lsnap;
    c->lsnap = s;
    char *p = c->path;
    c->path = c->lpath;
    c->lpath = p;
    int r = c->refreshed;
    c->refreshed = c->lrefreshed;
    c->lrefreshed = r;
    c->in_listing = !c->in_listing;
}

/* load() of the listing: from then on this process's directory. */
static int listingLoad(catalogCache *c, lakeError *err) {
    c->listing = 1;
    listingSwap(c);
    int rc = load(c, err);
    listingSwap(c);
    return rc;
}

/* cacheRefresh's refresh of the listing. */
static int listingRefresh(catalogCache *c, int force, lakeError *err) {
    int64_t started = nowMs() + (force ? 0 : 1);
    if (lockFd(c->lockfd, LOCK_EX, err)) return err->code;
    c->listing = 1;
    listingSwap(c);
    int64_t ttl = c->opt.ttl_s;
    c->opt.ttl_s = 0;
    int rc = refreshLocked(c, force, 1, started, err);
    c->opt.ttl_s = ttl;
    listingSwap(c);
    unlock(c);
    return rc;
}

/* The listing as the file has it (no source call), when fresh or offline. */
static const snapshot *listingPeek(catalogCache *c) {
    lakeError ignored = {0};
    /* most principals have none: no lock to wait on for it */
    if (!c->lsnap.valid && access(c->lpath, F_OK) != 0) return NULL;
    listingSwap(c);
    int ok = c->snap.valid;
    if (!ok) {
        int rc = lockWait(c, LOCK_SH, CACHE_REFRESH_WAIT_MS, &ignored);
        if (rc <= 1) readSnapshot(c);
        if (rc == 0) unlock(c);
    }
    ok = c->snap.valid && (c->opt.offline || fresh(c, nowMs()));
    listingSwap(c);
    return ok ? &c->lsnap : NULL;
}

int cacheDirectory(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err) {
    int rc = load(c, err);
    *entries = rc ? NULL : c->snap.entries;
    *n = rc ? 0 : c->snap.n;
    return rc;
}

static int pointsLoad(catalogCache *c, lakeError *err);

/* --offline (TAB completion): the listing and the tables this principal
 * resolved here, which a listing fetched before may lack; the union,
 * sorted, in c->pentries. */
static int listingWithPoints(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err) {
    int rc = pointsLoad(c, err);
    if (rc) return rc;
    free(c->pentries);
    if (!(c->pentries = calloc(c->lsnap.n + c->pts.n + 1, sizeof *c->pentries)))
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
    size_t i = 0, j = 0, k = 0;
    while (i < c->lsnap.n || j < c->pts.n) {
        const cacheEntry *a = i < c->lsnap.n ? &c->lsnap.entries[i] : NULL;
        const pointRow *b = j < c->pts.n ? &c->pts.rows[j] : NULL;
        int cmp = !a ? 1 : !b ? -1 : strcmp(a->ns, b->ns);
        if (!cmp) cmp = strcmp(a->name ? a->name : "", b->name);
        if (cmp <= 0) {
            c->pentries[k++] = *a;
            i++;
            j += cmp == 0;
        } else {
            c->pentries[k++] = (cacheEntry){b->ns, b->name, b->id, NULL};
            j++;
        }
    }
    *entries = c->pentries;
    *n = k;
    return 0;
}

int cacheListing(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err) {
    /* a fresh listing is this principal's answer, even once the refusal
     * of the snapshot is forgotten (CACHE_DENIED_KEEP_S may be shorter
     * than the listing's age): no call */
    if (!c->listing && listingPeek(c)) c->listing = 1;
    int rc = c->listing ? listingLoad(c, err) : load(c, err);
    /* denied the snapshot (role user): the tables it may read; --offline
     * with no snapshot, the listing too (its refusal may be forgotten) */
    if (rc && !c->listing && (isDenied(err) || (c->opt.offline && !c->snap.valid))) {
        lakeError denied = *err;
        errClear(err);
        rc = listingLoad(c, err);
        /* a source older than list_tables, or --offline without a
         * listing: the refusal stands (the caller may have another answer) */
        if (rc && ((err->status && strcmp(err->status, "not_found") == 0) || (c->opt.offline && !c->lsnap.valid))) {
            c->listing = 0;
            *err = denied;
            rc = err->code;
        }
    }
    if (!rc && c->listing && c->opt.offline) return listingWithPoints(c, entries, n, err);
    const snapshot *s = c->listing ? &c->lsnap : &c->snap;
    *entries = rc ? NULL : s->entries;
    *n = rc ? 0 : s->n;
    return rc;
}

/* Binary search: entries are sorted by (namespace, name), "" first. */
static const cacheEntry *find(const snapshot *s, const char *ns, const char *name) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const cacheEntry *e = &s->entries[mid];
        int cmp = strcmp(e->ns, ns);
        if (!cmp) cmp = strcmp(e->name ? e->name : "", name ? name : "");
        if (!cmp) return e;
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static pointTable *pointFind(const catalogCache *c, const char *ns, const char *name);
static pointRow *pointsRow(catalogCache *c, const char *ns, const char *name, int create);

const cacheEntry *cacheFindTable(catalogCache *c, const char *ns, const char *name) {
    if (c->snap.valid) return find(&c->snap, ns, name);
    const pointTable *p = pointFind(c, ns, name);
    return p && p->id ? &p->e : NULL;
}

int cacheHasNamespace(catalogCache *c, const char *ns) {
    const snapshot *s = c->listing ? &c->lsnap : &c->snap;
    if (s->valid && find(s, ns, NULL)) return 1;
    /* --offline: a table resolved here names it too (listingWithPoints) */
    for (size_t i = 0; c->listing && c->opt.offline && i < c->pts.n; i++)
        if (strcmp(c->pts.rows[i].ns, ns) == 0) return 1;
    return 0;
}

int cacheStatus(catalogCache *c, cacheStatusInfo *info, lakeError *err) {
    memset(info, 0, sizeof *info);
    if (lockFd(c->lockfd, LOCK_SH, err)) return err->code;
    readSnapshot(c);
    /* no snapshot: the listing of a principal denied it, if any */
    int listed = 0;
    if (!c->snap.valid) {
        listingSwap(c);
        readSnapshot(c);
        if (!(listed = c->snap.valid)) listingSwap(c);
    }
    unlock(c);
    int64_t now = nowMs();
    info->present = c->snap.valid;
    info->generation = c->snap.generation;
    info->age_s = c->snap.valid ? (now - c->snap.fetched_ms) / 1000 : -1;
    info->stale = !fresh(c, now);
    info->last_error = c->snap.last_error ? c->snap.last_error : "";
    info->endpoint = c->snap.endpoint ? c->snap.endpoint : "";
    if (listed) listingSwap(c);
    return 0;
}

int cacheAfterChange(catalogCache *c, lakeError *err) { return cacheRefresh(c, 0, err); }

/* --- registrations -------------------------------------------------------- */

static void regPath(const catalogCache *c, char *out, size_t n, const char *id, int64_t version) {
    snprintf(out, n, "%s/registrations/%s/%lld.json", c->dir, id, (long long)version);
}

/* Registrations and whoami are kept as their JSON on one line, then
 * "crc32 <hex>" of that line: a torn or edited file is asked for again,
 * never trusted. */

/* A JSON file of the cache, or NULL when missing, torn or edited; with
 * ixdir, its registration index (catalog/regindex.h) written as
 * ixdir/ixname too. */
static cJSON *checkedJsonLoadIndexing(const char *path, const char *ixdir, const char *ixname) {
    size_t len = 0;
    int exists;
    cJSON *j = NULL;
    char *buf = readCapped(path, CACHE_MAX_BYTES, &len, &exists), *nl, hex[16];
    if (buf && (nl = strchr(buf, '\n'))) {
        uLong crc = crc32(0, (const Bytef *)buf, (uInt)(nl - buf));
        snprintf(hex, sizeof hex, "crc32 %08lx", crc);
        *nl = '\0';
        if (strncmp(nl + 1, hex, strlen(hex)) == 0)
            j = jsonStrictParse(buf, (size_t)(nl - buf), NULL, NULL, &(jsonFault){0});
        if (j && ixdir) regIndexWrite(ixdir, ixname, j, buf, (size_t)(nl - buf), (uint32_t)crc, len);
    }
    free(buf);
    return j;
}

static cJSON *checkedJsonLoad(const char *path) { return checkedJsonLoadIndexing(path, NULL, NULL); }

/* Write j as dir/name atomically, with its checksum line; with ixname,
 * its registration index as dir/ixname too. */
static void checkedJsonStoreIndexing(const char *dir, const char *name, const cJSON *j, const char *ixname) {
    char *text = cJSON_PrintUnformatted(j), tail[32];
    atomicFile af;
    lakeError err = {0};
    if (text && mkdirs(dir, 0700, &err) == 0 && atomicOpen(&af, dir, name, 1, 0600, &err) == 0) {
        uLong crc = crc32(0, (const Bytef *)text, (uInt)strlen(text));
        snprintf(tail, sizeof tail, "\ncrc32 %08lx\n", crc);
        if (writeAll(af.fd, text, strlen(text)) == 0 && writeAll(af.fd, tail, strlen(tail)) == 0 &&
            atomicCommit(&af, &err) == 0 && ixname) {
            /* of the text as a reader of the file parses it (regindex.h) */
            cJSON *back = jsonStrictParse(text, strlen(text), NULL, NULL, &(jsonFault){0});
            if (back) regIndexWrite(dir, ixname, back, text, strlen(text), (uint32_t)crc, strlen(text) + strlen(tail));
            cJSON_Delete(back);
        }
        atomicAbort(&af);
    }
    cJSON_free(text);
}

static void checkedJsonStore(const char *dir, const char *name, const cJSON *j) {
    checkedJsonStoreIndexing(dir, name, j, NULL);
}

/* The cached registration of (id, version), or NULL.  With ix: when its
 * index (registrations/ID/VERSION.rix) is good, the index into *ix and
 * the registration without "segments"; otherwise *ix NULL, the whole
 * registration, and its index built for the next time. */
static cJSON *regLoadIndexed(const catalogCache *c, const char *id, int64_t version, regIndex **ix) {
    char path[PATH_MAX], ipath[PATH_MAX + 80], dir[PATH_MAX], name[64];
    regPath(c, path, sizeof path, id, version);
    cJSON *j = NULL;
    if (ix) {
        snprintf(dir, sizeof dir, "%s/registrations/%s", c->dir, id);
        snprintf(name, sizeof name, "%lld.rix", (long long)version);
        snprintf(ipath, sizeof ipath, "%s/%s", dir, name);
        regIndex *x = regIndexOpen(ipath, path);
        if (x && (j = regIndexHead(x))) *ix = x;
        else regIndexClose(x);
    }
    if (!j) j = checkedJsonLoadIndexing(path, ix ? dir : NULL, ix ? name : NULL);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "version");
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(j, "id");
    int64_t n;
    if (!jsonWhole(v, 0, &n) || n != version || !cJSON_IsString(i) ||
        strcmp(i->valuestring, id) != 0) {
        cJSON_Delete(j); /* foreign: ask again */
        j = NULL;
        if (ix) {
            regIndexClose(*ix);
            *ix = NULL;
        }
    }
    return j;
}

static cJSON *regLoad(const catalogCache *c, const char *id, int64_t version) {
    return regLoadIndexed(c, id, version, NULL);
}

/* Keep the CACHE_REG_KEEP newest registrations of the table in dir (and
 * their indexes): the older ones are asked for again if ever needed (AT
 * an old version). */
static void regPrune(const char *dir) {
    int64_t keep[CACHE_REG_KEEP + 1];
    size_t n = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    /* first pass: the CACHE_REG_KEEP highest versions, in keep[] */
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long long v = strtoll(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".json") != 0 || v < 0) continue;
        size_t i = n < CACHE_REG_KEEP ? n++ : CACHE_REG_KEEP;
        if (i == CACHE_REG_KEEP && v <= keep[CACHE_REG_KEEP - 1]) continue;
        if (i == CACHE_REG_KEEP) i--;
        while (i > 0 && keep[i - 1] < v) { keep[i] = keep[i - 1]; i--; }
        keep[i] = v;
    }
    if (n == CACHE_REG_KEEP) {
        rewinddir(d);
        for (struct dirent *e; (e = readdir(d));) {
            char *end;
            long long v = strtoll(e->d_name, &end, 10);
            if (end == e->d_name || (strcmp(end, ".json") != 0 && strcmp(end, ".rix") != 0) ||
                v >= keep[CACHE_REG_KEEP - 1])
                continue;
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

/* Keep reg in the cache; with indexing, its index too (for a reader
 * that prunes: cacheResolveIndexed). */
static void regStoreIndexing(const catalogCache *c, const cJSON *reg, int indexing) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(reg, "id");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(reg, "version");
    int64_t n;
    if (!cJSON_IsString(id) || !idIsValid(id->valuestring) || !jsonWhole(v, 0, &n)) return;
    char dir[PATH_MAX], name[64], ixname[64];
    snprintf(dir, sizeof dir, "%s/registrations/%s", c->dir, id->valuestring);
    snprintf(name, sizeof name, "%lld.json", (long long)n);
    snprintf(ixname, sizeof ixname, "%lld.rix", (long long)n);
    checkedJsonStoreIndexing(dir, name, reg, indexing ? ixname : NULL);
    regPrune(dir);
}

static void regStore(const catalogCache *c, const cJSON *reg) { regStoreIndexing(c, reg, 0); }

static int64_t mtimeMs(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

/* When this host last had (id, version)'s registration from the source,
 * in ms (the file's time: every answer stores it again); 0 when not
 * cached, or when this host expired versions since (cacheAfterExpire). */
static int64_t regCheckedMs(const catalogCache *c, const char *id, int64_t version) {
    char path[PATH_MAX];
    regPath(c, path, sizeof path, id, version);
    int64_t checked = mtimeMs(path);
    snprintf(path, sizeof path, "%s/expired", c->dir);
    return checked && checked > mtimeMs(path) ? checked : 0;
}

/* --- forgetting what can no longer be served (issue 41) -----------------
 *
 * A resolve answer carries "oldest", the table's oldest unexpired version
 * (registry.c).  The registrations cached of older versions are removed
 * (with their indexes), and then every segment file of the host that no
 * cached registration, of any source cached under cache_dir, references:
 * the rows of an expired version do not outlive its expiry on a host that
 * has since asked the source about the table.  Best effort: a failure
 * leaves files for the next occasion, never fails the command. */

/* 1 when name is VERSION.json or VERSION.rix, VERSION into *v. */
static int regFileVersion(const char *name, int64_t *v) {
    char *end;
    long long n = strtoll(name, &end, 10);
    if (end == name || n < 0 || (strcmp(end, ".json") != 0 && strcmp(end, ".rix") != 0)) return 0;
    *v = n;
    return 1;
}

/* Remove the files of registrations/ID/ of versions below oldest (all of
 * them when oldest < 0, and the directory): the count removed. */
static int regForget(const char *root_dir, const char *id, int64_t oldest) {
    char dir[PATH_MAX];
    DIR *d = snprintf(dir, sizeof dir, "%s/registrations/%s", root_dir, id) < (int)sizeof dir ? opendir(dir) : NULL;
    if (!d) return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int64_t v;
        if (e->d_name[0] == '.' && oldest >= 0) continue;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if ((oldest < 0 || (regFileVersion(e->d_name, &v) && v < oldest)) && unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    if (oldest < 0) rmdir(dir);
    return removed;
}

typedef struct digests {
    char **v;
    size_t n, cap;
} digests;

/* Add the segments' digests of the registration at path to *k: 0, or -1
 * when out of memory. */
static int digestsOf(const char *path, digests *k) {
    cJSON *reg = checkedJsonLoad(path), *g;
    int rc = 0;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(reg, "segments")) {
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(g, "sha256");
        if (!cJSON_IsString(sha)) continue;
        if (k->n == k->cap) {
            size_t ncap = k->cap ? 2 * k->cap : 256;
            char **nv = realloc(k->v, ncap * sizeof *nv);
            if (!nv) { rc = -1; break; }
            k->v = nv;
            k->cap = ncap;
        }
        if (!(k->v[k->n] = strdup(sha->valuestring))) { rc = -1; break; }
        k->n++;
    }
    cJSON_Delete(reg);
    return rc;
}

/* Add every digest of the registrations cached under dir/registrations. */
static int digestsUnder(const char *dir, digests *k) {
    char path[PATH_MAX];
    DIR *ids = snprintf(path, sizeof path, "%s/registrations", dir) < (int)sizeof path ? opendir(path) : NULL;
    if (!ids) return 0;
    int rc = 0;
    for (struct dirent *t; !rc && (t = readdir(ids));) {
        if (!idIsValid(t->d_name)) continue;
        char tdir[PATH_MAX];
        DIR *d = snprintf(tdir, sizeof tdir, "%s/%s", path, t->d_name) < (int)sizeof tdir ? opendir(tdir) : NULL;
        for (struct dirent *e; !rc && d && (e = readdir(d));) {
            char *end;
            int64_t v;
            if (!regFileVersion(e->d_name, &v) || !(end = strchr(e->d_name, '.')) || strcmp(end, ".json") != 0)
                continue;
            char file[PATH_MAX];
            if (snprintf(file, sizeof file, "%s/%s", tdir, e->d_name) < (int)sizeof file) rc = digestsOf(file, k);
        }
        if (d) closedir(d);
    }
    closedir(ids);
    return rc;
}

/* Remove the segment files no cached registration of any source under
 * c->root references. */
static void segmentsForget(const catalogCache *c) {
    digests k = {0};
    int rc = 0;
    DIR *d = opendir(c->root);
    for (struct dirent *e; !rc && d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "segments") == 0) continue;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s/%s", c->root, e->d_name) < (int)sizeof dir) rc = digestsUnder(dir, &k);
    }
    if (d) closedir(d);
    if (!rc && d) { /* a partial list would remove what is still referenced */
        int64_t removed;
        lakeError err = {0};
        if (segcacheForget(c->root, k.v, k.n, &removed, &err)) logWarn("%s", err.msg);
    }
    for (size_t i = 0; i < k.n; i++) free(k.v[i]);
    free(k.v);
}

/* What the answer ans (a registration or not_modified) says of its table's
 * expired versions: the cached ones are forgotten, and the segments only
 * they referenced. */
static void learnOldest(const catalogCache *c, const cJSON *ans) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ans, "id");
    int64_t oldest;
    if (!cJSON_IsString(id) || !idIsValid(id->valuestring) ||
        !jsonWhole(cJSON_GetObjectItemCaseSensitive(ans, "oldest"), 0, &oldest))
        return; /* a server older than "oldest": nothing learnt */
    if (regForget(c->dir, id->valuestring, oldest) > 0) segmentsForget(c);
}

void cacheAfterExpire(catalogCache *c, const char *ns, const char *name) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/expired", c->dir);
    /* its time is what counts: a registration had before it is asked again */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        futimens(fd, NULL);
        close(fd);
    }
    /* the table just expired: what this host cached of it goes now (the
     * others' when next resolved) */
    cJSON *ans = NULL;
    lakeError ignored = {0};
    if (ns && !c->opt.offline && sourceResolve(c->src, ns, name, -1, &ans, &ignored) == 0) learnOldest(c, ans);
    cJSON_Delete(ans);
}

int cachePurge(catalogCache *c, const char *ns, const char *name, int64_t *removed, lakeError *err) {
    *removed = 0;
    char id[64] = "";
    if (ns) {
        /* its id as this host knows it: the snapshot, the listing, the points */
        const cacheEntry *e = NULL;
        lakeError ignored = {0};
        if (load(c, &ignored) == 0) e = cacheFindTable(c, ns, name);
        const snapshot *l = e ? NULL : listingPeek(c);
        if (l) e = find(l, ns, name);
        if (e) snprintf(id, sizeof id, "%s", e->id);
        if (!e && pointsLoad(c, &ignored) == 0) {
            const pointRow *r = pointsRow(c, ns, name, 0);
            if (r) snprintf(id, sizeof id, "%s", r->id);
        }
        if (!*id) return 0; /* nothing cached of it here */
    }
    /* every source's cache under cache_dir: another principal's too */
    DIR *d = opendir(c->root);
    if (!d) return errno == ENOENT ? 0 : errSetErrno(err, errCodeForErrno(errno), errno, "%s", c->root);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "segments") == 0) continue;
        char dir[PATH_MAX], path[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s/%s", c->root, e->d_name) >= (int)sizeof dir) continue;
        if (*id) {
            *removed += regForget(dir, id, -1);
            continue;
        }
        DIR *r = snprintf(path, sizeof path, "%s/registrations", dir) < (int)sizeof path ? opendir(path) : NULL;
        for (struct dirent *t; r && (t = readdir(r));)
            if (idIsValid(t->d_name)) *removed += regForget(dir, t->d_name, -1);
        if (r) closedir(r);
        rmdir(path);
    }
    closedir(d);
    int64_t segs = 0;
    if (!*id) {
        /* everything: no registration is left to keep a segment */
        int rc = segcacheForget(c->root, NULL, 0, &segs, err);
        *removed += segs;
        return rc;
    }
    segmentsForget(c);
    return 0;
}

static int serveStaleRegistration(catalogCache *c, const char *why_msg, const char *ns, const char *name,
                                  int64_t version, int64_t resolved_ms, cJSON **reg, lakeError *err);

/* A registration this host had from the source at had_ms, to be served
 * without asking it (an outage, --offline): 69 when that is longer ago
 * than catalog_max_stale, the bound on how long an unreachable host shows
 * what may have been erased since (lake(7)), *reg freed; else 0. */
static int staleBound(const catalogCache *c, const char *ns, const char *name, int64_t version, int64_t had_ms,
                      cJSON **reg, lakeError *err) {
    int64_t age = nowMs() - had_ms;
    if (age <= c->max_stale_ms) return 0;
    cJSON_Delete(*reg);
    *reg = NULL;
    return errSet(err, LAKE_EUNAVAIL,
                  "%s.%s: the cached registration of version %lld is %lld s old, older than catalog_max_stale "
                  "(%lld s); not served without the metadata source",
                  ns, name, (long long)version, (long long)(age / 1000), (long long)(c->max_stale_ms / 1000));
}

/* A fixed version of ns.name (table id, NULL when not known here).  Its
 * rows never change, but it may expire: so the cached registration is
 * served while this host had it from the source within the TTL (or
 * --offline), like the current version, and asked again after.  An
 * `expired` answer wins: the cached registration is removed and the
 * refusal stands.  An outage serves the cached one with a warning (69
 * with --strict).  The source's answer is stored; the caller checks it. */
static int pinnedResolve(catalogCache *c, const char *id, const char *ns, const char *name, int64_t version,
                         cJSON **reg, lakeError *err) {
    int64_t checked = id ? regCheckedMs(c, id, version) : 0, now = nowMs();
    if (checked && (c->opt.offline || (now - checked < c->opt.ttl_s * 1000 && checked <= now + 1000)) &&
        (*reg = regLoad(c, id, version)))
        return c->opt.offline ? staleBound(c, ns, name, version, checked, reg, err) : 0;
    if (c->opt.offline)
        return errSet(err, LAKE_EUNAVAIL, "%s.%s: registration not cached (offline)", ns, name);
    sourceNoRetry(c->src, checked != 0);
    int rc = sourceResolve(c->src, ns, name, version, reg, err);
    sourceNoRetry(c->src, 0);
    if (rc && err->status && strcmp(err->status, "expired") == 0 && id) {
        char path[PATH_MAX];
        regPath(c, path, sizeof path, id, version);
        int gone = unlink(path) == 0;
        snprintf(path, sizeof path, "%s/registrations/%s/%lld.rix", c->dir, id, (long long)version);
        unlink(path);
        if (gone) segmentsForget(c);
    } else if (rc && checked && sourceOutage(err) && (*reg = regLoad(c, id, version))) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return serveStaleRegistration(c, why, ns, name, version, checked, reg, err);
    }
    if (rc) return rc;
    regStore(c, *reg);
    learnOldest(c, *reg);
    return 0;
}

/* --- a principal denied the directory -------------------------------------
 *
 * The file "denied" ({"denied_ms","message"}, checksummed like the JSON
 * files above) remembers the source's refusal of catalog_snapshot for
 * CACHE_DENIED_KEEP_S (or the TTL when longer), so the commands of a user
 * do not each ask again for what the source refuses; an explicit refresh
 * asks anyway, and a snapshot that succeeds removes the file. */

static void deniedPath(const catalogCache *c, char *out, size_t n) {
    snprintf(out, n, "%s/denied", c->dir);
}

/* 1 with the refusal in err when this principal is known to be denied the
 * directory; 0 otherwise. */
static int deniedKnown(catalogCache *c, lakeError *err) {
    if (!c->denied) {
        char path[PATH_MAX];
        deniedPath(c, path, sizeof path);
        cJSON *j = checkedJsonLoad(path);
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(j, "denied_ms");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
        int64_t now = nowMs(), keep = c->opt.ttl_s > CACHE_DENIED_KEEP_S ? c->opt.ttl_s : CACHE_DENIED_KEEP_S;
        int64_t t;
        if (jsonWhole(at, 0, &t) && cJSON_IsString(msg) && now - t < keep * 1000 && t <= now + 1000) {
            c->denied = 1;
            snprintf(c->denied_msg, sizeof c->denied_msg, "%s", msg->valuestring);
        }
        cJSON_Delete(j);
    }
    if (!c->denied) return 0;
    errSetStatus(err, "permission_denied", "%s", c->denied_msg);
    return 1;
}

static void deniedRecord(catalogCache *c, const lakeError *err) {
    c->denied = 1;
    snprintf(c->denied_msg, sizeof c->denied_msg, "%s", err->msg);
    cJSON *j = cJSON_CreateObject();
    if (j && cJSON_AddNumberToObject(j, "denied_ms", (double)nowMs()) &&
        cJSON_AddStringToObject(j, "message", c->denied_msg))
        checkedJsonStore(c->dir, "denied", j);
    cJSON_Delete(j);
}

static void deniedClear(catalogCache *c) {
    char path[PATH_MAX];
    deniedPath(c, path, sizeof path);
    c->denied = 0;
    unlink(path);
}

static pointTable *pointFind(const catalogCache *c, const char *ns, const char *name) {
    for (pointTable *p = c->points; p; p = p->next)
        if (strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0) return p;
    return NULL;
}

/* --- the tables of a principal denied the directory -----------------------
 *
 * A principal that may not take the snapshot (role user) resolves each
 * table by name; the file "points" keeps for it what the snapshot keeps
 * for the others, with the same locking, checksum and coalescing:
 *
 *   lake-points 1
 *   source <name>
 *   failed_ms <ms>          the last failure of the source, for the backoff
 *   last_error <one line>
 *   tables <n>
 *   <namespace>\t<name>\t<id>\t<epoch>\t<version>\t<resolved_ms>   (sorted)
 *   crc32 <8 hex digits: CRC-32 of every byte above>
 *
 * A row is a table this principal resolved on this host: its id, the
 * lowest version this host may serve (epoch, raised by this host's
 * appends), the current version last resolved and when (0: only a fixed
 * version was resolved).  The registrations are the immutable files under
 * registrations/.  Each row has its own freshness: younger than the TTL
 * it is served with no call; older, one conditional resolve (known_id,
 * known_version) answered not_modified or with the new registration, made
 * by one process while the others wait on LOCK_EX and serve its result;
 * the source down, the row's registration is served with a warning. */

static void pointsFree(pointsFile *p) {
    free(p->rows);
    memset(p, 0, sizeof *p);
}

static void pointsPath(const catalogCache *c, char *out, size_t n) {
    snprintf(out, n, "%s/points", c->dir);
}

static int rowCmp(const char *ns, const char *name, const pointRow *r) {
    int cmp = strcmp(ns, r->ns);
    return cmp ? cmp : strcmp(name, r->name);
}

/* Parse buf (len bytes, NUL-terminated at len, changed in place): 0 when it
 * is a whole, checksummed points file. */
static int parsePoints(pointsFile *p, char *buf, size_t len) {
    memset(p, 0, sizeof *p);
    char *end = len >= 40 ? checksumEnd(buf, len) : NULL, *q = buf;
    const char *v, *line;
    int64_t n;
    if (!end) return -1;
    if (!(line = nextLine(&q, end)) || strcmp(line, "lake-points 1") != 0) return -1;
    if (!(line = nextLine(&q, end)) || !keyed(line, "source", &v)) return -1;
    if (!keyedInt(&q, end, "failed_ms", &p->failed_ms)) return -1;
    if (!(line = nextLine(&q, end)) || !keyed(line, "last_error", &v)) return -1;
    snprintf(p->last_error, sizeof p->last_error, "%s", v);
    if (!keyedInt(&q, end, "tables", &n) || n < 0 || n > CACHE_MAX_ENTRIES) return -1;
    if (!(p->rows = calloc((size_t)n + 1, sizeof *p->rows))) return -1;
    for (p->n = 0; p->n < (size_t)n; p->n++) {
        pointRow *r = &p->rows[p->n];
        char *l = nextLine(&q, end), *f[6];
        if (!l || splitTabs(l, f, 6) != 6 || !nameIsValid(f[0]) || !nameIsValid(f[1]) || !idIsValid(f[2]) ||
            !wholeNumber(f[3], &r->epoch) || !wholeNumber(f[4], &r->version) || !wholeNumber(f[5], &r->resolved_ms))
            goto bad;
        snprintf(r->ns, sizeof r->ns, "%s", f[0]);
        snprintf(r->name, sizeof r->name, "%s", f[1]);
        snprintf(r->id, sizeof r->id, "%s", f[2]);
        /* sorted and unique, as the binary search needs */
        if (p->n && rowCmp(r->ns, r->name, r - 1) <= 0) goto bad;
    }
    if (q != end) goto bad;
    return 0;
bad:
    pointsFree(p);
    return -1;
}

int cachePointsCheck(const char *text, size_t len, size_t *nrows) {
    pointsFile p;
    char *buf = malloc(len + 1);
    if (!buf) return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    int rc = parsePoints(&p, buf, len);
    free(buf);
    if (rc) return -1;
    *nrows = p.n;
    pointsFree(&p);
    return 0;
}

/* Read the points file into c->pts: empty when missing, corrupt (ignored,
 * with a warning once) or too large.  The caller holds the lock, or knows
 * that the file is only ever replaced whole. */
static void pointsRead(catalogCache *c) {
    pointsFree(&c->pts);
    char path[PATH_MAX];
    size_t len = 0;
    int exists;
    pointsPath(c, path, sizeof path);
    char *buf = readCapped(path, CACHE_FILE_MAX, &len, &exists);
    if (exists && (!buf || parsePoints(&c->pts, buf, len) != 0) && !c->warned++)
        logWarn("%s: the cache of resolved tables is corrupt; ignoring it", path);
    free(buf);
}

/* Write c->pts atomically; the caller holds LOCK_EX. */
static int pointsWrite(catalogCache *c, lakeError *err) {
    char *body = NULL, *nl;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f) return errSetErrno(err, LAKE_EFAIL, errno, "points");
    /* one line: a message never breaks the format */
    if ((nl = strchr(c->pts.last_error, '\n'))) *nl = '\0';
    fprintf(f, "lake-points 1\nsource %s\nfailed_ms %lld\nlast_error %s\ntables %zu\n", sourceName(c->src),
            (long long)c->pts.failed_ms, c->pts.last_error, c->pts.n);
    for (size_t i = 0; i < c->pts.n; i++) {
        const pointRow *r = &c->pts.rows[i];
        fprintf(f, "%s\t%s\t%s\t%lld\t%lld\t%lld\n", r->ns, r->name, r->id, (long long)r->epoch,
                (long long)r->version, (long long)r->resolved_ms);
    }
    if (fclose(f) != 0) {
        free(body);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "points");
    }
    return commitChecked(c, "points", body, len, err);
}

/* The row of ns.name in c->pts, or NULL; with create, a new row (id
 * empty, all zero) in its sorted place, NULL only when out of memory. */
static pointRow *pointsRow(catalogCache *c, const char *ns, const char *name, int create) {
    size_t lo = 0, hi = c->pts.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int cmp = rowCmp(ns, name, &c->pts.rows[mid]);
        if (!cmp) return &c->pts.rows[mid];
        if (cmp < 0) hi = mid;
        else lo = mid + 1;
    }
    if (!create || c->pts.n >= CACHE_MAX_ENTRIES) return NULL;
    pointRow *rows = realloc(c->pts.rows, (c->pts.n + 1) * sizeof *rows);
    if (!rows) return NULL;
    c->pts.rows = rows;
    memmove(&rows[lo + 1], &rows[lo], (c->pts.n - lo) * sizeof *rows);
    c->pts.n++;
    memset(&rows[lo], 0, sizeof *rows);
    snprintf(rows[lo].ns, sizeof rows[lo].ns, "%s", ns);
    snprintf(rows[lo].name, sizeof rows[lo].name, "%s", name);
    return &rows[lo];
}

/* The row's current registration when this host may serve it, else NULL. */
static cJSON *rowRegistration(const catalogCache *c, const pointRow *r) {
    return r && r->resolved_ms && r->version >= r->epoch ? regLoad(c, r->id, r->version) : NULL;
}


/* Remember in this process what the source answered for ns.name: reg
 * (borrowed), resolved at resolved_ms, or NULL for "no such table". */
static int pointKeep(catalogCache *c, const char *ns, const char *name, const cJSON *reg, int64_t resolved_ms,
                     lakeError *err) {
    pointTable *p = pointFind(c, ns, name);
    if (!p) {
        if (!(p = calloc(1, sizeof *p)) || !(p->ns = strdup(ns)) || !(p->name = strdup(name))) {
            if (p) pointFree(p);
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
        }
        p->next = c->points;
        c->points = p;
    }
    free(p->id);
    free(p->schema);
    cJSON_Delete(p->reg);
    p->id = p->schema = NULL;
    p->reg = NULL;
    p->asked = 0;
    if (reg) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(reg, "id");
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(reg, "schema");
        if (!cJSON_IsString(id) || !idIsValid(id->valuestring) || !cJSON_IsArray(schema))
            return errSetStatus(err, "internal", "%s.%s: malformed registration", ns, name);
        if (!(p->id = strdup(id->valuestring)) || !(p->schema = cJSON_PrintUnformatted(schema)) ||
            !(p->reg = cJSON_Duplicate(reg, 1)))
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
        p->resolved_ms = resolved_ms;
    }
    p->e = (cacheEntry){p->ns, p->name, p->id, p->schema};
    return 0;
}

/* Answer *reg (owned by the caller from here), resolved at resolved_ms,
 * and remember it in this process. */
static int pointServe(catalogCache *c, const char *ns, const char *name, cJSON **reg, int64_t resolved_ms,
                      lakeError *err) {
    int rc = pointKeep(c, ns, name, *reg, resolved_ms, err);
    if (rc) {
        cJSON_Delete(*reg);
        *reg = NULL;
    }
    return rc;
}

/* Serve *reg, the registration of ns.name at version that this host
 * resolved at resolved_ms, because the source could not be asked (why):
 * 0 with a warning, once per table and process; with --strict 69, *reg
 * freed. */
static int serveStaleRegistration(catalogCache *c, const char *why_msg, const char *ns, const char *name,
                                  int64_t version, int64_t resolved_ms, cJSON **reg, lakeError *err) {
    char why[700];
    staleReason(c, why_msg, why, sizeof why);
    errClear(err);
    if (staleBound(c, ns, name, version, resolved_ms, reg, err)) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (%s)", why);
        return err->code;
    }
    if (c->opt.strict) {
        cJSON_Delete(*reg);
        *reg = NULL;
        return errSet(err, LAKE_EUNAVAIL, "%s; the cached registration is stale (--strict)", why);
    }
    char table[sizeof c->warned_table];
    snprintf(table, sizeof table, "%s.%s", ns, name);
    if (strcmp(table, c->warned_table) != 0) {
        logWarn("%s; serving %s.%s version %lld resolved %lld s ago", why, ns, name, (long long)version,
                (long long)((nowMs() - resolved_ms) / 1000));
        snprintf(c->warned_table, sizeof c->warned_table, "%s", table);
    }
    return 0;
}

/* pointServe of a registration the source could not refresh. */
static int pointStale(catalogCache *c, const char *why, const char *ns, const char *name, const pointRow *r,
                      cJSON **reg, lakeError *err) {
    int64_t version = r->version, resolved_ms = r->resolved_ms; /* r may move */
    int rc = serveStaleRegistration(c, why, ns, name, version, resolved_ms, reg, err);
    return rc ? rc : pointServe(c, ns, name, reg, resolved_ms, err);
}

/* Read the points file under LOCK_SH, or unlocked after waiting
 * CACHE_REFRESH_WAIT_MS behind a writer (the file is only ever replaced
 * whole, so it is still one consistent file). */
static int pointsLoad(catalogCache *c, lakeError *err) {
    int rc = lockWait(c, LOCK_SH, CACHE_REFRESH_WAIT_MS, err);
    if (rc > 1) return rc;
    pointsRead(c);
    if (rc == 0) unlock(c);
    return 0;
}

/* Record the id of ns.name (from a resolve at a fixed version), so that
 * its versions are found by name from now on; failures only lose that. */
static void pointNoteId(catalogCache *c, const char *ns, const char *name, const char *id) {
    lakeError ignored = {0};
    if (lockFd(c->lockfd, LOCK_EX, &ignored)) return;
    pointsRead(c);
    pointRow *r = pointsRow(c, ns, name, 1);
    if (r && strcmp(r->id, id) != 0) {
        snprintf(r->id, sizeof r->id, "%s", id);
        r->epoch = r->version = r->resolved_ms = 0;
        pointsWrite(c, &ignored);
    }
    unlock(c);
}

static void pointsRemove(catalogCache *c, pointRow *r) {
    size_t i = (size_t)(r - c->pts.rows);
    memmove(r, r + 1, (c->pts.n - i - 1) * sizeof *r);
    c->pts.n--;
}

/* The current registration of ns.name, expired or never resolved here:
 * under LOCK_EX (so that processes that find it expired together make one
 * call), the result of another process's refresh, the last registration
 * during the backoff after a failure, or one conditional resolve. */
static int pointRefresh(catalogCache *c, const char *ns, const char *name, cJSON **reg, lakeError *err) {
    int64_t started = nowMs();
    pointRow *r = pointsRow(c, ns, name, 0);
    cJSON *have = rowRegistration(c, r);
    int rc = lockWait(c, LOCK_EX, have ? CACHE_REFRESH_WAIT_MS : -1, err);
    if (rc == 1) {
        *reg = have;
        return pointStale(c, "another process is still refreshing", ns, name, r, reg, err);
    }
    cJSON_Delete(have);
    if (rc) return rc;
    pointsRead(c);
    r = pointsRow(c, ns, name, 0);
    have = rowRegistration(c, r);
    int64_t now = nowMs();
    if (have && r->resolved_ms >= started) { /* another process asked meanwhile */
        unlock(c);
        *reg = have;
        return pointServe(c, ns, name, reg, r->resolved_ms, err);
    }
    if (have && !c->opt.strict && c->pts.failed_ms > r->resolved_ms && now - c->pts.failed_ms < CACHE_FAILURE_BACKOFF_MS &&
        now >= c->pts.failed_ms) {
        unlock(c);
        *reg = have;
        return pointStale(c, c->pts.last_error, ns, name, r, reg, err);
    }

    char known_id[64] = "";
    int64_t known = have ? r->version : -1;
    if (have) snprintf(known_id, sizeof known_id, "%s", r->id);
    cJSON *ans = NULL;
    sourceNoRetry(c->src, have != NULL); /* the last registration is served at once */
    rc = have ? sourceResolveChanged(c->src, ns, name, known_id, known, &ans, err)
              : sourceResolve(c->src, ns, name, -1, &ans, err);
    sourceNoRetry(c->src, 0);
    now = nowMs();
    lakeError ignored = {0};
    if (rc) {
        if (err->status && strcmp(err->status, "not_found") == 0) {
            /* dropped: no longer one of this principal's tables */
            if ((r = pointsRow(c, ns, name, 0))) {
                pointsRemove(c, r);
                pointsWrite(c, &ignored);
            }
            unlock(c);
            cJSON_Delete(have);
            pointKeep(c, ns, name, NULL, 0, &ignored);
            return rc;
        }
        if (have && sourceOutage(err)) {
            c->pts.failed_ms = now;
            snprintf(c->pts.last_error, sizeof c->pts.last_error, "%s", err->msg);
            if (pointsWrite(c, &ignored)) logWarn("%s", ignored.msg);
            unlock(c);
            *reg = have;
            return pointStale(c, c->pts.last_error, ns, name, r, reg, err);
        }
        unlock(c);
        cJSON_Delete(have);
        return rc;
    }
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(ans, "status");
    const cJSON *aid = cJSON_GetObjectItemCaseSensitive(ans, "id");
    int64_t version;
    char id[64];
    int bad = !jsonWhole(cJSON_GetObjectItemCaseSensitive(ans, "version"), 0, &version) ||
              !cJSON_IsString(aid) || !idIsValid(aid->valuestring);
    if (!bad) snprintf(id, sizeof id, "%s", aid->valuestring);
    if (!bad && status) /* not_modified: what this host holds is current */
        bad = !cJSON_IsString(status) || strcmp(status->valuestring, "not_modified") != 0 || !have ||
              strcmp(id, known_id) != 0 || version != known;
    if (bad) {
        unlock(c);
        cJSON_Delete(have);
        cJSON_Delete(ans);
        return errSetStatus(err, "internal", "resolve %s.%s: unexpected answer", ns, name);
    }
    learnOldest(c, ans);
    if (status) {
        cJSON_Delete(ans);
        ans = have;
        have = NULL;
    } else {
        regStore(c, ans);
    }
    if ((r = pointsRow(c, ns, name, 1))) {
        if (strcmp(r->id, id) != 0) { /* a new table under the name */
            snprintf(r->id, sizeof r->id, "%s", id);
            r->epoch = 0;
        }
        r->version = version;
        r->resolved_ms = now;
    }
    c->pts.failed_ms = 0;
    c->pts.last_error[0] = '\0';
    if (pointsWrite(c, &ignored)) logWarn("%s", ignored.msg);
    unlock(c);
    cJSON_Delete(have);
    *reg = ans;
    if ((rc = pointServe(c, ns, name, reg, now, err))) return rc;
    pointFind(c, ns, name)->asked = 1;
    return 0;
}

/* A fixed version of ns.name: immutable, so cached forever once the
 * table's id is known here. */
static int pointVersion(catalogCache *c, const char *ns, const char *name, int64_t version, cJSON **reg,
                        lakeError *err) {
    const pointRow *r = pointsRow(c, ns, name, 0);
    char known[64] = "";
    if (r) snprintf(known, sizeof known, "%s", r->id);
    int rc = pinnedResolve(c, r ? known : NULL, ns, name, version, reg, err);
    if (rc) return rc;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(*reg, "id");
    if (!cJSON_IsString(id) || !idIsValid(id->valuestring)) {
        cJSON_Delete(*reg);
        *reg = NULL;
        return errSetStatus(err, "internal", "resolve %s.%s: the answer has no id", ns, name);
    }
    pointNoteId(c, ns, name, id->valuestring);
    return 0;
}

/* cacheResolve for a principal denied the directory (role user): what
 * this process resolved while fresh, else the points file's row while
 * fresh (or offline), else pointRefresh. */
static int pointResolve(catalogCache *c, const char *ns, const char *name, int64_t version, cJSON **reg,
                        lakeError *err) {
    pointTable *p = pointFind(c, ns, name);
    if (p && !p->id) return errSetStatus(err, "not_found", "%s.%s: no such table", ns, name);
    int64_t now = nowMs();
    if (version < 0 && p && p->reg &&
        (p->asked || (now - p->resolved_ms < c->opt.ttl_s * 1000 && p->resolved_ms <= now + 1000)))
        return (*reg = cJSON_Duplicate(p->reg, 1)) ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
    int rc = pointsLoad(c, err);
    if (rc) return rc;
    if (version >= 0) return pointVersion(c, ns, name, version, reg, err);
    const pointRow *r = pointsRow(c, ns, name, 0);
    if ((*reg = rowRegistration(c, r))) {
        if (now - r->resolved_ms < c->opt.ttl_s * 1000 && r->resolved_ms <= now + 1000)
            return pointServe(c, ns, name, reg, r->resolved_ms, err);
        if (c->opt.offline && c->opt.strict) return pointStale(c, "not asked (--offline)", ns, name, r, reg, err);
        if (c->opt.offline)
            return (rc = staleBound(c, ns, name, r->version, r->resolved_ms, reg, err))
                       ? rc
                       : pointServe(c, ns, name, reg, r->resolved_ms, err);
        cJSON_Delete(*reg);
        *reg = NULL;
    } else if (c->opt.offline) {
        return errSet(err, LAKE_EUNAVAIL, "%s.%s: registration not cached (offline)", ns, name);
    }
    return pointRefresh(c, ns, name, reg, err);
}

int cacheResolvedTables(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err) {
    *entries = NULL;
    *n = 0;
    int rc = pointsLoad(c, err);
    if (rc) return rc;
    free(c->pentries);
    if (!(c->pentries = calloc(c->pts.n + 1, sizeof *c->pentries))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
    for (size_t i = 0; i < c->pts.n; i++)
        c->pentries[i] = (cacheEntry){c->pts.rows[i].ns, c->pts.rows[i].name, c->pts.rows[i].id, NULL};
    *entries = c->pentries;
    *n = c->pts.n;
    return 0;
}

int cacheTable(catalogCache *c, const char *ns, const char *name, const cacheEntry **out, lakeError *err) {
    *out = NULL;
    int rc = load(c, err);
    /* --offline (TAB completion) with no snapshot: the listing of a
     * principal denied it has the entry too */
    const snapshot *l = rc && c->opt.offline && !c->snap.valid ? listingPeek(c) : NULL;
    if (l && (*out = find(l, ns, name))) {
        errClear(err);
        return 0;
    }
    if (rc && isDenied(err)) {
        cJSON *reg = NULL;
        errClear(err);
        if ((rc = pointResolve(c, ns, name, -1, &reg, err))) return rc;
        cJSON_Delete(reg);
        *out = &pointFind(c, ns, name)->e;
        return 0;
    }
    if (rc) return rc;
    if (!(*out = cacheFindTable(c, ns, name)) && !c->refreshed && !c->opt.offline) {
        /* created elsewhere since? ask once */
        if ((rc = cacheRefresh(c, 0, err))) return rc;
        *out = cacheFindTable(c, ns, name);
    }
    return *out ? 0 : errSetStatus(err, "not_found", "%s.%s: no such table", ns, name);
}

/* 1 when whoami's answer who lets the caller use ns.name as privilege
 * asks: no privilege needed, no grants (a role grants do not scope), or a
 * grant of them (those that apply to the caller) on the catalog, ns or
 * ns.name. */
static int grantsCover(const cJSON *who, const char *privilege, const char *ns, const char *name) {
    const cJSON *grants = cJSON_GetObjectItemCaseSensitive(who, "grants"), *g;
    if (!privilege || !cJSON_IsArray(grants)) return 1;
    size_t n = strlen(ns);
    cJSON_ArrayForEach(g, grants) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(g, "privilege"), *on = cJSON_GetObjectItemCaseSensitive(g, "on");
        if (!cJSON_IsString(p) || !cJSON_IsString(on) || strcmp(p->valuestring, privilege) != 0) continue;
        const char *o = on->valuestring;
        if (strcmp(o, "*") == 0 || strcmp(o, ns) == 0 ||
            (strncmp(o, ns, n) == 0 && o[n] == '.' && strcmp(o + n + 1, name) == 0))
            return 1;
    }
    return 0;
}

static int whoamiLoad(catalogCache *c, int force, cJSON **answer, lakeError *err);

int cacheMayRun(catalogCache *c, const char *action, const char *ns, const char *name, lakeError *err) {
    cJSON *who = NULL;
    int rc = cacheWhoami(c, &who, err);
    if (rc) return rc;
    /* a user's (whoami answers its grants): a grant given since the cached
     * whoami is asked for once more, so a new grant works at once (a
     * revoke is the server's to enforce) */
    const char *priv = actionsPrivilege(action);
    int covered = grantsCover(who, priv, ns, name);
    if (!covered && !c->opt.offline) {
        cJSON_Delete(who);
        if ((rc = whoamiLoad(c, 1, &who, err))) return rc;
        covered = grantsCover(who, priv, ns, name);
    }
    const cJSON *acts = cJSON_GetObjectItemCaseSensitive(who, "actions"), *a;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(who, "principal");
    int may = 0;
    cJSON_ArrayForEach(a, acts) may |= cJSON_IsString(a) && strcmp(a->valuestring, action) == 0;
    if (!may) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(who, "role");
        rc = errSetStatus(err, "permission_denied", "%s: principal %s (role %s) may not run %s",
                          sourceName(c->src), cJSON_IsString(pr) ? pr->valuestring : "?",
                          cJSON_IsString(role) ? role->valuestring : "?", action);
    } else if (!covered) {
        /* the server's own words (actions.c) */
        rc = errSetStatus(err, "permission_denied", "%s holds no %s privilege on %s.%s",
                          cJSON_IsString(pr) ? pr->valuestring : "?", priv, ns, name);
    }
    cJSON_Delete(who);
    return rc;
}

static tableState *stateOf(snapshot *s, const char *id, int create) {
    for (size_t i = 0; i < s->ntables; i++)
        if (strcmp(s->tables[i].id, id) == 0) return &s->tables[i];
    if (!create) return NULL;
    tableState *t = realloc(s->tables, (s->ntables + 1) * sizeof *t);
    if (!t) return NULL;
    s->tables = t;
    t = &s->tables[s->ntables++];
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "%s", id);
    return t;
}

/* Under LOCK_EX: re-read, apply fn to the table's state, write back. */
static int updateState(catalogCache *c, const char *id, int64_t epoch, int64_t version,
                       int64_t resolved_ms, lakeError *err) {
    if (lockFd(c->lockfd, LOCK_EX, err)) return err->code;
    readSnapshot(c);
    int rc = 0;
    if (c->snap.valid) {
        tableState *t = stateOf(&c->snap, id, 1);
        if (!t) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "cache");
        } else {
            if (epoch > t->epoch) t->epoch = epoch;
            if (resolved_ms >= 0) {
                t->version = version;
                t->resolved_ms = resolved_ms;
            }
            rc = writeSnapshot(c, &c->snap, NULL, err);
        }
    }
    unlock(c);
    return rc;
}

/* A resolve answer for ns.name: its version in *version; otherwise it is
 * freed and the error is internal (every caller reads version and id). */
static int checkRegistration(cJSON *ans, const char *ns, const char *name, int64_t *version, lakeError *err) {
    if (jsonWhole(cJSON_GetObjectItemCaseSensitive(ans, "version"), 0, version) &&
        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ans, "id")))
        return 0;
    cJSON_Delete(ans);
    return errSetStatus(err, "internal", "resolve %s.%s: the answer has no version or id", ns, name);
}

/* cacheResolve; ix, when not NULL, gets the warm registration's index
 * (if good), and a registration fetched now is stored with one. */
static int resolve(catalogCache *c, const char *ns, const char *name, int64_t version, cJSON **reg,
                   regIndex **ix, lakeError *err) {
    *reg = NULL;
    int rc = load(c, err);
    if (rc && isDenied(err)) {
        /* a principal that may resolve but not read the directory (role
         * user): ask for the table by name */
        errClear(err);
        return pointResolve(c, ns, name, version, reg, err);
    }
    if (rc) return rc;
    const cacheEntry *e = cacheFindTable(c, ns, name);
    if (!e && !c->refreshed && !c->opt.offline) { /* created elsewhere since? ask once */
        if ((rc = cacheRefresh(c, 0, err))) return rc;
        e = cacheFindTable(c, ns, name);
    }
    if (!e) return errSetStatus(err, "not_found", "%s.%s: no such table", ns, name);
    char id[64];
    snprintf(id, sizeof id, "%s", e->id);

    if (version < 0) {
        tableState *t = stateOf(&c->snap, id, 0);
        int64_t now = nowMs();
        if (t && t->resolved_ms && now - t->resolved_ms < c->opt.ttl_s * 1000 && t->version >= t->epoch &&
            (*reg = regLoadIndexed(c, id, t->version, ix)))
            return 0;
        if (c->opt.offline && t && t->resolved_ms && t->version >= t->epoch &&
            (*reg = regLoadIndexed(c, id, t->version, ix)))
            return staleBound(c, ns, name, t->version, t->resolved_ms, reg, err);
    } else {
        /* a fixed version: held a TTL, like the current one (it may expire) */
        if ((rc = pinnedResolve(c, id, ns, name, version, reg, err))) return rc;
        int64_t n;
        if (checkRegistration(*reg, ns, name, &n, err)) *reg = NULL;
        return *reg ? 0 : err->code;
    }
    if (c->opt.offline)
        return errSet(err, LAKE_EUNAVAIL, "%s.%s: registration not cached (offline)", ns, name);
    cJSON *ans = NULL;
    const tableState *held = version < 0 ? stateOf(&c->snap, id, 0) : NULL;
    sourceNoRetry(c->src, held && held->resolved_ms && held->version >= held->epoch);
    rc = sourceResolve(c->src, ns, name, version, &ans, err);
    sourceNoRetry(c->src, 0);
    if (rc) {
        /* an outage: the last registration this host resolved, if any */
        tableState *t = version < 0 ? stateOf(&c->snap, id, 0) : NULL;
        if (!sourceOutage(err) || !t || !t->resolved_ms || t->version < t->epoch ||
            !(*reg = regLoad(c, id, t->version)))
            return rc;
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return serveStaleRegistration(c, why, ns, name, t->version, t->resolved_ms, reg, err);
    }
    int64_t n;
    if ((rc = checkRegistration(ans, ns, name, &n, err))) return rc;
    const cJSON *aid = cJSON_GetObjectItemCaseSensitive(ans, "id");
    regStoreIndexing(c, ans, ix != NULL);
    learnOldest(c, ans);
    if (version < 0 && strcmp(aid->valuestring, id) == 0) updateState(c, id, 0, n, nowMs(), err);
    errClear(err);
    *reg = ans;
    return 0;
}

int cacheResolve(catalogCache *c, const char *ns, const char *name, int64_t version, cJSON **reg,
                 lakeError *err) {
    return resolve(c, ns, name, version, reg, NULL, err);
}

int cacheResolveIndexed(catalogCache *c, const char *ns, const char *name, cJSON **reg, regIndex **ix,
                        lakeError *err) {
    *ix = NULL;
    int rc = resolve(c, ns, name, -1, reg, ix, err);
    if (rc) {
        regIndexClose(*ix);
        *ix = NULL;
    }
    return rc;
}

int cacheResolveAt(catalogCache *c, const char *ns, const char *name, const char *at, cJSON **reg,
                   lakeError *err) {
    *reg = NULL;
    if (c->opt.offline)
        return errSet(err, LAKE_EUNAVAIL, "%s.%s at %s: a time is asked of the source, not --offline", ns, name, at);
    cJSON *ans = NULL;
    int rc = sourceResolveAt(c->src, ns, name, at, &ans, err);
    if (rc) return rc;
    int64_t n;
    if ((rc = checkRegistration(ans, ns, name, &n, err))) return rc;
    regStore(c, ans); /* a version's registration never changes: AT (VERSION => n) finds it here */
    learnOldest(c, ans);
    *reg = ans;
    return 0;
}

/* Versions of ns.name below epoch are no longer served on this host: the
 * table's state in the snapshot file, or, for a principal denied the
 * directory, the registration this process holds. */
static int raiseEpoch(catalogCache *c, const char *ns, const char *name, int64_t epoch, lakeError *err) {
    int rc = load(c, err);
    if (rc && isDenied(err)) {
        pointTable *p = pointFind(c, ns, name);
        if (p) {
            cJSON_Delete(p->reg);
            p->reg = NULL;
        }
        errClear(err);
        if ((rc = lockFd(c->lockfd, LOCK_EX, err))) return rc;
        pointsRead(c);
        pointRow *r = pointsRow(c, ns, name, 0);
        if (r && epoch > r->epoch) {
            r->epoch = epoch;
            rc = pointsWrite(c, err);
        }
        unlock(c);
        return rc;
    }
    if (rc) return rc;
    const cacheEntry *e = cacheFindTable(c, ns, name);
    if (!e) return 0;
    char id[64];
    snprintf(id, sizeof id, "%s", e->id);
    return updateState(c, id, epoch, 0, -1, err);
}

int cacheRollback(catalogCache *c, const char *ns, const char *name, int64_t to, int64_t *version,
                  lakeError *err) {
    cJSON *now = NULL;
    int64_t current;
    /* the current version, asked (a cached one may be older: a conflict) */
    int rc = sourceResolve(c->src, ns, name, -1, &now, err);
    if (!rc && !jsonWhole(cJSON_GetObjectItemCaseSensitive(now, "version"), 0, &current))
        rc = errSetStatus(err, "internal", "resolve %s.%s: the answer has no version", ns, name);
    cJSON_Delete(now);
    if (!rc) rc = sourceRollback(c->src, ns, name, current, to, version, err);
    if (rc) return rc;
    return raiseEpoch(c, ns, name, *version, err);
}

int cacheAlter(catalogCache *c, const char *ns, const char *name, const char *op, const char *column,
               const char *to, int64_t *version, lakeError *err) {
    int rc = sourceAlter(c->src, ns, name, op, column, to, version, err);
    if (rc) return rc;
    return raiseEpoch(c, ns, name, *version, err);
}

int cacheAppendCommuting(catalogCache *c, const char *ns, const char *name, int64_t expected,
                         const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    for (int attempt = 1;; attempt++) {
        int rc = cacheAppend(c, ns, name, expected, segments, files, version, err);
        if (!rc || !err->status || strcmp(err->status, "conflict") != 0 || attempt == CACHE_APPEND_ATTEMPTS)
            return rc;
        /* the table moved on: the next resolve must ask, not use the
         * version this host lost to */
        if ((rc = raiseEpoch(c, ns, name, expected + 1, err))) return rc;
        struct timespec pause = {0, (long)(1 + rand() % 20) * attempt * 1000000L};
        nanosleep(&pause, NULL);
        cJSON *reg = NULL;
        errClear(err);
        if ((rc = cacheResolve(c, ns, name, -1, &reg, err))) return rc;
        expected = (int64_t)cJSON_GetObjectItemCaseSensitive(reg, "version")->valuedouble;
        cJSON_Delete(reg);
    }
}

/* Note ns.name among the tables this process appended to (once).  Out of
 * memory only loses the note: the append itself succeeded. */
static void noteAppended(catalogCache *c, const char *ns, const char *name) {
    char t[2 * 64 + 2];
    snprintf(t, sizeof t, "%s.%s", ns, name);
    for (int i = 0; i < c->nappended; i++)
        if (strcmp(c->appended[i], t) == 0) return;
    char **a = realloc(c->appended, (size_t)(c->nappended + 1) * sizeof *a);
    if (!a) return;
    c->appended = a;
    if ((a[c->nappended] = strdup(t))) c->nappended++;
}

int cacheAppend(catalogCache *c, const char *ns, const char *name, int64_t expected,
                const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    int rc = sourceAppend(c->src, ns, name, expected, segments, files, version, err);
    if (rc) return rc;
    noteAppended(c, ns, name);
    /* read-your-writes: raise the epoch before anyone resolves again */
    return raiseEpoch(c, ns, name, *version, err);
}

int cacheCompact(catalogCache *c, const char *ns, const char *name, int64_t expected, const cJSON *replace,
                 const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    return cacheRewrite(c, ns, name, expected, NULL, replace, segments, files, version, err);
}

int cacheRewrite(catalogCache *c, const char *ns, const char *name, int64_t expected, const char *operation,
                 const cJSON *replace, const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    int rc = operation ? sourceRewrite(c->src, ns, name, expected, operation, replace, segments, files, version, err)
                       : sourceCompact(c->src, ns, name, expected, replace, segments, files, version, err);
    if (rc && err->status && strcmp(err->status, "conflict") == 0) {
        /* another compaction or rewrite won: the next resolve must ask,
         * not serve the version this one read */
        lakeError e2 = {0};
        raiseEpoch(c, ns, name, expected + 1, &e2);
        return rc;
    }
    if (rc) return rc;
    /* read-your-writes, as after an append */
    return raiseEpoch(c, ns, name, *version, err);
}

const char *cacheAppended(const catalogCache *c, int i) {
    return i >= 0 && i < c->nappended ? c->appended[i] : NULL;
}

/* --- whoami ------------------------------------------------------------ */

/* whoami, from the cache while fresh (unless force) */
static int whoamiLoad(catalogCache *c, int force, cJSON **answer, lakeError *err) {
    *answer = NULL;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/whoami", c->dir);
    struct stat st;
    int64_t now = nowMs();
    int fresh = !force && stat(path, &st) == 0 && now - (int64_t)st.st_mtime * 1000 < c->opt.ttl_s * 1000;
    if (fresh || c->opt.offline) {
        if ((*answer = checkedJsonLoad(path))) return 0;
        if (c->opt.offline) return errSet(err, LAKE_EUNAVAIL, "no cached whoami for %s (offline)", sourceName(c->src));
    }
    sourceNoRetry(c->src, stat(path, &st) == 0); /* a cached whoami is served at once */
    int rc = sourceCall(c->src, "whoami", NULL, answer, err);
    sourceNoRetry(c->src, 0);
    if (rc) {
        cJSON *stale = sourceOutage(err) ? checkedJsonLoad(path) : NULL;
        if (!stale) return rc;
        char why[700];
        staleReason(c, err->msg, why, sizeof why);
        if (c->opt.strict) {
            cJSON_Delete(stale);
            return errSet(err, LAKE_EUNAVAIL, "%s; the cached whoami is stale (--strict)", why);
        }
        if (!c->warned_whoami++) logWarn("%s; using the cached whoami", why);
        errClear(err);
        *answer = stale;
        return 0;
    }
    checkedJsonStore(c->dir, "whoami", *answer);
    return 0;
}

int cacheWhoami(catalogCache *c, cJSON **answer, lakeError *err) { return whoamiLoad(c, 0, answer, err); }

int catalogStageUrl(const lakeConfig *cfg, catalogCache *given, char **url, lakeError *err) {
    *url = NULL;
    char *token = NULL;
    /* remote mode is checked before any work, even with LAKE_STAGE set */
    if (!configIsLocal(cfg) && configRemote(cfg, &token, err)) return err->code;
    free(token);
    if (cfg->stage) {
        *url = strdup(cfg->stage);
        return *url ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    catalogSource *src = NULL;
    catalogCache *c = given;
    cacheOptions opt = {cfg->catalog_ttl, 0, 0};
    cJSON *who = NULL;
    int rc = 0;
    if (!c && !(rc = sourceOpen(cfg, &src, err))) rc = cacheOpen(cfg, src, &opt, &c, err);
    if (!rc) rc = cacheWhoami(c, &who, err);
    if (!rc) {
        const cJSON *stage = cJSON_GetObjectItemCaseSensitive(who, "stage");
        if (!cJSON_IsString(stage) || !*stage->valuestring)
            rc = errSet(err, LAKE_ECONFIG, "%s advertises no stage; set LAKE_STAGE", sourceName(c->src));
        else if (!(*url = strdup(stage->valuestring)))
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    cJSON_Delete(who);
    if (c != given) cacheClose(c);
    sourceClose(src);
    return rc;
}
