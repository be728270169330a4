/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.h - the on-disk catalog snapshot cache (DESIGN §5).
 *
 * Per source and principal (sourceKey), a directory under cache_dir holds:
 *   snapshot        the last good directory (generation, entries), its fetch
 *                   time, the last failure, per-table registration state,
 *                   and a SHA-256 over all of it (a torn or corrupt file is
 *                   ignored and replaced, never trusted)
 *   lock            flock(2) target: LOCK_SH to read, LOCK_EX to refresh
 *   listing         for a principal denied the snapshot (role user): the
 *                   tables it may read (list_tables), as the snapshot
 *   registrations/  (table id, version) registrations: immutable, but a
 *                   version may expire, so one is re-checked after the TTL
 *
 * Promises:
 *  - fresh (younger than the TTL): answered with zero source calls;
 *  - expired: one conditional catalog_snapshot with the cached generation;
 *    not_modified only renews the time;
 *  - many processes expired at once: one refreshes under LOCK_EX, the others
 *    wait, re-read and serve its result: one call in all;
 *  - the source fails: the last good snapshot is served at once with a
 *    warning (cacheOptions.strict: exit 69), and the failure time makes the
 *    processes of the next CACHE_FAILURE_BACKOFF_MS skip the attempt; a
 *    reader waits at most CACHE_REFRESH_WAIT_MS for another's refresh;
 *  - the same holds for resolving a table's current version: an outage
 *    serves the last registration this host resolved, with a warning;
 *  - after this host's append is acknowledged the table's epoch is raised
 *    before anything resolves it again: reads on this host never go back;
 *  - a principal the source refuses the snapshot (role user) still reads
 *    and appends: each table a command names is resolved by name, once
 *    per TTL in a process, and its registrations are cached as usual;
 *    only the whole directory (cacheDirectory) is refused, 77.  The
 *    refusal is remembered (file "denied") for CACHE_DENIED_KEEP_S or the
 *    TTL when longer, so later commands do not ask for the snapshot again;
 *  - such a principal lists the tables it may read (cacheListing): the
 *    file "listing", in the snapshot's format, under the same promises.
 */
#ifndef LAKE_CACHE_H
#define LAKE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/source.h"
#include "core/config.h"
#include "core/error.h"

struct cJSON;
struct regIndex;

#define CACHE_FAILURE_BACKOFF_MS 5000
#define CACHE_DENIED_KEEP_S 600
/* How long a reader with a stale snapshot waits for another process's
 * refresh before serving the stale one with a warning. */
#define CACHE_REFRESH_WAIT_MS 2000
/* Longer TTLs are treated as this (about 31 years). */
#define CACHE_TTL_MAX 1000000000LL
/* What this client asks a snapshot to be bounded by, and the largest
 * snapshot file it reads. */
#define CACHE_MAX_ENTRIES 1000000
#define CACHE_MAX_BYTES (64LL * 1024 * 1024)
#define CACHE_FILE_MAX (2 * CACHE_MAX_BYTES + 16 * 1024 * 1024)
/* The registrations of a table kept in the cache: the newest versions this
 * many (each holds every segment of its version: all of them would grow as
 * versions x segments). */
#define CACHE_REG_KEEP 8

typedef struct cacheEntry {
    const char *ns;
    const char *name;   /* NULL for a namespace's own entry */
    const char *id;     /* tables only */
    const char *schema; /* canonical schema JSON, tables only */
} cacheEntry;

typedef struct cacheOptions {
    int64_t ttl_s;  /* serve without asking while younger than this */
    int offline;    /* never call the source */
    int strict;     /* a stale answer is a failure (69) */
} cacheOptions;

typedef struct cacheStatusInfo {
    int present;          /* a valid snapshot exists */
    int64_t generation;
    int64_t age_s;
    int stale;
    const char *last_error; /* "" when none */
    const char *endpoint;   /* the endpoint that answered last; "" when none */
} cacheStatusInfo;

typedef struct catalogCache catalogCache;

/* The cache of src under cfg->cache_dir (created as needed). */
int cacheOpen(const lakeConfig *cfg, catalogSource *src, const cacheOptions *opt,
              catalogCache **out, lakeError *err);
void cacheClose(catalogCache *c);
/* Forget what this process read from the cache's files or asked the
 * source, so the next question is answered as a new process's would be
 * (an interactive program, between two inputs): the files read again,
 * fresh or not, and the source asked as they say. */
void cacheForget(catalogCache *c);

/* The directory, sorted by (namespace, name), a namespace before its
 * tables.  *entries stays owned by the cache until the next call. */
int cacheDirectory(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err);
/* The directory as cacheDirectory answers it, but a principal denied it
 * (role user) gets the tables it may read instead: list_tables, page by
 * page, kept in the file "listing" of the snapshot's format with the
 * snapshot's promises (zero calls while fresh, one conditional call when
 * expired, coalescing, the last listing during an outage).  A source too
 * old for list_tables leaves the refusal (77); so does --offline without
 * a listing cached.  --offline adds the tables this principal resolved on
 * this host (the listing may predate them).  From then on in this
 * process cacheHasNamespace and cacheRefresh are the listing's.  For
 * lake-catalog list; a query names its tables (cacheDirectory). */
int cacheListing(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err);
/* Ask the source now for the listing of a principal denied the directory,
 * as cacheRefresh asks for the snapshot. */
int cacheRefreshListing(catalogCache *c, int force, lakeError *err);
/* One table's entry, or NULL (no refresh, no source call). */
const cacheEntry *cacheFindTable(catalogCache *c, const char *ns, const char *name);
/* One table's entry, asking as needed: the directory, refreshed once when
 * the name is unknown; for a principal denied the directory, a resolve by
 * name.  *out stays owned by the cache; 66 for an unknown table. */
int cacheTable(catalogCache *c, const char *ns, const char *name, const cacheEntry **out,
               lakeError *err);
/* 0 when this principal may run action (the cached whoami's actions);
 * 77 naming the principal and its role otherwise; for a user (whoami
 * answers its grants) also 77 unless a grant gives it the privilege the
 * action needs on ns.name (issue 29; the server checks again).  Asked
 * before work that leaves objects behind (lake-put --table, INSERT,
 * --import, DELETE, UPDATE, compaction), so that a refused change stores
 * nothing. */
int cacheMayRun(catalogCache *c, const char *action, const char *ns, const char *name, lakeError *err);
int cacheHasNamespace(catalogCache *c, const char *ns);

/* Ask the source now: conditional, or unconditional with force.  Unlike the
 * implicit refresh of an expired read, a failing source is an error here
 * (the failure is still recorded for the backoff). */
int cacheRefresh(catalogCache *c, int force, lakeError *err);

/* What the cache holds; zero source calls. */
int cacheStatus(catalogCache *c, cacheStatusInfo *info, lakeError *err);

/* The registration of ns.name at version (current when < 0); caller frees.
 * 66 for an unknown table or version, 67 for an expired one.  A fixed
 * version's registration is served from the cache while this host had
 * it from the source within the TTL (or --offline), then asked again:
 * its rows never change, but it may expire, and an `expired` answer
 * removes it from the cache.  A principal denied the directory (role
 * user) is answered by a resolve call by name. */
int cacheResolve(catalogCache *c, const char *ns, const char *name, int64_t version,
                 struct cJSON **reg, lakeError *err);

/* cacheResolve of ns.name's current version for a reader that prunes its
 * segments (query/vtab.c): when it is served from this host's cache with
 * a good index (catalog/regindex.h), that index into *ix (caller closes)
 * and the registration without its "segments"; otherwise *ix NULL and
 * the whole registration, as cacheResolve answers it (its index is built
 * then, for the next reader). */
int cacheResolveIndexed(catalogCache *c, const char *ns, const char *name, struct cJSON **reg,
                        struct regIndex **ix, lakeError *err);

/* Change ns.name's columns (sourceAlter); the new version is this host's
 * to read from now on, as an append's is. */
int cacheAlter(catalogCache *c, const char *ns, const char *name, const char *op, const char *column,
               const char *to, int64_t *version, lakeError *err);

/* Roll ns.name back to version `to` (sourceRollback, from the current
 * version asked of the source), then raise its epoch on this host;
 * *version the new version.  A table changed between the two calls is a
 * conflict (75). */
int cacheRollback(catalogCache *c, const char *ns, const char *name, int64_t to, int64_t *version,
                  lakeError *err);

/* The registration of ns.name at the last version committed at or before
 * at (RFC 3339 UTC, whole seconds): one source call (the time is the
 * registry's to map), the registration then kept as cacheResolve keeps
 * any version's.  Not --offline (69). */
int cacheResolveAt(catalogCache *c, const char *ns, const char *name, const char *at, struct cJSON **reg,
                   lakeError *err);

/* The tables this principal resolved by name on this host (a principal
 * denied the directory, role user: lake-catalog --offline list, and so
 * TAB completion), sorted; schema is NULL in each.  Zero source calls;
 * *entries stays owned by the cache until the next call. */
int cacheResolvedTables(catalogCache *c, const cacheEntry **entries, size_t *n, lakeError *err);

/* Append through the source, then raise the table's epoch on this host. */
int cacheAppend(catalogCache *c, const char *ns, const char *name, int64_t expected_version,
                const struct cJSON *segments, const struct cJSON *files, int64_t *version,
                lakeError *err);

/* cacheAppend for appends that commute (new rows on top of whatever
 * version is current): a conflict resolves the table afresh and appends on
 * top of the new version, up to CACHE_APPEND_ATTEMPTS times with a short
 * jittered pause, then fails 75. */
#define CACHE_APPEND_ATTEMPTS 20
int cacheAppendCommuting(catalogCache *c, const char *ns, const char *name, int64_t expected_version,
                         const struct cJSON *segments, const struct cJSON *files, int64_t *version,
                         lakeError *err);

/* Compact through the source (sourceCompact), then raise the table's
 * epoch on this host, as cacheAppend does.  A conflict raises it past
 * expected_version too, so that the next resolve asks the source. */
int cacheCompact(catalogCache *c, const char *ns, const char *name, int64_t expected_version,
                 const struct cJSON *replace, const struct cJSON *segments, const struct cJSON *files,
                 int64_t *version, lakeError *err);

/* Rewrite (sourceRewrite: DELETE, UPDATE), then raise the table's epoch
 * as cacheCompact does; operation NULL is cacheCompact. */
int cacheRewrite(catalogCache *c, const char *ns, const char *name, int64_t expected_version,
                 const char *operation, const struct cJSON *replace, const struct cJSON *segments,
                 const struct cJSON *files, int64_t *version, lakeError *err);

/* The i-th table (from 0) this process appended to through c
 * (cacheAppend), as "ns.name", each once, in the order of their first
 * append; NULL past the last.  For the compaction that follows appends
 * (query/compact.h). */
const char *cacheAppended(const catalogCache *c, int i);

/* After this host's expire (or gc, which expires) of ns.name (NULL: of
 * every table): every fixed version's registration cached before is asked
 * of the source again, so that this host never serves a version it saw
 * expire; with a table named, it is resolved now, and what this host
 * cached of its expired versions is forgotten at once.  A failure only
 * costs that (a version expired elsewhere is refused once the TTL has
 * passed).
 *
 * Any resolve answer names the table's oldest unexpired version
 * ("oldest"): the registrations cached of older versions are removed
 * then, and every segment file under cache_dir/segments that no cached
 * registration references (issue 41). */
void cacheAfterExpire(catalogCache *c, const char *ns, const char *name);

/* Remove what this host cached of the rows of ns.name (ns NULL: of every
 * table): its registrations under every source's cache in cache_dir, and
 * the segment files no remaining registration references.  Never asks
 * the source: the table's id is the one cached here (nothing cached of
 * it: nothing to do).  The count of files removed in *removed; 0, or the
 * file system's error. */
int cachePurge(catalogCache *c, const char *ns, const char *name, int64_t *removed, lakeError *err);

/* After this host's DDL: refresh so that the change is visible at once. */
int cacheAfterChange(catalogCache *c, lakeError *err);

/* The whoami answer (principal, role, stage, actions), cached beside the
 * snapshot for the TTL; during an outage the cached one with a warning. */
int cacheWhoami(catalogCache *c, struct cJSON **answer, lakeError *err);

/* The stage URL a client uses: LAKE_STAGE / stage when configured (always,
 * in local mode), else the stage the metadata server advertises (whoami,
 * cached).  78 when there is none.  c is the caller's cache of cfg's
 * source, or NULL to open one only if whoami is needed.  Caller frees. */
int catalogStageUrl(const lakeConfig *cfg, catalogCache *c, char **url, lakeError *err);

/* Parse the text of a snapshot file (len bytes, not kept) as the cache
 * reads one: 0 when it is a whole, checksummed snapshot, with the number
 * of its per-table states and directory entries in *ntables and *nentries;
 * -1 when the cache would ignore it.  No I/O: for tests and fuzzing. */
int cacheSnapshotCheck(const char *text, size_t len, size_t *ntables, size_t *nentries);

/* The same for the text of a points file (a principal denied the
 * directory: the tables it resolved): 0 when the cache would trust it,
 * whole, checksummed and sorted, with its number of rows in *nrows. */
int cachePointsCheck(const char *text, size_t len, size_t *nrows);

#endif
