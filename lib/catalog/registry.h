/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * registry.h - the authority's data: a SQLite or PostgreSQL registry
 * (DESIGN §5).
 *
 * One database holds namespaces, tables (stable ids, schema, current version,
 * dropped flag), table versions and the segments and FILE locations each
 * appended, principals (name, role, SHA-256 of the token), and the directory
 * marker: the authority's id and the catalog generation, raised by every
 * create or drop.  Appends raise a table's version, never the generation.
 *
 * A SQLite file is opened in WAL mode with synchronous=FULL and foreign
 * keys on; a PostgreSQL database through libpq, where several lake-metasrv
 * instances may share it (appends lock their table's row, DDL the marker's,
 * so concurrent writers from any instance are serialised).  Opening checks
 * that the database is a lake registry of a schema version this code reads
 * (else 78, and it is not modified), then applies forward migrations.
 * Every change is one transaction: nothing is half-applied.  The logic is
 * written once over a small SQL driver interface (registry/sqldb.h).
 *
 * Answers are built as cJSON objects in the shape of the action protocol,
 * so the local source and lake-metasrv return the same bytes.
 */
#ifndef LAKE_REGISTRY_H
#define LAKE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "stage/stage.h"

struct cJSON;
typedef struct registry registry;

#define REGISTRY_SCHEMA_VERSION 5
/* The version that brought grants (issue 29). */
#define REGISTRY_SCHEMA_GRANTS 5
#define NAME_BUF 160 /* a principal's name, NUL included */
#define REGISTRY_SNAPSHOT_SCANS 3

/* What an open requires of the database. */
#define REGISTRY_EXISTING 0 /* a registry (78 if it is not one; 66 for a missing file) */
#define REGISTRY_CREATE 1   /* a registry, made in a missing or empty database */
#define REGISTRY_NEW 2      /* an empty database, made a registry (1 if one exists) */
/* Or'd in: the embedded lake's own registry (local mode).  A file fault
 * names the file and the system's reason (75 disk full, 77 not writable)
 * instead of the redacted message a server answers its clients. */
#define REGISTRY_EMBEDDED 0x10

/* Open the SQLite registry at path.  create (REGISTRY_*) says what it
 * requires; a new registry gets a fresh directory marker.  stage_url,
 * when not NULL, is recorded as the registry's stage on creation. */
int registryOpen(const char *path, int create, const char *stage_url, registry **out,
                 lakeError *err);
/* The same by URL: sqlite:PATH or postgresql://… (postgres://…).  An
 * unknown form is a usage error (64); a PostgreSQL server that cannot be
 * reached is 69.  Messages name the URL redacted (registryRedact). */
int registryOpenUrl(const char *url, int create, const char *stage_url, registry **out,
                    lakeError *err);
/* PostgreSQL needs libpq, and libpq the thirty-odd libraries behind it
 * (TLS, Kerberos, LDAP): several MiB and milliseconds of start-up that a
 * client of the embedded lake never uses.  So only a program that calls
 * this (lake-metasrv) links the PostgreSQL driver; elsewhere a PostgreSQL
 * URL is a configuration error (78). */
void registryEnablePostgres(void);
/* 1 for sqlite:PATH, 2 for a PostgreSQL URL, -1 for anything else. */
int registryUrlKind(const char *url);
/* url with its password (user:PASSWORD@, password=…) replaced by ***, for
 * messages and logs; truncated to n bytes, NUL included. */
void registryRedact(const char *url, char *out, size_t n);
void registryClose(registry *r);
/* From any thread, while another uses r: end the statement r is waiting
 * on (PostgreSQL: its socket is shut down, so the call fails as the
 * server gone and the next use connects again; SQLite: nothing, its waits
 * are bounded).  A server that stopped answering is given up this way. */
void registryCut(registry *r);

/* What a registry is good for now (a server's readiness, /v1/health). */
#define REGISTRY_WRITABLE 0    /* reads and writes */
#define REGISTRY_READ_ONLY 1   /* its database answers but takes no writes (a standby) */
#define REGISTRY_UNAVAILABLE 2 /* its database does not answer */
/* Ask r's database whether it takes writes (one statement; a connection
 * found broken or read-only is made again first).  REGISTRY_UNAVAILABLE
 * with err set when the question fails. */
int registryWritable(registry *r, lakeError *err);
/* For a registry that cannot be opened: REGISTRY_READ_ONLY when url is a
 * PostgreSQL URL one of whose servers answers but takes no writes (every
 * host a standby: no primary yet), else REGISTRY_UNAVAILABLE.  Connects
 * once, to the first server that answers, and closes. */
int registryProbeUrl(const char *url);
/* The stage recorded at creation (NULL if none); owned by r. */
const char *registryStage(const registry *r);

/* catalog_snapshot: {"status":"not_modified","generation":G,"authority":A}
 * or {"status":"snapshot","generation":G,"authority":A,"entries":[...]};
 * A is the marker's authority id (absent without a marker), so a client can
 * tell a replaced registry from an unchanged one.  Entries are sorted
 * by (namespace, name), a namespace's own entry first:
 *   {"kind":"namespace","namespace":"docs"}
 *   {"kind":"table","namespace":"docs","name":"t","id":"…","schema":[…]}
 * Marker, scan, marker again; a moved generation retries, at most
 * REGISTRY_SNAPSHOT_SCANS scans, then `unavailable`.  Each entry is counted
 * against the bounds (its JSON text, its schema) before it is kept; over a
 * bound the answer is `payload_too_large`.  Without a marker:
 * allow_unmarked=0 fails `failed_precondition`; 1 reads by full scan with a
 * warning, generation 0, never not_modified. */
typedef struct snapshotBounds {
    int64_t max_entries;      /* entries in the answer */
    int64_t max_bytes;        /* bytes of the answer's entries */
    int64_t max_schema_bytes; /* bytes of any one table's schema */
} snapshotBounds;

int registrySnapshot(registry *r, int64_t known_generation, const snapshotBounds *bounds,
                     int allow_unmarked, struct cJSON **answer, lakeError *err);

/* resolve: {"id","namespace","name","version","schema":[…],
 * "segments":[{"location","size","sha256","rows"[,"stats"]}…]} at version
 * (or the current one when version < 0); "stats" as append stored it,
 * absent for a segment appended without.  66 for an unknown table or
 * version; `expired` (67) for a version past its retention
 * (registryExpire), resolved at a time or by number. */
int registryResolve(registry *r, const char *ns, const char *name, int64_t version,
                     struct cJSON **answer, lakeError *err);
/* resolve at a time: the registration of the last version committed at or
 * before at (RFC 3339 UTC, whole seconds: 2026-12-01T00:00:00Z; the
 * registry's clock); not_found when the table was created after it. */
int registryResolveAt(registry *r, const char *ns, const char *name, const char *at, struct cJSON **answer,
                      lakeError *err);

/* history: {"versions":[{"version","committed_at","principal" (null for
 * none),"operation","rows_added","rows_removed","segments","rows","bytes"}
 * …],"more":bool}, the versions after `after` (-1: from the creation) in
 * order, at most limit of them; rows_added and rows_removed the change of
 * the table's row count it made, segments, rows and bytes the table's
 * live totals once it was made, and expired_at (null, or when
 * registryExpire marked it).  A version made before registry
 * schema 3 recorded no operation: it is inferred (create, append, compact,
 * rewrite).  not_found for an unknown table. */
int registryHistory(registry *r, const char *ns, const char *name, int64_t after, int64_t limit,
                    struct cJSON **answer, lakeError *err);

/* The conditional resolve of a client that holds the registration of
 * table known_id at known_version: {"status":"not_modified","id","version"}
 * when that is still the table's current version, else registryResolve's
 * answer for the current version (a table dropped and created again under
 * the name has another id, so it is answered whole). */
int registryResolveChanged(registry *r, const char *ns, const char *name, const char *known_id,
                           int64_t known_version, struct cJSON **answer, lakeError *err);

/* append: segments [{"location","size","sha256","rows"[,"stats"]}…] (at
 * least one) and files [location…] become version expected_version + 1,
 * in one transaction.  A segment's "stats" must pass segmentStatsCheck
 * against the table's schema (query/segment.h; invalid_argument "append:
 * malformed segment statistics" otherwise) and is stored in its canonical
 * form.  `conflict` when the table is no longer at expected_version;
 * an append whose segments are exactly those version V added answers
 * {"version":V} (idempotent retry); one that reuses a committed segment
 * otherwise is invalid_argument.  Every location must lie
 * inside st (invalid_argument otherwise).  Answer: {"version":V}. */
int registryAppend(registry *r, const stage *st, const char *ns, const char *name,
                   int64_t expected_version, const struct cJSON *segments,
                   const struct cJSON *files, const char *principal,
                   struct cJSON **answer, lakeError *err);

/* compact: replace [location…] names live segments of the table (not
 * removed by an earlier compaction); segments (checked as append's) hold
 * exactly as many rows as they do, and files are the FILE locations those
 * rows reference.  In one transaction the segments become version
 * current + 1 and the replaced ones get removed_in = current + 1, so
 * resolve leaves them out of that version and later ones while older
 * versions keep them.  expected_version is the version the client read;
 * a newer current version is no conflict (appends commute with a
 * compaction of other segments), but one above the current is, and so is
 * a replaced segment another compaction removed meanwhile (`conflict`).  A
 * location that is no segment of the table, or a row count that differs,
 * is invalid_argument.  A retry whose segments are already committed
 * answers that version.  Answer: {"version":V}. */
int registryCompact(registry *r, const stage *st, const char *ns, const char *name,
                    int64_t expected_version, const struct cJSON *replace, const struct cJSON *segments,
                    const struct cJSON *files, const char *principal, struct cJSON **answer,
                    lakeError *err);

/* rewrite (DELETE and UPDATE): as compact, but the new segments (none,
 * or more) hold the rows the replaced ones keep, changed or not, in any
 * number; operation ("delete" or "update") is recorded with the version.
 * The same rule of concurrency: appends since expected_version commute,
 * a replaced segment another compaction or rewrite removed meanwhile is
 * `conflict` (the client plans again on the new version).  A retry of a
 * rewrite already committed answers its version.  Answer: {"version":V}. */
int registryRewrite(registry *r, const stage *st, const char *ns, const char *name, int64_t expected_version,
                    const char *operation, const struct cJSON *replace, const struct cJSON *segments,
                    const struct cJSON *files, const char *principal, struct cJSON **answer, lakeError *err);

/* alter: version current + 1 of ns.name reads with its schema changed by
 * op (catalog/names.h schemaAlter: add-column a = "NAME TYPE",
 * rename-column a to b, drop-column a), the same segments; a new column
 * takes an id no schema of the table had.  The directory generation
 * changes (*generation).  invalid_argument for a name clash, a bad name
 * or type or the last column; not_found for a column or table that does
 * not exist.  Answer: {"version":V,"schema":[…]}. */
int registryAlter(registry *r, const char *ns, const char *name, const char *op, const char *a, const char *b,
                  const char *principal, struct cJSON **answer, int64_t *generation, lakeError *err);

/* rollback: version expected_version + 1 holds the segments version `to`
 * held (those removed since are live again, the same objects; those
 * added since are removed), with the FILE locations of the versions that
 * added them; the versions between stay readable.  `conflict` when the
 * table is no longer at expected_version, invalid_argument when `to` is
 * no version (the current one is: a new version of the same rows),
 * `expired` when it expired.
 * Answer: {"version":V}. */
int registryRollback(registry *r, const char *ns, const char *name, int64_t expected_version, int64_t to,
                     const char *principal, struct cJSON **answer, lakeError *err);

/* references: the locations that an unexpired version of a table not
 * dropped refers to, sorted bytewise and distinct, those after `after`
 * (exclusive; NULL or "" from the start), at most limit of them and at
 * most max_bytes of their text (one location always fits).  Answer:
 * {"locations":[…],"more":true|false}; more says whether a later page
 * has any.  A segment is one while it is live in an unexpired version
 * (added at or before it and not removed by it); a FILE location while
 * the version whose append, compaction, rewrite or rollback recorded it
 * is unexpired, or added a segment that is one.  So a segment that a
 * compaction or rewrite replaced, and the FILE objects only its rows
 * referred to, stay references until the versions that held them expire
 * (registryExpire).  gc reads the whole set page by page; pages need not
 * be one snapshot, because references only grow but for what drops and
 * expiry take away, which no reader may read any more. */
int registryReferences(registry *r, const char *after, int64_t limit, int64_t max_bytes,
                       struct cJSON **answer, lakeError *err);

/* expire: mark (expired_at = now) the versions of ns.name (name NULL:
 * of every table not dropped) whose next version was committed
 * older_than seconds ago or longer (the registry's clock), in one
 * transaction: the versions below the last one committed by then, so a
 * table's expired versions are always its oldest (registryReferences
 * counts on it).  The current version never expires; marks are never
 * taken back.  An expired version is refused by resolve, resolve at a
 * time and rollback (`expired`, 67) and no longer keeps its objects from
 * gc.  not_found for an unknown table.  Answer: {"expired":N (versions
 * newly marked),"cutoff":"…"}. */
int registryExpire(registry *r, const char *ns, const char *name, int64_t older_than, struct cJSON **answer,
                   lakeError *err);

/* DDL.  Each raises the generation by one and stores it in *generation.
 * create: failed_precondition when the name exists, not_found for a
 * missing namespace; drop: not_found for an unknown table. */
int registryCreateNamespace(registry *r, const char *ns, int64_t *generation, lakeError *err);
int registryCreateTable(registry *r, const char *ns, const char *name, const char *schema_json,
                        int64_t *generation, lakeError *err);
int registryDropTable(registry *r, const char *ns, const char *name, int64_t *generation,
                      lakeError *err);

/* Principals: tokens are stored only as their SHA-256 (hex).  A revoked
 * principal's name may be issued again (its row is replaced): that is how
 * a token is rotated; an active one's is failed_precondition.  expires_at
 * (RFC 3339 UTC, or NULL: never) is when the token stops authenticating. */
int registryAddPrincipal(registry *r, const char *name, const char *role,
                         const char *token_sha256, const char *expires_at, lakeError *err);

typedef struct registryPrincipal {
    char name[NAME_BUF];
    char role[32];
    char token_sha256[65];
    int revoked;
    char expires_at[32];   /* "" for a token that never expires */
    char last_used_at[32]; /* "" for one never used */
} registryPrincipal;

/* not_found when there is no such principal (revoked ones are found, with
 * revoked set). */
int registryFindPrincipal(registry *r, const char *name, registryPrincipal *p, lakeError *err);
/* [{"name","role","created_at","revoked_at","expires_at","last_used_at"}…]
 * sorted by name; the last three null when unset. */
int registryListPrincipals(registry *r, struct cJSON **list, lakeError *err);
/* Revoke at once; not_found when no active principal has that name. */
int registryRevokePrincipal(registry *r, const char *name, lakeError *err);
/* Record that p authenticated now, unless its last_used_at (as p holds
 * it) is less than REGISTRY_LAST_USED_EVERY seconds old: one write per
 * principal a minute at most, whatever the request rate.  A failure
 * changes nothing else (the caller logs it). */
#define REGISTRY_LAST_USED_EVERY 60
int registryTouchPrincipal(registry *r, const registryPrincipal *p, lakeError *err);

/* The audit trail (issue 29): one row per mutating action, grant, revoke
 * and refusal a server answered.  Strings are copied; "" is stored as
 * NULL.  No token, URL or request body ever goes in. */
typedef struct registryAudit {
    char principal[NAME_BUF]; /* "" when unknown (unauthenticated) */
    char role[32];
    char action[48];
    char target[2 * NAME_BUF]; /* NS or NS.T the request named, or "" */
    char request_id[40];
} registryAudit;
/* The audit record of the mutating action about to run on r (a copy), or
 * none (NULL).  While it is set, every write transaction r commits inserts
 * it, result "ok", in that same transaction, so a change is never without
 * its row: an insert that fails fails the commit, and so the action. */
void registrySetAudit(registry *r, const registryAudit *a);
/* Rows written by commits since registrySetAudit. */
int registryAuditWritten(const registry *r);
/* Insert one row on its own (a refusal, a failed action) with result
 * (an error code, or "ok"). */
int registryAuditWrite(registry *r, const registryAudit *a, const char *result, lakeError *err);
/* Delete rows older than before (RFC 3339 UTC); *removed gets how many. */
int registryAuditPrune(registry *r, const char *before, int64_t *removed, lakeError *err);
/* [{"seq","at","principal","role","action","target","result",
 * "request_id"}…] in the order written, those at or after since (NULL:
 * all) and matching each filter that is not NULL. */
typedef struct registryAuditFilter {
    const char *since, *principal, *action, *result;
} registryAuditFilter;
int registryAuditList(registry *r, const registryAuditFilter *f, struct cJSON **list, lakeError *err);

/* Grants (issue 29): privilege "read", "write" or "modify" on scope '*'
 * (the catalog), "NS" or "NS.T", to grantee "PUBLIC", "role:ROLE" or a
 * principal's name (checked by the caller).  A grant needs its scope to
 * exist (not_found) and a named principal to exist (invalid_argument);
 * either, revoke or not, raises the generation when it changed anything
 * (*changed) and stores it in *generation. */
int registryGrant(registry *r, int revoke, const char *privilege, const char *scope, const char *grantee,
                  const char *by, int64_t *generation, int *changed, lakeError *err);
/* [{"on","privilege","grantee","granted_at","granted_by"}…]: all (ns
 * NULL), those on ns or its tables (name NULL), or those applying to
 * ns.name; principal not NULL: only those to it, role:ROLE and PUBLIC. */
int registryGrants(registry *r, const char *ns, const char *name, const char *principal, const char *role,
                   struct cJSON **answer, lakeError *err);
/* 1 when principal (of role) holds privilege on ns.name (name NULL: on
 * namespace ns; ns NULL: on anything at all), through a grant to it, to
 * its role or to PUBLIC; 0 when not; minus an error code. */
int registryHolds(registry *r, const char *principal, const char *role, const char *privilege, const char *ns,
                  const char *name, lakeError *err);
/* From now on, until called again with privilege NULL, every call that
 * names a table first checks, in its own transaction, that principal (of
 * role) holds privilege on it (registryHolds), and answers
 * permission_denied "P holds no PRIV privilege on NS.T" when not, before
 * it looks for the table.  The strings must outlive the scope. */
void registrySetScope(registry *r, const char *principal, const char *role, const char *privilege);
/* 1 when a table principal may read refers to location (a segment of an
 * unexpired version, or a FILE value as gc counts one), or the server
 * began uploading it for principal and principal still holds what the
 * upload needed: write or modify on the live table of table_id (the id
 * of the segments directory tables/ID that holds location), or, table_id
 * NULL, write on some table; 0 when not; minus an error code. */
int registryMayGet(registry *r, const char *principal, const char *role, const char *location,
                   const char *table_id, lakeError *err);
/* The live table of id (not_found when none). */
int registryTableById(registry *r, const char *id, char ns[NAME_BUF], char name[NAME_BUF], lakeError *err);
/* Record that the server began uploading location for principal. */
int registryUploaded(registry *r, const char *principal, const char *location, lakeError *err);
/* Forget the uploads begun before before (RFC 3339 UTC): by then gc's
 * grace has passed, so each object is referenced (readable as its
 * table's) or garbage; *removed gets how many. */
int registryUploadsPrune(registry *r, const char *before, int64_t *removed, lakeError *err);

/* 1 when the registry has its directory marker. */
int registryHasMarker(const registry *r);

/* The current generation (-1 without a marker). */
int registryGeneration(registry *r, int64_t *generation, lakeError *err);

/* Test-only: called after each snapshot scan, before the generation is read
 * again (scan counts from 1).  Lets a test mutate the registry in between. */
void registrySetScanHook(registry *r, void (*hook)(void *ctx, int scan), void *ctx);
/* Test-only: raise the generation as a DDL from another writer would (for
 * a scan hook: it runs on r's connection, outside any transaction). */
int registryTestRaiseGeneration(registry *r);

/* list_tables (issue 29): one page of the live tables, sorted by
 * (namespace, name), of namespace ns (NULL: all), after the table
 * after_ns.after_name (NULL: from the start), at most limit of them and
 * at most max_bytes of their JSON text (one table always fits).  For
 * principal (of role) not NULL only those it holds read on, through a
 * grant on '*', the namespace or the table to it, to role:ROLE or to
 * PUBLIC; NULL lists every table.  Answer:
 *   {"generation":G,"authority":A,"tables":[{"namespace","name","id",
 *    "schema":[…]}…],"more":bool}
 * or, when known is the current generation,
 * {"status":"not_modified","generation":G,"authority":A}.  Marker, scan,
 * marker again as registrySnapshot, so a page is of one generation
 * (`unavailable` after REGISTRY_SNAPSHOT_SCANS moved ones).  Without a
 * marker: failed_precondition, or with allow_unmarked generation 0. */
int registryListTables(registry *r, const char *principal, const char *role, const char *ns, const char *after_ns,
                       const char *after_name, int64_t known, int64_t limit, int64_t max_bytes, int allow_unmarked,
                       struct cJSON **answer, lakeError *err);

#endif
