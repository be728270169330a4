/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake-catalog - read and change the catalog.
 *
 *   lake-catalog [--json] [-H] [--max-age S] [--offline] [--strict] COMMAND
 *     list [NS] | show NS.T | resolve NS.T [--version N] | refresh [--force]
 *     | status | create-namespace NS | create NS.T 'COL TYPE, ...'
 *     | drop NS.T | whoami | actions | gc [--dry-run] [--grace DURATION]
 *     | compact NS.T [--target-size SIZE] | history NS.T
 *     | rollback NS.T --to-version N | expire [NS.T] [--older-than DURATION]
 *     | purge-cache [NS.T]
 *
 * Reads are answered from the snapshot cache (lib/catalog/cache): zero
 * source calls while it is fresh.  Changes go to the source, then refresh
 * the cache before returning, so the next command on this host sees them.
 *
 * The changes (create-namespace, create, drop, alter, rollback, expire,
 * compact) and history are liblake's calls (lake.h), on a client opened
 * with this run's options: the command is the library's first user, so
 * the library cannot fall behind it.  The rest use lib/catalog directly:
 * those the library has no call for, and list, show and resolve, which a
 * lake_client would slow down (lake_open binds libcrypto and libmagic,
 * most of a short command's start-up; cli.bats) and TAB completion runs.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/command.h"

#include "catalog/cache.h"
#include "catalog/gc.h"
#include "catalog/names.h"
#include "catalog/source.h"
#include "catalog/vend.h"
#include "core/bytesize.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/duration.h"
#include "core/interrupt.h"
#include "core/jsonstrict.h"
#include "core/log.h"
#include "core/rfc3339.h"

enum { OPT_JSON = 0x100, OPT_HEADER = 'H', OPT_MAX_AGE = 0x101, OPT_OFFLINE, OPT_STRICT,
       OPT_VERSION, OPT_FORCE, OPT_DRY_RUN, OPT_GRACE, OPT_IF_NOT_EXISTS, OPT_TARGET_SIZE, OPT_TO_VERSION,
       OPT_OLDER_THAN };

#define GLOBAL_OPTIONS                                                                        \
    {'q', 'q', "quiet", NULL, "print no warnings"},                                           \
    {OPT_JSON, 0, "json", NULL, "print JSON instead of TSV"},                                 \
    {OPT_HEADER, 'H', "header", NULL, "print a header row before TSV output"},                \
    {OPT_MAX_AGE, 0, "max-age", "S", "serve the cached catalog while younger than S seconds"}, \
    {OPT_OFFLINE, 0, "offline", NULL, "never call the metadata source; answer from the cache"}, \
    {OPT_STRICT, 0, "strict", NULL, "fail (69) instead of serving a stale catalog"}

/* gc --grace: at most about 100 years */
#define GRACE_MAX_S (36500LL * 86400)

static const cliOption globalOptions[] = {GLOBAL_OPTIONS, {0, 0, NULL, NULL, NULL}};
static const cliOption resolveOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_VERSION, 0, "version", "N", "the registration at version N (default: current)"},
    {0, 0, NULL, NULL, NULL}};
static const cliOption rollbackOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_TO_VERSION, 0, "to-version", "N", "the version whose rows the table gets back (required)"},
    {0, 0, NULL, NULL, NULL}};
static const cliOption expireOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_OLDER_THAN, 0, "older-than", "DURATION",
     "expire the versions whose next one is older: seconds, or 45s, 30m, 12h, 7d (default: the retention)"},
    {0, 0, NULL, NULL, NULL}};
static const cliOption refreshOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_FORCE, 0, "force", NULL, "fetch the whole directory, not a conditional check"},
    {0, 0, NULL, NULL, NULL}};

static const cliOption createOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_IF_NOT_EXISTS, 0, "if-not-exists", NULL, "succeed, changing nothing, when it exists already (a table: with the same schema)"},
    {0, 0, NULL, NULL, NULL}};

static const cliOption gcCmdOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_DRY_RUN, 0, "dry-run", NULL, "list what would be removed; remove nothing"},
    {OPT_GRACE, 0, "grace", "DURATION", "keep objects younger than this: seconds, or 45s, 30m, 12h, 1d (default 1d)"},
    {0, 0, NULL, NULL, NULL}};

static const cliOption compactCmdOptions[] = {
    GLOBAL_OPTIONS,
    {OPT_TARGET_SIZE, 0, "target-size", "SIZE", "bytes a new segment holds at most: 67108864, or 512K, 64M, 1G (default 64M)"},
    {0, 0, NULL, NULL, NULL}};

static const cliSpec spec = {
    "[--json] [-H] [--max-age S] [--offline] [--strict] COMMAND [ARG...]",
    "Read and change the lake's catalog.  Commands:\n"
    "  list [NS]                     tables as namespace<TAB>name, sorted\n"
    "  show NS.T                     columns as column<TAB>type\n"
    "  resolve NS.T [--version N]    the registration (JSON)\n"
    "  history NS.T                  the table's versions: what made each, and its totals\n"
    "  rollback NS.T --to-version N  a new version holding version N's rows\n"
    "  alter NS.T add-column 'COL TYPE' | rename-column COL NEW | drop-column COL\n"
    "                                change a table's columns (a new version; no data rewritten)\n"
    "  expire [NS.T] [--older-than DURATION]\n"
    "                                expire the versions older than DURATION (default: the retention)\n"
    "  refresh [--force]             ask the metadata source now\n"
    "  status                        the cached catalog: source, generation, age, staleness\n"
    "  purge-cache [NS.T]            remove this host's cached rows and statistics of NS.T (of all tables)\n"
    "  create-namespace NS [--if-not-exists]\n"
    "                                create a namespace\n"
    "  create NS.T 'COL TYPE, ...' [--if-not-exists]\n"
    "                                create a table (INTEGER REAL TEXT BLOB BOOLEAN TIMESTAMP FILE)\n"
    "  drop NS.T                     drop a table\n"
    "  grant PRIV ON '*'|NS|NS.T TO PRINCIPAL|role:user|PUBLIC\n"
    "                                let users read, write or modify tables (admin)\n"
    "  revoke PRIV ON '*'|NS|NS.T FROM PRINCIPAL|role:user|PUBLIC\n"
    "                                take a grant back (admin)\n"
    "  grants [NS[.T]]               who may do what\n"
    "  whoami                        the principal, its role, the stage and its grants\n"
    "  actions                       the actions this principal may run\n"
    "  gc [--dry-run] [--grace DURATION]\n"
    "                                expire, then remove unreferenced stage objects older than DURATION (admin)\n"
    "  compact NS.T [--target-size SIZE]\n"
    "                                rewrite a table's small segments into few large ones",
    globalOptions,
    1,
    1,
};

typedef struct command {
    const char *name;
    int min_args, max_args;
    const cliOption *opts;
    const char *usage;
    const char *summary;
} command;

static const command commands[] = {
    {"list", 0, 1, globalOptions, "list [NS]", "List tables as namespace<TAB>name, sorted."},
    {"show", 1, 1, globalOptions, "show NS.T", "Show a table's columns as column<TAB>type."},
    {"resolve", 1, 1, resolveOptions, "resolve NS.T [--version N]",
     "Print a table's registration (JSON): id, version, schema, segments."},
    {"history", 1, 1, globalOptions, "history NS.T",
     "List a table's versions, oldest first, as version<TAB>committed_at<TAB>principal<TAB>operation<TAB>"
     "rows_added<TAB>rows_removed<TAB>segments<TAB>rows<TAB>bytes<TAB>expired_at (segments, rows and bytes: "
     "the table after it; expired_at: when it expired, - while it has not)."},
    {"rollback", 1, 1, rollbackOptions, "rollback NS.T --to-version N",
     "Make a new version of the table that holds the rows (the same segments) version N held; the versions "
     "between stay readable."},
    {"alter", 3, 4, globalOptions, "alter NS.T add-column 'COL TYPE' | rename-column COL NEW | drop-column COL",
     "Change the table's columns as a new version: add one (NULL in the rows written before), rename one or "
     "drop one.  No segment is rewritten: older rows are read by each column's stable id; a version read AT "
     "an earlier version keeps the schema it had."},
    {"expire", 0, 1, expireOptions, "expire [NS.T] [--older-than DURATION]",
     "Expire the versions of NS.T (of every table when none is named) whose next version was committed "
     "DURATION ago or longer (seconds, or 45s, 30m, 12h, 7d; default: the retention, 7d unless configured); "
     "the current version never expires.  An expired version can no longer be read or rolled back to, and "
     "gc removes what only expired versions referred to.  Prints how many versions expired."},
    {"refresh", 0, 0, refreshOptions, "refresh [--force]",
     "Ask the metadata source now; a failing source is an error."},
    {"status", 0, 0, globalOptions, "status",
     "Describe the cached catalog (source, generation, age_s, stale, last_error); no source call."},
    {"purge-cache", 0, 1, globalOptions, "purge-cache [NS.T]",
     "Remove what this host's cache holds of NS.T's rows (of every table when none is named): its cached "
     "registrations, which carry column statistics, and the segment files no other cached registration "
     "references; prints how many files were removed.  No source call; the catalog is unchanged."},
    {"create-namespace", 1, 1, createOptions, "create-namespace NS [--if-not-exists]",
     "Create a namespace; with --if-not-exists one that exists is success."},
    {"create", 2, 2, createOptions, "create NS.T 'COL TYPE, ...' [--if-not-exists]",
     "Create a table; types INTEGER REAL TEXT BLOB BOOLEAN TIMESTAMP FILE.  With --if-not-exists a "
     "table that exists with the same schema is success; with another schema it is refused."},
    {"drop", 1, 1, globalOptions, "drop NS.T", "Drop a table."},
    {"grant", 5, 5, globalOptions, "grant read|write|modify ON '*'|NS|NS.T TO PRINCIPAL|role:user|PUBLIC",
     "Let a user principal, every user (role:user) or everyone (PUBLIC) read, write (append) or modify "
     "(delete, update, alter, rollback, expire) the tables of the whole catalog ('*'), of a namespace (its "
     "tables, present and future) or one table.  Admin only."},
    {"revoke", 5, 5, globalOptions, "revoke read|write|modify ON '*'|NS|NS.T FROM PRINCIPAL|role:user|PUBLIC",
     "Take back a grant exactly as it was given; revoking one that does not exist changes nothing and says "
     "so.  Admin only."},
    {"grants", 0, 1, globalOptions, "grants [NS[.T]]",
     "List grants as on<TAB>privilege<TAB>grantee<TAB>granted_at<TAB>granted_by: all of them, those on NS "
     "and its tables, or those that apply to NS.T.  A principal other than admin sees only the grants to "
     "itself, its role and PUBLIC."},
    {"whoami", 0, 0, globalOptions, "whoami", "Print the principal, its role, the stage and, for a user, its grants."},
    {"actions", 0, 0, globalOptions, "actions", "List the actions this principal may run."},
    {"gc", 0, 0, gcCmdOptions, "gc [--dry-run] [--grace DURATION]",
     "Expire the versions past the retention (as expire; not with --dry-run), then remove (--dry-run: "
     "list) the stage objects no unexpired table version references and older than "
     "the grace (seconds, or 45s, 30m, 12h, 1d; default 1d), as location<TAB>size; abort multipart "
     "uploads older than it. "
     "Needs the admin role and the live source.  A client without S3 keys (vended) has the metadata "
     "server do it with its keys, a page at a time (the gc action)."},
    {"compact", 1, 1, compactCmdOptions, "compact NS.T [--target-size SIZE]",
     "Rewrite the table's segments smaller than half of SIZE (default 64M) into as few segments of at "
     "most SIZE as hold their rows, committed as one new version; prints what was done."},
};

typedef struct run {
    int json, header, force, strict, offline, dry_run, if_not_exists;
    int64_t max_age, version, grace, target_size, to_version, older_than;
    const char *older_than_text; /* --older-than as given, for lake_catalog_expire_v2 */
    lakeConfig cfg;
    catalogSource *src;
    catalogCache *cache;
    lake_client *lake; /* the commands that are liblake's calls: no src, no cache */
} run;

static int64_t parseCount(const char *opt, const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0) cliUsageError(&spec, "%s: '%s' is not a whole number", opt, s);
    return v;
}

static void parseOption(run *r, int c, const char *arg) {
    switch (c) {
    case 'q': logSetQuiet(1); break;
    case OPT_JSON: r->json = 1; break;
    case OPT_HEADER: r->header = 1; break;
    case OPT_MAX_AGE: r->max_age = parseCount("--max-age", arg); break;
    case OPT_OFFLINE: r->offline = 1; break;
    case OPT_STRICT: r->strict = 1; break;
    case OPT_VERSION: r->version = parseCount("--version", arg); break;
    case OPT_TO_VERSION: r->to_version = parseCount("--to-version", arg); break;
    case OPT_FORCE: r->force = 1; break;
    case OPT_DRY_RUN: r->dry_run = 1; break;
    case OPT_IF_NOT_EXISTS: r->if_not_exists = 1; break;
    case OPT_TARGET_SIZE:
        if (bytesParse(arg, &r->target_size) || r->target_size < 2)
            cliUsageError(&spec, "--target-size: '%s' is not a size in bytes (e.g. 67108864, 512K, 64M, 1G)", arg);
        break;
    case OPT_OLDER_THAN:
        if (durationParse(arg, GRACE_MAX_S, &r->older_than))
            cliUsageError(&spec, "--older-than: '%s' is not a duration (seconds, or with a unit: 45s, 30m, 12h, 7d)",
                          arg);
        r->older_than_text = arg;
        break;
    case OPT_GRACE:
        if (durationParse(arg, GRACE_MAX_S, &r->grace))
            cliUsageError(&spec, "--grace: '%s' is not a duration (seconds, or with a unit: 45s, 30m, 12h, 1d)",
                          arg);
        break;
    }
}

static int printJson(cJSON *j, lakeError *err) {
    char *text = cJSON_PrintUnformatted(j);
    int rc = 0;
    if (!text) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "output");
    else if (puts(text) == EOF) rc = errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    cJSON_free(text);
    return rc;
}

static int deniedList(lakeError *err);
static int printTables(run *r, const cacheEntry *e, size_t n, const char *ns, lakeError *err);

static int cmdList(run *r, char **args, int nargs, lakeError *err) {
    const cacheEntry *e;
    size_t n;
    const char *ns = nargs ? args[0] : NULL;
    if (ns && !nameIsValid(ns)) cliUsageError(&spec, "%s: not a valid namespace name", ns);
    /* a principal denied the directory (role user): what it may read */
    int rc = cacheListing(r->cache, &e, &n, err);
    int denied = rc && err->status && strcmp(err->status, "permission_denied") == 0;
    if (denied && !r->offline) return deniedList(err);
    /* --offline, denied the directory (or with none cached): the tables
     * this principal resolved here, if it is known to be denied or
     * resolved any */
    if (rc && r->offline && (denied || rc == LAKE_EUNAVAIL)) {
        lakeError ignored = {0};
        if (cacheResolvedTables(r->cache, &e, &n, &ignored) == 0 && (n > 0 || denied)) {
            errClear(err);
            logWarn("this principal may not list the whole catalog; these are the tables it resolved on this host");
            return printTables(r, e, n, ns, err);
        }
    }
    if (rc) return rc;
    if (ns && !cacheHasNamespace(r->cache, ns) && !r->offline) {
        /* created elsewhere since? ask once */
        if ((rc = cacheRefresh(r->cache, 0, err)) || (rc = cacheListing(r->cache, &e, &n, err)))
            return rc;
    }
    if (ns && !cacheHasNamespace(r->cache, ns))
        return errSet(err, LAKE_ENOINPUT, "%s: no such namespace", ns);
    return printTables(r, e, n, ns, err);
}

/* The refusal of the directory to a principal that resolves tables by
 * name, by a source too old to list the tables it may read (list_tables),
 * saying what it can do instead. */
static int deniedList(lakeError *err) {
    char role[64] = "";
    const char *said = strstr(err->msg, "role ");
    if (!said || sscanf(said, "role %63[^ ] may not", role) != 1) snprintf(role, sizeof role, "?");
    return errSetStatus(err, "permission_denied",
                        "role %s may not list the whole catalog: name a table (lake-catalog show NS.T, "
                        "lake-query), or see the tables resolved on this host with lake-catalog --offline list",
                        role);
}

/* Print the tables of e[0..n) (of namespace ns when not NULL). */
static int printTables(run *r, const cacheEntry *e, size_t n, const char *ns, lakeError *err) {
    int rc = 0;
    cJSON *arr = r->json ? cJSON_CreateArray() : NULL;
    if (!r->json && r->header) fputs("namespace\tname\n", stdout);
    for (size_t i = 0; i < n; i++) {
        if (!e[i].name || (ns && strcmp(e[i].ns, ns) != 0)) continue;
        if (arr) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "namespace", e[i].ns);
            cJSON_AddStringToObject(o, "name", e[i].name);
            cJSON_AddItemToArray(arr, o);
        } else {
            fputs(e[i].ns, stdout);
            putchar('\t');
            fputs(e[i].name, stdout);
            putchar('\n');
        }
    }
    if (arr) rc = printJson(arr, err);
    cJSON_Delete(arr);
    return rc;
}

/* The directory entry of NS.T (for a principal denied the directory, from
 * its registration); 66 when there is none. */
static int findTable(run *r, const char *q, const cacheEntry **out, lakeError *err) {
    char *ns, *name;
    if (nameSplitTable(q, &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    int rc = cacheTable(r->cache, ns, name, out, err);
    if (rc && err->status && strcmp(err->status, "not_found") == 0)
        rc = errSet(err, LAKE_ENOINPUT, "%s: no such table", q);
    free(ns);
    free(name);
    return rc;
}

static int cmdShow(run *r, char **args, lakeError *err) {
    const cacheEntry *e;
    cJSON *c;
    int rc = findTable(r, args[0], &e, err);
    if (rc) return rc;
    cJSON *schema = cJSON_Parse(e->schema);
    if (!cJSON_IsArray(schema)) {
        cJSON_Delete(schema);
        return errSet(err, LAKE_EFAIL, "%s: malformed schema in the catalog", args[0]);
    }
    if (r->json) {
        rc = printJson(schema, err);
    } else {
        if (r->header) fputs("column\ttype\n", stdout);
        cJSON_ArrayForEach(c, schema) {
            printf("%s\t%s\n", cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring,
                   cJSON_GetObjectItemCaseSensitive(c, "type")->valuestring);
        }
    }
    cJSON_Delete(schema);
    return rc;
}

static int cmdResolve(run *r, char **args, lakeError *err) {
    char *ns, *name;
    cJSON *reg = NULL;
    if (nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    int rc = cacheResolve(r->cache, ns, name, r->version, &reg, err);
    if (!rc) rc = printJson(reg, err);
    cJSON_Delete(reg);
    free(ns);
    free(name);
    return rc;
}

/* The table's versions, every page from the source (never cached):
 * lake_catalog_history. */
static int cmdHistory(run *r, char **args, lakeError *err) {
    static const char *const cols[] = {"version", "committed_at", "principal", "operation", "rows_added",
                                       "rows_removed", "segments", "rows", "bytes", "expired_at"};
    if (r->offline) return errSet(err, LAKE_EUSAGE, "history asks the source; not --offline");
    char *ns, *name;
    if (nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    free(ns);
    free(name);
    char *json = NULL;
    lake_error e;
    cJSON *all = NULL, *v;
    int rc = lake_catalog_history(r->lake, args[0], &json, &e) ? commandFailed(&e, err) : 0;
    if (!rc && !(all = cJSON_Parse(json))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "history");
    if (!rc && r->json) rc = printJson(all, err);
    else if (!rc) {
        if (r->header) {
            for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) printf("%s%s", i ? "\t" : "", cols[i]);
            putchar('\n');
        }
        cJSON_ArrayForEach(v, all) {
            for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
                const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, cols[i]);
                if (i) putchar('\t');
                if (cJSON_IsString(f)) fputs(f->valuestring, stdout);
                else if (cJSON_IsNumber(f)) printf("%.0f", f->valuedouble);
                else putchar('-');
            }
            putchar('\n');
        }
    }
    cJSON_Delete(all);
    lake_free(json);
    return rc;
}

/* The snapshot, asked now; a principal denied it: its listing. */
static int cmdRefresh(run *r, lakeError *err) {
    int rc = cacheRefresh(r->cache, r->force, err);
    if (rc && err->status && strcmp(err->status, "permission_denied") == 0) {
        lakeError denied = *err;
        errClear(err);
        /* a source too old to list what it may read: the refusal stands */
        if ((rc = cacheRefreshListing(r->cache, r->force, err)) && err->status && strcmp(err->status, "not_found") == 0)
            rc = (*err = denied).code;
    }
    return rc;
}

static const char *plural(long long n) { return n == 1 ? "" : "s"; }

/* purge-cache: this host's cache only, never the source. */
static int cmdPurge(run *r, char **args, int nargs, lakeError *err) {
    char *ns = NULL, *name = NULL;
    int64_t removed = 0;
    if (nargs && nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    int rc = cachePurge(r->cache, ns, name, &removed, err);
    if (!rc && r->json) printf("{\"removed\":%lld}\n", (long long)removed);
    else if (!rc) printf("removed %lld cached file%s\n", (long long)removed, plural(removed));
    free(ns);
    free(name);
    return rc;
}

static int cmdStatus(run *r, lakeError *err) {
    cacheStatusInfo st;
    int rc = cacheStatus(r->cache, &st, err);
    if (rc) return rc;
    if (r->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "source", sourceName(r->src));
        if (st.present) {
            cJSON_AddNumberToObject(o, "generation", (double)st.generation);
            cJSON_AddNumberToObject(o, "age_s", (double)st.age_s);
        } else {
            cJSON_AddNullToObject(o, "generation");
            cJSON_AddNullToObject(o, "age_s");
        }
        cJSON_AddBoolToObject(o, "stale", st.stale);
        cJSON_AddStringToObject(o, "last_error", st.last_error);
        if (*st.endpoint) cJSON_AddStringToObject(o, "endpoint", st.endpoint);
        else cJSON_AddNullToObject(o, "endpoint");
        rc = printJson(o, err);
        cJSON_Delete(o);
        return rc;
    }
    printf("source=%s\n", sourceName(r->src));
    if (st.present) printf("generation=%lld\nage_s=%lld\n", (long long)st.generation, (long long)st.age_s);
    else printf("generation=\nage_s=\n");
    printf("stale=%s\nlast_error=%s\nendpoint=%s\n", st.stale ? "yes" : "no", st.last_error,
           st.endpoint);
    return 0;
}

/* create-namespace, create and drop: lake_catalog_create_namespace_v2,
 * _create_v2 (--if-not-exists: LIBLAKE_IF_NOT_EXISTS) and _drop; the
 * names and columns checked here first, as usage errors. */
static int cmdDdl(run *r, const char *cmd, char **args, lakeError *err) {
    char *ns = NULL, *name = NULL, *schema = NULL;
    int flags = r->if_not_exists ? LIBLAKE_IF_NOT_EXISTS : 0;
    lake_error e;
    int rc;
    if (r->offline) return errSet(err, LAKE_EUSAGE, "%s: a change cannot be made --offline", cmd);
    if (strcmp(cmd, "create-namespace") == 0) {
        if (!nameIsValid(args[0]))
            cliUsageError(&spec, "%s: names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)",
                          args[0], NAME_MAX_LEN);
        rc = lake_catalog_create_namespace_v2(r->lake, args[0], flags, &e);
    } else {
        if (nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
        if (strcmp(cmd, "create") == 0) {
            if (schemaParse(args[1], &schema, err)) cliUsageError(&spec, "%s", err->msg);
            rc = lake_catalog_create_v2(r->lake, args[0], args[1], flags, &e);
        } else {
            rc = lake_catalog_drop(r->lake, args[0], &e);
        }
    }
    if (rc) commandFailed(&e, err);
    free(ns);
    free(name);
    cJSON_free(schema);
    return rc;
}

static int cmdWhoami(run *r, int actionsOnly, lakeError *err) {
    cJSON *ans = NULL, *a;
    if (r->offline) return errSet(err, LAKE_EUSAGE, "whoami asks the source; not --offline");
    int rc = sourceCall(r->src, "whoami", NULL, &ans, err);
    if (rc) return rc;
    const cJSON *acts = cJSON_GetObjectItemCaseSensitive(ans, "actions");
    if (actionsOnly) {
        if (r->json) rc = printJson((cJSON *)acts, err);
        else cJSON_ArrayForEach(a, acts) if (cJSON_IsString(a)) puts(a->valuestring);
    } else if (r->json) {
        rc = printJson(ans, err);
    } else {
        const char *keys[] = {"principal", "role", "stage"};
        for (size_t i = 0; i < 3; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(ans, keys[i]);
            printf("%s=%s\n", keys[i], cJSON_IsString(v) ? v->valuestring : "");
        }
        /* a user's grants, as lake-catalog grant would give them */
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(ans, "grants")) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(a, "privilege"), *on = cJSON_GetObjectItemCaseSensitive(a, "on"),
                        *to = cJSON_GetObjectItemCaseSensitive(a, "grantee");
            if (cJSON_IsString(p) && cJSON_IsString(on) && cJSON_IsString(to))
                printf("grant=%s ON %s TO %s\n", p->valuestring, on->valuestring, to->valuestring);
        }
    }
    cJSON_Delete(ans);
    return rc;
}

/* grant and revoke: PRIV ON TARGET TO|FROM GRANTEE. */
static int cmdGrant(run *r, int revoke, char **args, lakeError *err) {
    if (r->offline) return errSet(err, LAKE_EUSAGE, "a grant cannot be changed --offline");
    if (strcasecmp(args[1], "ON") != 0 || strcasecmp(args[3], revoke ? "FROM" : "TO") != 0)
        cliUsageError(&spec, "usage: lake-catalog %s PRIV ON '*'|NS|NS.T %s PRINCIPAL|role:user|PUBLIC",
                      revoke ? "revoke" : "grant", revoke ? "FROM" : "TO");
    cJSON *req = cJSON_CreateObject(), *ans = NULL;
    if (!req || !cJSON_AddStringToObject(req, "privilege", args[0]) || !cJSON_AddStringToObject(req, "on", args[2]) ||
        !cJSON_AddStringToObject(req, "grantee", args[4])) {
        cJSON_Delete(req);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    }
    int rc = sourceCall(r->src, revoke ? "revoke" : "grant", req, &ans, err);
    cJSON_Delete(req);
    if (rc && err->status && strcmp(err->status, "invalid_argument") == 0) rc = err->code = LAKE_EUSAGE;
    if (!rc && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "changed")))
        logWarn("%s %s ON %s %s %s: %s", revoke ? "revoke" : "grant", args[0], args[2], revoke ? "FROM" : "TO",
                args[4], revoke ? "there was no such grant; nothing changed" : "granted already; nothing changed");
    if (!rc) rc = cacheAfterChange(r->cache, err); /* the generation rose */
    cJSON_Delete(ans);
    return rc;
}

static int cmdGrants(run *r, char **args, int nargs, lakeError *err) {
    if (r->offline) return errSet(err, LAKE_EUSAGE, "grants asks the source; not --offline");
    cJSON *req = cJSON_CreateObject(), *ans = NULL, *g;
    if (!req || (nargs && !cJSON_AddStringToObject(req, "on", args[0]))) {
        cJSON_Delete(req);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    }
    int rc = sourceCall(r->src, "grants", req, &ans, err);
    cJSON_Delete(req);
    if (rc && err->status && strcmp(err->status, "invalid_argument") == 0) rc = err->code = LAKE_EUSAGE;
    if (rc) return rc;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(ans, "grants");
    if (r->json) {
        rc = printJson(list, err);
    } else {
        static const char *const keys[] = {"on", "privilege", "grantee", "granted_at", "granted_by"};
        if (r->header) puts("on\tprivilege\tgrantee\tgranted_at\tgranted_by");
        cJSON_ArrayForEach(g, list) {
            for (int i = 0; i < 5; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, keys[i]);
                printf("%s%s", cJSON_IsString(v) ? v->valuestring : "-", i < 4 ? "\t" : "\n");
            }
        }
    }
    cJSON_Delete(ans);
    return rc;
}

typedef struct gcOut {
    run *r;
    int64_t n;
} gcOut;

static int gcPrint(void *ctx, const char *location, int64_t size, lakeError *err) {
    gcOut *o = ctx;
    int bad;
    if (o->r->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "location", location);
        cJSON_AddNumberToObject(j, "size", (double)size);
        char *text = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!text) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "output");
        bad = printf("%s%s", o->n ? ",\n" : "", text) < 0;
        cJSON_free(text);
    } else {
        bad = printf("%s\t%lld\n", location, (long long)size) < 0;
    }
    o->n++;
    return bad ? errSetErrno(err, LAKE_EFAIL, errno, "stdout") : 0;
}

/* "s" unless there is exactly one: "1 object", "2 objects". */

/* An object the store refused to remove: one line each (errors, shown
 * even with -q); gc then fails with their count. */
static void gcRefused(void *ctx, const lakeError *why) {
    (void)ctx;
    logError(why);
}

static void gcUpload(void *ctx, const char *location, long long initiated) {
    gcOut *o = ctx;
    char ts[32];
    rfc3339Format(ts, initiated);
    logWarn("gc: %s multipart upload of %s (started %s)",
            o->r->dry_run ? "would abort the" : "aborted the", location, ts);
}

/* gc: the live source only (no cache), the stage it advertises; a
 * keyless client's (vended) stage is cleaned by the server, which holds
 * its keys (the gc action), page by page. */
static int cmdGc(run *r, lakeError *err) {
    if (r->offline) return errSet(err, LAKE_EUSAGE, "gc needs the live catalog; not --offline");
    stage *st = NULL;
    gcStats stats;
    gcOut out = {r, 0};
    int rc = catalogStageOpen(&r->cfg, r->cache, NULL, &st, err);
    if (rc) goto done;
    if (r->json) fputs("[", stdout);
    else if (r->header) fputs("location\tsize\n", stdout);
    gcOptions opt = {r->grace >= 0 ? r->grace : GC_GRACE_DEFAULT, r->dry_run, 0, NULL, 0};
    if (stageVended(st)) rc = catalogGcRemote(r->src, &opt, gcPrint, gcUpload, &out, &stats, err);
    else rc = catalogGc(r->src, st, &opt, gcPrint, gcRefused, gcUpload, &out, &stats, err);
    if (stats.expired > 0) cacheAfterExpire(r->cache, NULL, NULL);
    if (r->json) fputs(out.n ? "\n]\n" : "]\n", stdout);
    if (rc) goto done;
    if (stats.uploads_supported == 0)
        logWarn("gc: the object store does not list or abort multipart uploads; none aborted");
    char uploads[64] = "";
    if (stats.uploads)
        snprintf(uploads, sizeof uploads, "; %lld multipart upload%s %s", (long long)stats.uploads,
                 plural(stats.uploads), r->dry_run ? "would be aborted" : "aborted");
    char expired[64] = "";
    if (stats.expired > 0)
        snprintf(expired, sizeof expired, "%lld version%s expired; ", (long long)stats.expired,
                 plural(stats.expired));
    else if (stats.expired < 0)
        logWarn("gc: the metadata server expires no versions (it is older than expiry)");
    logWarn("gc: %s%lld object%s, %lld byte%s %s; %lld kept (referenced), %lld kept (younger than the grace)%s",
            expired, (long long)stats.removed, plural(stats.removed), (long long)stats.removed_bytes,
            plural(stats.removed_bytes), r->dry_run ? "would be removed" : "removed",
            (long long)stats.kept_referenced, (long long)stats.kept_young, uploads);
done:
    stageClose(st);
    return rc;
}

/* alter: one schema change (lake_catalog_alter_v2), one line on stdout. */
static int cmdAlter(run *r, char **args, int nargs, lakeError *err) {
    char *ns, *name;
    int64_t version;
    lake_error e;
    const char *arg2 = nargs == 4 ? args[3] : NULL;
    if (schemaAlterCheck(args[0], args[1], args[2], arg2, &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    int rc = r->offline ? errSet(err, LAKE_EUSAGE, "alter changes the catalog; not --offline") : 0;
    if (!rc && lake_catalog_alter_v2(r->lake, args[0], args[1], args[2], arg2, &version, &e))
        rc = commandFailed(&e, err);
    if (!rc) printf("altered %s.%s: version %lld\n", ns, name, (long long)version);
    free(ns);
    free(name);
    return rc;
}

/* expire: one table's versions, or every table's (lake_catalog_expire_v2);
 * one line on stdout saying how many expired. */
static int cmdExpire(run *r, char **args, int nargs, lakeError *err) {
    char *ns = NULL, *name = NULL;
    int64_t n;
    lake_error e;
    if (nargs && nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    free(ns);
    free(name);
    int rc = r->offline ? errSet(err, LAKE_EUSAGE, "expire changes the catalog; not --offline") : 0;
    if (!rc && lake_catalog_expire_v2(r->lake, nargs ? args[0] : NULL, r->older_than_text, &n, &e))
        rc = commandFailed(&e, err);
    if (!rc)
        printf("expired %lld version%s%s%s\n", (long long)n, plural(n), nargs ? " of " : "", nargs ? args[0] : "");
    return rc;
}

/* rollback: a new version with an older version's rows
 * (lake_catalog_rollback_v2), one line on stdout saying which. */
static int cmdRollback(run *r, char **args, lakeError *err) {
    char *ns, *name;
    int64_t version;
    lake_error e;
    if (nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    if (r->to_version < 0) cliUsageError(&spec, "rollback: --to-version N is required");
    int rc = r->offline ? errSet(err, LAKE_EUSAGE, "rollback changes the catalog; not --offline") : 0;
    if (!rc && lake_catalog_rollback_v2(r->lake, args[0], r->to_version, &version, &e)) rc = commandFailed(&e, err);
    if (!rc)
        printf("rolled back %s.%s to version %lld: version %lld\n", ns, name, (long long)r->to_version,
               (long long)version);
    free(ns);
    free(name);
    return rc;
}

/* compact: the table's small segments into few large ones
 * (lake_catalog_compact_v2), one line on stdout saying what was done. */
static int cmdCompact(run *r, char **args, lakeError *err) {
    char *ns, *name;
    int64_t replaced, written, version;
    lake_error e;
    if (nameSplitTable(args[0], &ns, &name, err)) cliUsageError(&spec, "%s", err->msg);
    int rc = r->offline ? errSet(err, LAKE_EUSAGE, "compact changes the catalog; not --offline") : 0;
    if (!rc && lake_catalog_compact_v2(r->lake, args[0], r->target_size, &replaced, &written, &version, &e))
        rc = commandFailed(&e, err);
    if (!rc && replaced)
        printf("compacted %s.%s: %lld segment%s -> %lld, version %lld\n", ns, name, (long long)replaced,
               plural(replaced), (long long)written, (long long)version);
    free(ns);
    free(name);
    return rc;
}

/* The commands that are liblake's calls. */
static int viaLibrary(const char *name) {
    static const char *const lib[] = {"create-namespace", "create", "drop", "alter", "rollback",
                                      "expire", "compact", "history"};
    for (size_t i = 0; i < sizeof lib / sizeof lib[0]; i++)
        if (strcmp(lib[i], name) == 0) return 1;
    return 0;
}

/* This run's client: lake.conf(5) and the environment, with --max-age,
 * --offline and --strict as lake_open_v2's keys, and the library's
 * warnings (its own included) on stderr. */
static int openClient(run *r, lakeError *err) {
    char age[24];
    const char *opts[7];
    int n = 0;
    lake_error e;
    if (r->max_age >= 0) {
        snprintf(age, sizeof age, "%lld", (long long)r->max_age);
        opts[n++] = "catalog_max_age";
        opts[n++] = age;
    }
    if (r->offline) opts[n++] = "catalog_offline", opts[n++] = "1";
    if (r->strict) opts[n++] = "catalog_strict", opts[n++] = "1";
    opts[n] = NULL;
    return lake_open_v2(&r->lake, opts, logWarnLine, NULL, &e) ? commandFailed(&e, err) : 0;
}

int main(int argc, char **argv) {
    logInit(argv[0]);
    run r = {.max_age = -1, .version = -1, .grace = -1, .to_version = -1, .older_than = -1};
    const char *arg;
    int c, first;
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) parseOption(&r, c, arg);
    if (first >= argc) cliUsageError(&spec, "a command is needed");
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, argv[first]) == 0) cmd = &commands[i];
    if (!cmd) cliUsageError(&spec, "unknown command '%s'", argv[first]);

    /* the command's own options, with the global ones allowed after it */
    cliSpec sub = {cmd->usage, cmd->summary, cmd->opts, 0, 1};
    int subc = argc - first, subfirst;
    char **subv = argv + first;
    while ((c = cliNext(&sub, subc, subv, &arg, &subfirst)) != -1) parseOption(&r, c, arg);
    char **args = subv + subfirst;
    int nargs = subc - subfirst;
    if (nargs < cmd->min_args || nargs > cmd->max_args)
        cliUsageError(&spec, "usage: lake-catalog %s", cmd->usage);

    /* a stop signal removes the snapshot's temporary file, says so and
     * ends the run (core/interrupt.h) */
    interruptCatch(0);
    lakeError err = {0};
    int rc;
    if (viaLibrary(cmd->name)) {
        rc = openClient(&r, &err);
    } else {
        rc = configLoad(&r.cfg, NULL, 0, &err);
        /* purge-cache never asks the source: what is cached is what it removes */
        cacheOptions copt = {r.max_age >= 0 ? r.max_age : r.cfg.catalog_ttl,
                             r.offline || strcmp(cmd->name, "purge-cache") == 0, r.strict};
        if (!rc) rc = sourceOpen(&r.cfg, &r.src, &err);
        if (!rc) rc = cacheOpen(&r.cfg, r.src, &copt, &r.cache, &err);
    }
    if (rc) goto out;

    const char *name = cmd->name;
    if (strcmp(name, "list") == 0) rc = cmdList(&r, args, nargs, &err);
    else if (strcmp(name, "show") == 0) rc = cmdShow(&r, args, &err);
    else if (strcmp(name, "resolve") == 0) rc = cmdResolve(&r, args, &err);
    else if (strcmp(name, "history") == 0) rc = cmdHistory(&r, args, &err);
    else if (strcmp(name, "rollback") == 0) rc = cmdRollback(&r, args, &err);
    else if (strcmp(name, "alter") == 0) rc = cmdAlter(&r, args, nargs, &err);
    else if (strcmp(name, "expire") == 0) rc = cmdExpire(&r, args, nargs, &err);
    else if (strcmp(name, "refresh") == 0)
        rc = r.offline ? errSet(&err, LAKE_EUSAGE, "refresh asks the source; not --offline") : cmdRefresh(&r, &err);
    else if (strcmp(name, "status") == 0) rc = cmdStatus(&r, &err);
    else if (strcmp(name, "purge-cache") == 0) rc = cmdPurge(&r, args, nargs, &err);
    else if (strcmp(name, "grant") == 0 || strcmp(name, "revoke") == 0) rc = cmdGrant(&r, name[0] == 'r', args, &err);
    else if (strcmp(name, "grants") == 0) rc = cmdGrants(&r, args, nargs, &err);
    else if (strcmp(name, "whoami") == 0) rc = cmdWhoami(&r, 0, &err);
    else if (strcmp(name, "actions") == 0) rc = cmdWhoami(&r, 1, &err);
    else if (strcmp(name, "gc") == 0) rc = cmdGc(&r, &err);
    else if (strcmp(name, "compact") == 0) rc = cmdCompact(&r, args, &err);
    else rc = cmdDdl(&r, name, args, &err);
    if (!rc && (fflush(stdout) == EOF || ferror(stdout)))
        rc = errSetErrno(&err, LAKE_EFAIL, errno, "stdout");
out:
    if (rc) logError(&err);
    lake_close(r.lake);
    cacheClose(r.cache);
    sourceClose(r.src);
    configFree(&r.cfg);
    return rc;
}
