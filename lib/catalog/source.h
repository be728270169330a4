/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * source.h - CatalogSource: the one narrow interface to the metadata
 * authority (DESIGN §5).
 *
 * Two implementations answer the same actions with the same objects: local
 * (the registry file, in-process, through the shared action dispatcher) and
 * remote (lake-metasrv over HTTPS, source_remote.c).  Nothing above this
 * interface touches a registry.  Every call prints one LAKE_TRACE line,
 * "trace: source ACTION <facts> -> <outcome>".
 */
#ifndef LAKE_SOURCE_H
#define LAKE_SOURCE_H

#include <stdint.h>

#include "core/config.h"
#include "core/error.h"

struct cJSON;
struct registry;
typedef struct catalogSource catalogSource;

/* The source the configuration selects.  Local: $home/registry.db,
 * created on first call (not on open: a fresh cache never opens it).
 * Remote: lake-metasrv at cfg->metasrv; its configuration is checked here
 * (78), and the connection is made on the first call. */
int sourceOpen(const lakeConfig *cfg, catalogSource **out, lakeError *err);
/* A local source over registry_path with stage_url for containment;
 * its expire without an age uses CONFIG_RETENTION_DEFAULT until
 * sourceLocalRetention sets another (sourceOpen: lake.conf's). */
int sourceLocalOpen(const char *registry_path, const char *stage_url, catalogSource **out,
                    lakeError *err);
void sourceLocalRetention(catalogSource *s, int64_t seconds);
void sourceClose(catalogSource *s);

/* "local:/path/registry.db" or the endpoint URL. */
const char *sourceName(const catalogSource *s);
/* A file-name-safe key naming this source in the cache directory; for a
 * remote source it names the principal too (a hash of the token), so
 * each principal has a cache of its own. */
const char *sourceKey(const catalogSource *s);

/* A remote source may name several instances of one catalog (metasrv =
 * URL,URL…).  A call tries them in order, the preferred one first, each
 * with a short connect timeout, and moves on when the request cannot have
 * had an effect there (no connection), or, for calls that are safe to
 * repeat (snapshot, resolve, whoami, references, append, compact, expire), when the server
 * is lost mid-call or answers 503.  sourceEndpoint: the endpoint that
 * answered the last call (NULL before any, and for a local source);
 * sourcePrefer: try this endpoint first (one not configured is ignored). */
const char *sourceEndpoint(const catalogSource *s);
void sourcePrefer(catalogSource *s, const char *endpoint);

/* When every endpoint a call of those tried answered 503 unavailable (the
 * registry behind them down or failing over) or was lost mid-call, the
 * call goes round the endpoints again, with exponential backoff and full
 * jitter (core/retry.h, at least the Retry-After asked for), until the
 * configured retry_deadline; then it fails 75 with a message that says
 * so (the server's own words go to the trace).  No endpoint connected
 * at all is not retried (69 at once).  sourceNoRetry(s, 1): from now on a
 * call makes one round only, as with retry_deadline = 0, for a caller
 * with a last good answer to serve at once instead (the snapshot cache);
 * sourceNoRetry(s, 0) restores the deadline.  A local source has nothing
 * to retry (SQLite's busy timeout waits on a busy registry): a no-op. */
void sourceNoRetry(catalogSource *s, int on);

/* Test-only: the registry behind a local source (opened on demand). */
int sourceLocalRegistry(catalogSource *s, struct registry **reg, lakeError *err);

/* One action call; *answer is a new object the caller frees. */
int sourceCall(catalogSource *s, const char *action, const struct cJSON *req,
               struct cJSON **answer, lakeError *err);

/* Typed calls over sourceCall. */
int sourceSnapshot(catalogSource *s, int64_t known_generation, int64_t max_entries,
                   int64_t max_bytes, struct cJSON **answer, lakeError *err);
int sourceResolve(catalogSource *s, const char *ns, const char *name, int64_t version,
                  struct cJSON **answer, lakeError *err);
/* A conditional resolve of the current version, for a client holding the
 * registration of table known_id at known_version: *answer is
 * {"status":"not_modified","id","version"} when that is still current,
 * else the whole current registration.  A source older than conditional
 * resolves refuses the fields (invalid_argument): the call is then made
 * as a plain resolve, and so are the rest of the process's. */
int sourceResolveChanged(catalogSource *s, const char *ns, const char *name, const char *known_id,
                         int64_t known_version, struct cJSON **answer, lakeError *err);
/* resolve with a timestamp (time travel): the registration of the last
 * version committed at or before at (RFC 3339). */
int sourceResolveAt(catalogSource *s, const char *ns, const char *name, const char *at, struct cJSON **answer,
                    lakeError *err);
/* history: one page of the table's versions after version after (-1:
 * from its creation), as registryHistory answers it ({"versions":[…],
 * "more":bool}); the caller frees it.  Never answered from a cache. */
int sourceHistory(catalogSource *s, const char *ns, const char *name, int64_t after, struct cJSON **answer,
                  lakeError *err);
/* history, every page: *versions gets the table's versions in order (a
 * JSON array of registryHistory's objects, as lake-catalog --json
 * history prints it); the caller frees it.  A page out of order or
 * without versions is 1, "NS.T: a malformed history answer".  What
 * lake-catalog history and liblake's lake_catalog_history both read. */
int sourceHistoryAll(catalogSource *s, const char *ns, const char *name, struct cJSON **versions, lakeError *err);
/* segments and files are borrowed; *version gets the committed version. */
int sourceAppend(catalogSource *s, const char *ns, const char *name, int64_t expected_version,
                 const struct cJSON *segments, const struct cJSON *files, int64_t *version,
                 lakeError *err);
/* compact (DESIGN §5): replace the live segments at the locations in
 * replace with segments holding the same rows, as one new version;
 * expected_version is the version the segments were read from.  All
 * borrowed; *version gets the committed version. */
int sourceCompact(catalogSource *s, const char *ns, const char *name, int64_t expected_version,
                  const struct cJSON *replace, const struct cJSON *segments, const struct cJSON *files,
                  int64_t *version, lakeError *err);
/* rewrite (DELETE, UPDATE; operation "delete" or "update"): replace the
 * live segments at the locations in replace with segments (none or
 * more) holding the rows they keep, as one new version; as compact
 * otherwise. */
int sourceRewrite(catalogSource *s, const char *ns, const char *name, int64_t expected_version,
                  const char *operation, const struct cJSON *replace, const struct cJSON *segments,
                  const struct cJSON *files, int64_t *version, lakeError *err);
/* rollback: a new version holding version `to`'s segments; expected_version
 * is the current version the caller saw (conflict when it moved). */
int sourceRollback(catalogSource *s, const char *ns, const char *name, int64_t expected_version, int64_t to,
                   int64_t *version, lakeError *err);
/* alter: a new version whose schema op changes (registryAlter: add-column
 * column = "NAME TYPE", rename-column column to `to`, drop-column column;
 * to is NULL but for a rename); the directory generation changes. */
int sourceAlter(catalogSource *s, const char *ns, const char *name, const char *op, const char *column,
                const char *to, int64_t *version, lakeError *err);
int sourceCreateNamespace(catalogSource *s, const char *ns, int64_t *generation, lakeError *err);
/* schema_json: canonical schema text (names.h). */
int sourceCreateTable(catalogSource *s, const char *ns, const char *name, const char *schema_json,
                      int64_t *generation, lakeError *err);
int sourceDropTable(catalogSource *s, const char *ns, const char *name, int64_t *generation,
                    lakeError *err);

/* references (admin): one page of the locations the unexpired versions
 * of the catalog's live tables refer to (registryReferences), sorted,
 * after `after` (NULL or "": from the start), at most limit (the server
 * may cap it lower).  *answer is {"locations":[…],"more":bool}; the
 * caller frees it.  Never answered from a cache. */
int sourceReferences(catalogSource *s, const char *after, int64_t limit, struct cJSON **answer,
                     lakeError *err);

/* expire (admin, query-service): mark the versions of ns.name (ns and
 * name NULL: of every table) whose next version was committed
 * older_than seconds ago or longer (< 0: the source's retention: the
 * embedded lake's lake.conf retention, a server's --retention).  *expired
 * gets the number of versions newly marked. */
int sourceExpire(catalogSource *s, const char *ns, const char *name, int64_t older_than, int64_t *expired,
                 lakeError *err);

/* 1 when err, from a source call, means "the source is down or busy"
 * rather than "the request is wrong": the snapshot cache then serves its
 * last good answer, and gc refuses to work without the live catalog. */
int sourceOutage(const lakeError *err);

#endif
