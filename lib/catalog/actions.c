/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * actions.c - role checks, request validation and dispatch to the registry.
 */
#include "catalog/actions.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/gc.h"
#include "catalog/names.h"
#include "core/config.h"
#include "core/jsonstrict.h"
#include "core/rfc3339.h"
#include "core/utf8.h"

/* One page of list_tables at most: tables, and bytes of their JSON text. */
#define LIST_TABLES_MAX_LIMIT 1000
#define LIST_TABLES_MAX_BYTES (4LL * 1024 * 1024)
/* One page of `history` at most: versions. */
#define HISTORY_MAX_LIMIT 1000
/* One page of `references` at most: locations, and bytes of their text. */
#define REFERENCES_MAX_LIMIT 10000
#define REFERENCES_MAX_BYTES (4LL * 1024 * 1024)

enum { R_ADMIN = 1, R_QUERY = 2, R_PEER = 4, R_USER = 8, R_ALL = 15 };

/* roles: who may run it at all; privilege: what a user must hold on the
 * table it names (issue 29: only the user role is scoped by grants; the
 * others hold what their role gives, see lake-metasrv(8)) */
static const struct actionRow {
    const char *name;
    int roles;
    const char *privilege;
    const char *fields; /* the request's allowed keys, space-separated */
    int writes;         /* changes the registry */
} actions[] = {
    {"catalog_snapshot", R_ADMIN | R_QUERY | R_PEER, NULL, "known_generation max_entries max_bytes", 0},
    {"resolve", R_ALL, "read", "namespace name version timestamp known_id known_version", 0},
    {"history", R_ALL, "read", "namespace name after limit", 0},
    {"append", R_ADMIN | R_QUERY | R_USER, "write", "namespace name expected_version segments files", 1},
    /* modify: the registry checks a compaction's row counts, not its rows,
     * so a compaction could replace any rows (issue 41) */
    {"compact", R_ADMIN | R_QUERY | R_USER, "modify", "namespace name expected_version replace segments files", 1},
    {"rewrite", R_ADMIN | R_QUERY | R_USER, "modify", "namespace name expected_version operation replace segments files", 1},
    {"rollback", R_ADMIN | R_QUERY | R_USER, "modify", "namespace name expected_version version", 1},
    {"alter", R_ADMIN | R_QUERY | R_USER, "modify", "namespace name operation column to", 1},
    /* every table's (no name): not a user's */
    {"expire", R_ADMIN | R_QUERY | R_USER, "modify", "namespace name older_than", 1},
    {"create_namespace", R_ADMIN, NULL, "namespace", 1},
    {"create_table", R_ADMIN, NULL, "namespace name schema", 1},
    {"drop_table", R_ADMIN, NULL, "namespace name", 1},
    {"grant", R_ADMIN, NULL, "privilege on grantee", 1},
    {"revoke", R_ADMIN, NULL, "privilege on grantee", 1},
    {"grants", R_ALL, NULL, "on", 0},
    {"whoami", R_ALL, NULL, "", 0},
    {"list_tables", R_ALL, NULL, "after limit namespace known_generation", 0},
    /* grace: sent by clients before expiry existed; no longer used */
    {"references", R_ADMIN, NULL, "after limit grace", 0},
    /* gc where the stage's keys are (gc.h): one page a call; it expires
     * and removes, so it is a write and audited */
    {"gc", R_ADMIN, NULL, "dry_run grace limit after", 1},
    /* a location a table the user may read refers to, or its own upload
     * while it holds what the upload needed (mayGet) */
    {"presign_get", R_ADMIN | R_QUERY | R_USER, "read", "location expires", 0},
    /* write on table (NS.T), on the table of dir tables/ID, or (neither) on
     * any table; a user's is recorded (one INSERT, no change to audit) */
    {"upload_begin", R_ADMIN | R_QUERY | R_USER, "write", "dir content_type sha256 size md5 table", 0},
    {"upload_parts", R_ADMIN | R_QUERY | R_USER, NULL, "location upload_id ticket expires parts", 0},
    {"upload_complete", R_ADMIN | R_QUERY | R_USER, NULL, "location upload_id ticket size parts", 0},
    {"upload_abort", R_ADMIN | R_QUERY | R_USER, NULL, "location upload_id ticket", 0},
};
#define NACTIONS (sizeof actions / sizeof actions[0])

static int scoped(const struct actionContext *ctx);

static int roleBit(const char *role) {
    if (!role) return 0;
    if (strcmp(role, "admin") == 0) return R_ADMIN;
    if (strcmp(role, "query-service") == 0) return R_QUERY;
    if (strcmp(role, "metadata-peer") == 0) return R_PEER;
    if (strcmp(role, "user") == 0) return R_USER;
    return 0;
}

/* The table's row of action; NULL for none. */
static const struct actionRow *row(const char *action) {
    for (size_t i = 0; i < NACTIONS; i++)
        if (strcmp(actions[i].name, action) == 0) return &actions[i];
    return NULL;
}

int actionsKnown(const char *action) { return row(action) != NULL; }

const char *actionsAt(size_t i) { return i < NACTIONS ? actions[i].name : NULL; }

int actionsWrites(const char *action) { return row(action) && row(action)->writes; }

int actionsAllowed(const char *role, const char *action) {
    return row(action) && (row(action)->roles & roleBit(role)) != 0;
}

const char *actionsPrivilege(const char *action) { return row(action) ? row(action)->privilege : NULL; }

/* Request fields. */
static const char *str(const cJSON *req, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An integer field: *out = def when absent; invalid_argument when present
 * but not a whole number >= min. */
static int integer(const cJSON *req, const char *key, int64_t def, int64_t min, int64_t *out,
                   lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    if (!v || cJSON_IsNull(v)) { *out = def; return 0; }
    if (!jsonWhole(v, min, out))
        return errSetStatus(err, "invalid_argument", "%s: expected a whole number", key);
    return 0;
}

static int names(const cJSON *req, int table, const char **ns, const char **name, lakeError *err) {
    *ns = str(req, "namespace");
    *name = table ? str(req, "name") : NULL;
    if (!nameIsValid(*ns) || (table && !nameIsValid(*name)))
        return errSetStatus(err, "invalid_argument",
                            "names must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)", NAME_MAX_LEN);
    return 0;
}

static cJSON *generationAnswer(int64_t g) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "generation", (double)g);
    return a;
}

/* invalid_argument for a key of obj not in fields (space-separated): a
 * misspelt field silently ignored would do something other than asked. */
static int onlyFields(const char *what, const char *fields, const cJSON *obj, lakeError *err) {
    const cJSON *f;
    cJSON_ArrayForEach(f, obj) {
        size_t n = strlen(f->string);
        const char *p = fields;
        int known = 0;
        while (*p && !known) {
            size_t k = strcspn(p, " ");
            known = k == n && strncmp(p, f->string, n) == 0;
            p += k + (p[k] == ' ');
        }
        if (!known) return errSetStatus(err, "invalid_argument", "%s: unknown field '%.64s'", what, f->string);
    }
    return 0;
}

static int checkFields(const char *action, const cJSON *req, lakeError *err) {
    return onlyFields(action, row(action) ? row(action)->fields : "", req, err);
}

/* --- vended access (DESIGN §4): URLs signed with the stage's keys ---------- */

/* A string field: *out NULL when absent or null (invalid_argument then if
 * required); invalid_argument when of another type. */
static int text(const cJSON *obj, const char *key, int required, const char **out, lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = cJSON_IsString(v) ? v->valuestring : NULL;
    if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
        return errSetStatus(err, "invalid_argument", "%s: expected a string", key);
    if (required && !*out) return errSetStatus(err, "invalid_argument", "%s is required", key);
    return 0;
}

static int64_t expiryMax(const actionContext *ctx) {
    return ctx->presign_max > 0 ? ctx->presign_max : STAGE_PRESIGN_MAX;
}

/* The server's default expiry, never over its cap. */
static int64_t expiryDefault(const actionContext *ctx) {
    int64_t def = ctx->presign_default > 0 ? ctx->presign_default : STAGE_PRESIGN_DEFAULT;
    return def < expiryMax(ctx) ? def : expiryMax(ctx);
}

/* The expiry asked for, in whole seconds: the server's default when
 * absent; one over the server's cap is refused, never shortened. */
static int expiry(const actionContext *ctx, const cJSON *req, int64_t *out, lakeError *err) {
    int64_t max = expiryMax(ctx);
    if (integer(req, "expires", expiryDefault(ctx), 1, out, err)) return err->code;
    if (*out > max)
        return errSetStatus(err, "invalid_argument", "expires: at most %lld seconds on this server",
                            (long long)max);
    return 0;
}

/* The request's location, required to lie in the stage; the answer does
 * not quote it (no path reaches a client, DESIGN §5). */
static int location(const actionContext *ctx, const cJSON *req, const char **loc, lakeError *err) {
    if (text(req, "location", 1, loc, err)) return err->code;
    if (stageContains(ctx->stage, *loc, NULL))
        return errSetStatus(err, "invalid_argument", "location: outside the managed stage");
    return 0;
}

/* The upload a request names; its strings stay the request's. */
static int upload(const actionContext *ctx, const cJSON *req, stageUpload *u, lakeError *err) {
    const char *loc, *id, *ticket;
    memset(u, 0, sizeof *u);
    if (location(ctx, req, &loc, err) || text(req, "upload_id", 1, &id, err) ||
        text(req, "ticket", 1, &ticket, err))
        return err->code;
    if (strlen(ticket) != STAGE_TICKET_LEN) /* a longer one would be cut to a valid one */
        return errSetStatus(err, "permission_denied", "not an upload this server began");
    u->location = (char *)loc;
    u->upload_id = (char *)id;
    memcpy(u->ticket, ticket, STAGE_TICKET_LEN + 1);
    return 0;
}

/* The parts array of upload_parts or upload_complete: an array of 1..max
 * objects with exactly fields. */
static int partsArray(const cJSON *req, int max, const char *fields, const cJSON **arr, int *n,
                      lakeError *err) {
    *arr = cJSON_GetObjectItemCaseSensitive(req, "parts");
    *n = cJSON_GetArraySize(*arr);
    if (!cJSON_IsArray(*arr) || *n < 1 || *n > max)
        return errSetStatus(err, "invalid_argument", "parts: an array of 1 to %d parts", max);
    const cJSON *p;
    cJSON_ArrayForEach(p, *arr) {
        if (!cJSON_IsObject(p))
            return errSetStatus(err, "invalid_argument", "parts: each part is an object of %s", fields);
        if (onlyFields("parts", fields, p, err)) return err->code;
    }
    return 0;
}

/* An S3 stage's refusal in the protocol's words: 78 is the server's own
 * configuration (no usable keys), said so, the detail kept for the log. */
static int vendFailed(lakeError *err) {
    if (err->code != LAKE_ECONFIG || err->status) return err->code;
    char detail[sizeof err->cause];
    snprintf(detail, sizeof detail, "%.250s", err->msg);
    errSetStatus(err, "failed_precondition", "the server holds no S3 credentials");
    snprintf(err->cause, sizeof err->cause, "%s", detail);
    return err->code;
}

static cJSON *urlAnswer(const char *url, int64_t expires) {
    cJSON *a = cJSON_CreateObject();
    if (a && (!cJSON_AddStringToObject(a, "url", url) || !cJSON_AddNumberToObject(a, "expires", (double)expires))) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}

static int presignGet(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    const char *loc;
    int64_t expires;
    char *url = NULL;
    if (location(ctx, req, &loc, err) || expiry(ctx, req, &expires, err)) return err->code;
    if (stageVendGet(ctx->stage, loc, expires, &url, err)) return vendFailed(err);
    *answer = urlAnswer(url, expires);
    free(url);
    return *answer ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
}

/* One PUT when the request has an md5, else a multipart upload. */
/* upload_begin's "table", when given, is NS.T, whoever asks (a user's
 * write on it is checked before, by mayUpload). */
static int tableField(const cJSON *req, lakeError *err) {
    const char *table;
    char *ns = NULL, *name = NULL;
    if (text(req, "table", 0, &table, err)) return err->code;
    if (table && nameSplitTable(table, &ns, &name, err)) {
        err->status = "invalid_argument";
        return err->code;
    }
    free(ns);
    free(name);
    return 0;
}

/* upload_begin's dir, whoever asks: none (the stage's files/), one
 * under files/, or tables/ID of a live table -- the one "table" names,
 * when both are given -- so that no object lands where gc does not look,
 * nor in the directory of a table other than the one named (a user's
 * write on both was checked by mayUpload, which keeps a user to files/'s
 * dated directories and the tables'). */
static int uploadDir(const actionContext *ctx, const char *dir, const cJSON *req, lakeError *err) {
    const char *table;
    char ns[NAME_BUF], name[NAME_BUF], named[2 * NAME_BUF];
    if (!dir || strcmp(dir, "files") == 0 || strncmp(dir, "files/", 6) == 0) return 0;
    if (strncmp(dir, "tables/", 7) != 0)
        return errSetStatus(err, "invalid_argument", "dir: files/..., tables/ID of a table, or none (files/)");
    int rc = registryTableById(ctx->reg, dir + 7, ns, name, err);
    if (rc && err->status && strcmp(err->status, "not_found") == 0)
        return errSetStatus(err, "invalid_argument", "dir: no live table has that id");
    if (rc) return rc;
    if (text(req, "table", 0, &table, err)) return err->code;
    snprintf(named, sizeof named, "%s.%s", ns, name);
    if (table && strcmp(table, named) != 0)
        return errSetStatus(err, "invalid_argument", "dir and table name two different tables");
    return 0;
}

static int uploadBegin(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    stagePutReq pr = {0};
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(req, "size");
    if (text(req, "dir", 0, &pr.key_dir, err) || text(req, "content_type", 1, &pr.content_type, err) ||
        text(req, "sha256", 0, &pr.sha256, err) || text(req, "md5", 0, &pr.md5, err) ||
        integer(req, "size", -1, 0, &pr.size, err) || tableField(req, err) || uploadDir(ctx, pr.key_dir, req, err))
        return err->code;
    if (pr.md5) {
        int64_t expires = expiryDefault(ctx);
        char *location = NULL, *url = NULL;
        if (!size || cJSON_IsNull(size))
            return errSetStatus(err, "invalid_argument", "size is required for one PUT");
        if (stageVendPut(ctx->stage, &pr, expires, &location, &url, err)) return vendFailed(err);
        if (scoped(ctx) && registryUploaded(ctx->reg, ctx->principal, location, err)) {
            free(location);
            free(url);
            return err->code;
        }
        *answer = urlAnswer(url, expires);
        if (*answer && !cJSON_AddStringToObject(*answer, "location", location)) {
            cJSON_Delete(*answer);
            *answer = NULL;
        }
        free(location);
        free(url);
        return *answer ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
    }
    stageUpload u;
    if (stageVendBegin(ctx->stage, &pr, &u, err)) return vendFailed(err);
    /* an upload the registry does not know of is one no append of this
     * user may refer to: refused now, and gc aborts it */
    if (scoped(ctx) && registryUploaded(ctx->reg, ctx->principal, u.location, err)) {
        stageUploadClear(&u);
        return err->code;
    }
    *answer = cJSON_CreateObject();
    if (*answer && (!cJSON_AddStringToObject(*answer, "location", u.location) ||
                    !cJSON_AddStringToObject(*answer, "upload_id", u.upload_id) ||
                    !cJSON_AddStringToObject(*answer, "ticket", u.ticket))) {
        cJSON_Delete(*answer);
        *answer = NULL;
    }
    stageUploadClear(&u);
    return *answer ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
}

static int uploadParts(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    stageUpload u;
    int64_t expires;
    const cJSON *arr, *p;
    int n, i = 0;
    if (upload(ctx, req, &u, err) || expiry(ctx, req, &expires, err) ||
        partsArray(req, STAGE_PRESIGN_PARTS_MAX, "number size md5", &arr, &n, err))
        return err->code;
    stagePartReq parts[STAGE_PRESIGN_PARTS_MAX];
    char *urls[STAGE_PRESIGN_PARTS_MAX];
    cJSON_ArrayForEach(p, arr) {
        int64_t number;
        const char *md5;
        if (integer(p, "number", -1, 1, &number, err) || integer(p, "size", -1, 1, &parts[i].size, err) ||
            text(p, "md5", 1, &md5, err))
            return err->code;
        if (number > STAGE_PARTS_MAX || strlen(md5) != STAGE_MD5_B64_LEN) /* before the copies below */
            return errSetStatus(err, "invalid_argument",
                                "parts: each has a number 1 to %d, a size and a base64 md5", STAGE_PARTS_MAX);
        parts[i].number = (int)number;
        memcpy(parts[i].md5, md5, STAGE_MD5_B64_LEN + 1);
        i++;
    }
    if (stageVendParts(ctx->stage, &u, parts, (size_t)n, expires, urls, err)) return vendFailed(err);
    *answer = cJSON_CreateObject();
    cJSON *list = *answer ? cJSON_AddArrayToObject(*answer, "urls") : NULL;
    int ok = list && cJSON_AddNumberToObject(*answer, "expires", (double)expires);
    for (i = 0; i < n; i++) {
        cJSON *s = ok ? cJSON_CreateString(urls[i]) : NULL;
        ok = s && cJSON_AddItemToArray(list, s);
        free(urls[i]);
    }
    if (!ok) {
        cJSON_Delete(*answer);
        *answer = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
    }
    return 0;
}

/* Parts 1..n in order, each with its ETag. */
static int uploadComplete(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    stageUpload u;
    int64_t size;
    const cJSON *arr, *p;
    int n, i = 0;
    if (upload(ctx, req, &u, err) || integer(req, "size", -1, 0, &size, err) ||
        partsArray(req, STAGE_PARTS_MAX, "number etag", &arr, &n, err))
        return err->code;
    char **etags = calloc((size_t)n, sizeof *etags);
    if (!etags) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload_complete");
    int rc = 0;
    cJSON_ArrayForEach(p, arr) {
        int64_t number;
        const char *etag;
        if ((rc = integer(p, "number", -1, 1, &number, err)) || (rc = text(p, "etag", 1, &etag, err))) break;
        if (number != i + 1) {
            rc = errSetStatus(err, "invalid_argument", "parts: numbered 1 to %d in order; part %d is not", n,
                              i + 1);
            break;
        }
        etags[i++] = (char *)etag;
    }
    if (!rc && stageVendComplete(ctx->stage, &u, size, n, etags, err)) rc = vendFailed(err);
    free(etags);
    if (rc) return rc;
    *answer = cJSON_CreateObject();
    if (*answer && !cJSON_AddStringToObject(*answer, "location", u.location)) {
        cJSON_Delete(*answer);
        *answer = NULL;
    }
    return *answer ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
}

static int uploadAbort(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    stageUpload u;
    if (upload(ctx, req, &u, err)) return err->code;
    if (stageVendAbort(ctx->stage, &u, err)) return vendFailed(err);
    *answer = cJSON_CreateObject();
    return *answer ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
}

/* The vended-access actions; 1 in *handled when action is one. */
static int vend(const actionContext *ctx, const char *action, const cJSON *req, cJSON **answer,
                int *handled, lakeError *err) {
    static const struct {
        const char *name;
        int (*run)(const actionContext *, const cJSON *, cJSON **, lakeError *);
    } vends[] = {{"presign_get", presignGet},         {"upload_begin", uploadBegin},
                 {"upload_parts", uploadParts},       {"upload_complete", uploadComplete},
                 {"upload_abort", uploadAbort}};
    *handled = 0;
    for (size_t i = 0; i < sizeof vends / sizeof vends[0]; i++) {
        if (strcmp(vends[i].name, action) != 0) continue;
        *handled = 1;
        if (!ctx->stage)
            return errSetStatus(err, "failed_precondition", "the registry has no stage; no URLs are signed");
        /* before the request is read: a local stage signs nothing */
        if (!stageCanPresign(ctx->stage))
            return errSetStatus(err, "failed_precondition", "presigned URLs need an S3 stage; this server's is not");
        return vends[i].run(ctx, req, answer, err);
    }
    return 0;
}

/* --- grants (issue 29) ---------------------------------------------------- */

static int scoped(const actionContext *ctx) { return ctx->role && strcmp(ctx->role, "user") == 0; }

/* A held privilege (registryHolds' answer) or the one refusal, the same
 * whether the table exists or not, so no name leaks. */
static int held(const actionContext *ctx, int h, const char *priv, const char *on, lakeError *err) {
    if (h < 0) return -h;
    if (h) return 0;
    return errSetStatus(err, "permission_denied", "%s holds no %s privilege on %s", ctx->principal, priv, on);
}

static int holds(const actionContext *ctx, const char *priv, const char *ns, const char *name, lakeError *err) {
    char on[2 * NAME_MAX_LEN + 2];
    snprintf(on, sizeof on, "%s.%s", ns, name);
    return held(ctx, registryHolds(ctx->reg, ctx->principal, ctx->role, priv, ns, name, err), priv, on, err);
}

/* The id of the table whose segments directory (tables/ID/) holds loc,
 * in id; empty for any other location. */
static void segmentsOf(const actionContext *ctx, const char *loc, char id[NAME_BUF]) {
    char *key = ctx->stage ? stageRelativePath(ctx->stage, loc) : NULL;
    const char *slash = key && strncmp(key, "tables/", 7) == 0 ? strchr(key + 7, '/') : NULL;
    id[0] = '\0';
    if (slash && slash - (key + 7) < NAME_BUF) snprintf(id, NAME_BUF, "%.*s", (int)(slash - (key + 7)), key + 7);
    free(key);
}

/* registryMayGet for the caller: a table it may read refers to loc, or
 * loc is its own upload and it holds what the upload needed. */
static int mayGet(const actionContext *ctx, const char *loc, lakeError *err) {
    char id[NAME_BUF];
    segmentsOf(ctx, loc, id);
    return registryMayGet(ctx->reg, ctx->principal, ctx->role, loc, id[0] ? id : NULL, err);
}

/* Each location of a user's new version: one it uploaded, or one a table
 * it may read refers to, so a FILE value of a table it may not read,
 * copied or guessed, cannot be appended to one it may and read there. */
static int mayReference(const actionContext *ctx, const cJSON *req, lakeError *err) {
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(req, "segments");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
    const cJSON *x;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *list = pass ? files : segs;
        cJSON_ArrayForEach(x, list) {
            const cJSON *loc = pass ? x : cJSON_GetObjectItemCaseSensitive(x, "location");
            if (!cJSON_IsString(loc)) continue; /* the registry refuses it */
            int h = mayGet(ctx, loc->valuestring, err);
            if (h < 0) return -h;
            if (!h)
                return errSetStatus(err, "permission_denied",
                                    "%s may not refer to a location it did not upload and may not read",
                                    ctx->principal);
        }
    }
    return 0;
}

/* upload_begin's table: "table" (NS.T), on which write is needed, or the
 * table whose segments dir (tables/ID) names, on which write or modify
 * is; none: write on any table will do.  A dir's table is
 * refused in the same words whether the id is a live table's or not, so
 * an id does not tell its table's name (uploadDir checks that dir and
 * table agree). */
static int mayUpload(const actionContext *ctx, const cJSON *req, lakeError *err) {
    const char *dir, *table;
    if (text(req, "dir", 0, &dir, err) || text(req, "table", 0, &table, err)) return err->code;
    if (table) {
        char *ns, *name;
        if (nameSplitTable(table, &ns, &name, err)) {
            err->status = "invalid_argument";
            return err->code;
        }
        int rc = holds(ctx, "write", ns, name, err);
        free(ns);
        free(name);
        if (rc || !dir) return rc;
    }
    if (dir && strncmp(dir, "tables/", 7) == 0) {
        char ns[NAME_BUF], name[NAME_BUF];
        int rc = registryTableById(ctx->reg, dir + 7, ns, name, err);
        if (rc && (!err->status || strcmp(err->status, "not_found"))) return rc;
        /* a table's segments are an append's (write) or a rewrite's:
         * DELETE and UPDATE (modify), which modify alone allows; an
         * unknown id holds nothing */
        int h = 0;
        if (!rc && (h = registryHolds(ctx->reg, ctx->principal, ctx->role, "write", ns, name, err)) == 0)
            h = registryHolds(ctx->reg, ctx->principal, ctx->role, "modify", ns, name, err);
        return held(ctx, h, "write", "that table", err);
    }
    if (dir) return errSetStatus(err, "permission_denied", "a user's uploads go to files/ or a table's segments");
    return held(ctx, registryHolds(ctx->reg, ctx->principal, ctx->role, "write", NULL, NULL, err), "write",
                "any table", err);
}

/* What a user must hold for action: its privilege on the table the
 * request names, before anything else is read, so the answer does not
 * depend on whether the table exists. */
static int userMay(const actionContext *ctx, const char *action, const cJSON *req, lakeError *err) {
    const char *priv = actionsPrivilege(action), *ns, *name;
    if (!priv) return 0;
    if (strcmp(action, "presign_get") == 0) {
        const char *loc;
        if (text(req, "location", 1, &loc, err)) return err->code;
        int h = mayGet(ctx, loc, err);
        if (h < 0) return -h;
        return h ? 0 : errSetStatus(err, "permission_denied", "%s may not read that location", ctx->principal);
    }
    if (strcmp(action, "upload_begin") == 0) return mayUpload(ctx, req, err);
    if (!cJSON_GetObjectItemCaseSensitive(req, "namespace") && !cJSON_GetObjectItemCaseSensitive(req, "name"))
        return errSetStatus(err, "permission_denied", "a user's %s names its table", action);
    int rc;
    if ((rc = names(req, 1, &ns, &name, err))) return rc;
    /* where the server signs every URL a keyless user has (an S3 stage it
     * holds the keys of), the locations are checked too (after the
     * privilege, so the refusal names what is missing); a local stage's
     * objects are the file system's to guard */
    if ((strcmp(action, "append") == 0 || strcmp(action, "compact") == 0 || strcmp(action, "rewrite") == 0) &&
        ctx->stage && stageCanPresign(ctx->stage) &&
        ((rc = holds(ctx, priv, ns, name, err)) || (rc = mayReference(ctx, req, err))))
        return rc;
    /* else the registry checks the privilege in the action's own
     * transaction, before it looks for the table (registrySetScope) */
    return 0;
}

/* grant and revoke: {"privilege","on","grantee"}. */
static int grantAction(const actionContext *ctx, int revoke, const cJSON *req, cJSON **answer, lakeError *err) {
    const char *priv, *on, *who;
    if (text(req, "privilege", 1, &priv, err) || text(req, "on", 1, &on, err) || text(req, "grantee", 1, &who, err))
        return err->code;
    if (strcmp(priv, "read") && strcmp(priv, "write") && strcmp(priv, "modify"))
        return errSetStatus(err, "invalid_argument", "%.32s: not a privilege (read, write, modify)", priv);
    char ns[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1];
    if (nameTarget(on, 1, ns, name))
        return errSetStatus(err, "invalid_argument", "on: '*' (the catalog), NS or NS.T");
    char grantee[NAME_MAX_LEN + 8];
    if (strcasecmp(who, "PUBLIC") == 0) {
        snprintf(grantee, sizeof grantee, "PUBLIC");
    } else if (strncmp(who, "role:", 5) == 0) {
        if (strcmp(who + 5, "user") != 0)
            return errSetStatus(err, "invalid_argument",
                                "grantee: role:user is the one role grants scope (others hold what their role gives)");
        snprintf(grantee, sizeof grantee, "%s", who);
    } else if (nameIsValid(who)) {
        snprintf(grantee, sizeof grantee, "%s", who);
    } else {
        return errSetStatus(err, "invalid_argument", "grantee: a principal's name, role:user or PUBLIC");
    }
    int64_t g;
    int changed, rc = registryGrant(ctx->reg, revoke, priv, on, grantee, ctx->principal, &g, &changed, err);
    if (rc) return rc;
    *answer = generationAnswer(g);
    if (*answer && !cJSON_AddBoolToObject(*answer, "changed", changed)) {
        cJSON_Delete(*answer);
        *answer = NULL;
    }
    return *answer ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
}

/* list_tables {"after":"NS.T","limit","namespace","known_generation"},
 * each optional: a page of the tables the caller may read (a user: those
 * it holds read on; any other role: all), at most LIST_TABLES_MAX_LIMIT
 * tables and LIST_TABLES_MAX_BYTES of their text. */
static int listTables(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    const char *ns, *after;
    int64_t limit, known;
    char after_ns[NAME_MAX_LEN + 1] = "", after_name[NAME_MAX_LEN + 1] = "";
    if (text(req, "namespace", 0, &ns, err) || text(req, "after", 0, &after, err) ||
        integer(req, "limit", LIST_TABLES_MAX_LIMIT, 1, &limit, err) ||
        integer(req, "known_generation", -1, -1, &known, err))
        return err->code;
    if (ns && !nameIsValid(ns))
        return errSetStatus(err, "invalid_argument", "namespace: names must match [A-Za-z_][A-Za-z0-9_]*");
    if (after && (nameTarget(after, 0, after_ns, after_name) || !after_name[0]))
        return errSetStatus(err, "invalid_argument", "after: expected a table name NS.T");
    if (limit > LIST_TABLES_MAX_LIMIT) limit = LIST_TABLES_MAX_LIMIT; /* the server's limit caps the client's */
    return registryListTables(ctx->reg, scoped(ctx) ? ctx->principal : NULL, ctx->role, ns, after ? after_ns : NULL,
                              after ? after_name : NULL, known, limit, LIST_TABLES_MAX_BYTES, ctx->allow_unmarked,
                              answer, err);
}

/* grants {"on"}: those on it (NS or NS.T), or all; a non-admin sees only
 * those to itself, its role and PUBLIC. */
static int grantsAction(const actionContext *ctx, const cJSON *req, cJSON **answer, lakeError *err) {
    const char *on;
    char ns[NAME_MAX_LEN + 1] = "", name[NAME_MAX_LEN + 1] = "";
    if (text(req, "on", 0, &on, err)) return err->code;
    if (on && nameTarget(on, 0, ns, name)) return errSetStatus(err, "invalid_argument", "on: NS or NS.T");
    int admin = ctx->role && strcmp(ctx->role, "admin") == 0;
    cJSON *list = NULL;
    int rc = registryGrants(ctx->reg, on ? ns : NULL, name[0] ? name : NULL, admin ? NULL : ctx->principal, ctx->role,
                            &list, err);
    if (rc) return rc;
    *answer = cJSON_CreateObject();
    if (!*answer || !cJSON_AddItemToObject(*answer, "grants", list)) {
        cJSON_Delete(*answer);
        cJSON_Delete(list);
        *answer = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "answer");
    }
    return 0;
}

static int dispatch(const actionContext *ctx, const char *action, const cJSON *req, cJSON **answer,
                    lakeError *err);

int actionsDispatch(const actionContext *ctx, const char *action, const cJSON *req,
                    cJSON **answer, lakeError *err) {
    /* a user's privilege on the table the action names is checked by the
     * registry, in the action's transaction: no transaction of its own */
    int scope = scoped(ctx) && ctx->reg && actionsPrivilege(action);
    if (scope) registrySetScope(ctx->reg, ctx->principal, ctx->role, actionsPrivilege(action));
    int rc = dispatch(ctx, action, req, answer, err);
    if (scope) registrySetScope(ctx->reg, NULL, NULL, NULL);
    return rc;
}

static int dispatch(const actionContext *ctx, const char *action, const cJSON *req, cJSON **answer,
                    lakeError *err) {
    *answer = NULL;
    static const cJSON empty = {0};
    const char *ns, *name;
    int64_t a, b, c;
    int rc;
    if (!req) req = &empty;
    if (!actionsKnown(action)) return errSetStatus(err, "not_found", "no such action");
    if (!actionsAllowed(ctx->role, action))
        return errSetStatus(err, "permission_denied", "role %s may not run %s", ctx->role, action);
    if (!cJSON_IsObject(req) && req != &empty)
        return errSetStatus(err, "invalid_argument", "the request must be a JSON object");
    if (req != &empty && checkFields(action, req, err)) return err->code;
    if (scoped(ctx) && (rc = userMay(ctx, action, req, err))) return rc;

    if (strcmp(action, "catalog_snapshot") == 0) {
        if ((rc = integer(req, "known_generation", -1, -1, &a, err)) ||
            (rc = integer(req, "max_entries", ctx->bounds.max_entries, 1, &b, err)) ||
            (rc = integer(req, "max_bytes", ctx->bounds.max_bytes, 1, &c, err)))
            return rc;
        /* the server's limits cap the client's */
        snapshotBounds bounds = ctx->bounds;
        if (b < bounds.max_entries) bounds.max_entries = b;
        if (c < bounds.max_bytes) bounds.max_bytes = c;
        return registrySnapshot(ctx->reg, a, &bounds, ctx->allow_unmarked, answer, err);
    }
    if (strcmp(action, "resolve") == 0) {
        const char *known_id;
        if ((rc = names(req, 1, &ns, &name, err)) || (rc = integer(req, "version", -1, 0, &a, err)) ||
            (rc = integer(req, "known_version", -1, 0, &b, err)) || (rc = text(req, "known_id", 0, &known_id, err)))
            return rc;
        /* a conditional resolve (DESIGN §5): the client holds known_id at
         * known_version and asks whether that is still current */
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(req, "timestamp");
        if (b >= 0 || known_id) {
            if (a >= 0 || b < 0 || !known_id || ts)
                return errSetStatus(err, "invalid_argument",
                                    "resolve: known_id and known_version go together, without version");
            return registryResolveChanged(ctx->reg, ns, name, known_id, b, answer, err);
        }
        if (ts && !cJSON_IsNull(ts)) { /* time travel: the version of that time */
            long long secs;
            char at[32];
            if (a >= 0) return errSetStatus(err, "invalid_argument", "resolve: version or timestamp, not both");
            if (!cJSON_IsString(ts) || rfc3339Parse(ts->valuestring, &secs, NULL, NULL))
                return errSetStatus(err, "invalid_argument", "timestamp: expected an RFC 3339 time");
            rfc3339Format(at, secs); /* UTC, whole seconds: as the registry records commits */
            return registryResolveAt(ctx->reg, ns, name, at, answer, err);
        }
        return registryResolve(ctx->reg, ns, name, a, answer, err);
    }
    if (strcmp(action, "history") == 0) {
        if ((rc = names(req, 1, &ns, &name, err)) || (rc = integer(req, "after", -1, -1, &a, err)) ||
            (rc = integer(req, "limit", HISTORY_MAX_LIMIT, 1, &b, err)))
            return rc;
        if (b > HISTORY_MAX_LIMIT) b = HISTORY_MAX_LIMIT; /* the server's limit caps the client's */
        return registryHistory(ctx->reg, ns, name, a, b, answer, err);
    }
    /* no registry change: the stage's keys sign, the registry is not read */
    int handled;
    if ((rc = vend(ctx, action, req, answer, &handled, err)) || handled) return rc;
    /* an authority without a marker answers no snapshot; it takes no
     * change either (the local development path excepted) */
    if (!ctx->allow_unmarked && strcmp(action, "resolve") && strcmp(action, "whoami") &&
        !registryHasMarker(ctx->reg))
        return errSetStatus(err, "failed_precondition", "registry has no directory marker; not authoritative");
    if (strcmp(action, "append") == 0 || strcmp(action, "compact") == 0 || strcmp(action, "rewrite") == 0) {
        if ((rc = names(req, 1, &ns, &name, err))) return rc;
        /* containment needs a stage: without one every location is outside */
        if (!ctx->stage)
            return errSetStatus(err, "failed_precondition", "the registry has no stage; %ss are refused", action);
        if (!cJSON_GetObjectItemCaseSensitive(req, "expected_version"))
            return errSetStatus(err, "invalid_argument", "%s: expected_version is required", action);
        if ((rc = integer(req, "expected_version", 0, 0, &a, err))) return rc;
        const cJSON *segs = cJSON_GetObjectItemCaseSensitive(req, "segments");
        const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
        const cJSON *replace = cJSON_GetObjectItemCaseSensitive(req, "replace");
        if (action[0] == 'c')
            return registryCompact(ctx->reg, ctx->stage, ns, name, a, replace, segs, files, ctx->principal, answer, err);
        if (action[0] == 'r')
            return registryRewrite(ctx->reg, ctx->stage, ns, name, a, str(req, "operation"), replace, segs, files,
                                   ctx->principal, answer, err);
        rc = registryAppend(ctx->reg, ctx->stage, ns, name, a, segs, files, ctx->principal, answer, err);
        if (!rc && ctx->after_append) ctx->after_append();
        return rc;
    }
    if (strcmp(action, "list_tables") == 0) return listTables(ctx, req, answer, err);
    if (strcmp(action, "gc") == 0) return catalogGcAction(ctx, req, answer, err) ? vendFailed(err) : 0;
    if (strcmp(action, "rollback") == 0) {
        if ((rc = names(req, 1, &ns, &name, err))) return rc;
        if (!cJSON_GetObjectItemCaseSensitive(req, "expected_version") || !cJSON_GetObjectItemCaseSensitive(req, "version"))
            return errSetStatus(err, "invalid_argument", "rollback: expected_version and version are required");
        if ((rc = integer(req, "expected_version", 0, 0, &a, err)) || (rc = integer(req, "version", 0, 0, &b, err)))
            return rc;
        return registryRollback(ctx->reg, ns, name, a, b, ctx->principal, answer, err);
    }
    if (strcmp(action, "alter") == 0) {
        if ((rc = names(req, 1, &ns, &name, err))) return rc;
        const char *op = str(req, "operation"), *column = str(req, "column"), *to = str(req, "to");
        if (!op || !column)
            return errSetStatus(err, "invalid_argument", "alter: operation and column are required");
        if ((strcmp(op, "rename-column") == 0) != (to != NULL))
            return errSetStatus(err, "invalid_argument", "alter: to is rename-column's, and it needs one");
        if ((rc = registryAlter(ctx->reg, ns, name, op, column, to, ctx->principal, answer, &a, err))) return rc;
        cJSON_AddNumberToObject(*answer, "generation", (double)a);
        return 0;
    }
    if (strcmp(action, "references") == 0) {
        const cJSON *after = cJSON_GetObjectItemCaseSensitive(req, "after");
        if (after && !cJSON_IsNull(after) && !cJSON_IsString(after))
            return errSetStatus(err, "invalid_argument", "after: expected a location");
        if ((rc = integer(req, "limit", REFERENCES_MAX_LIMIT, 1, &a, err)) ||
            (rc = integer(req, "grace", -1, 0, &b, err)))
            return rc;
        if (a > REFERENCES_MAX_LIMIT) a = REFERENCES_MAX_LIMIT; /* the server's limit caps the client's */
        return registryReferences(ctx->reg, cJSON_IsString(after) ? after->valuestring : NULL, a,
                                  REFERENCES_MAX_BYTES, answer, err);
    }
    if (strcmp(action, "expire") == 0) {
        /* one table, or (neither name) every table */
        int one = cJSON_GetObjectItemCaseSensitive(req, "namespace") || cJSON_GetObjectItemCaseSensitive(req, "name");
        if ((one && (rc = names(req, 1, &ns, &name, err))) ||
            (rc = integer(req, "older_than", ctx->has_retention ? ctx->retention : CONFIG_RETENTION_DEFAULT, 0,
                          &a, err)))
            return rc;
        return registryExpire(ctx->reg, one ? ns : NULL, one ? name : NULL, a, answer, err);
    }
    if (strcmp(action, "create_namespace") == 0) {
        if ((rc = names(req, 0, &ns, &name, err)) ||
            (rc = registryCreateNamespace(ctx->reg, ns, &a, err)))
            return rc;
        *answer = generationAnswer(a);
        return 0;
    }
    if (strcmp(action, "create_table") == 0) {
        if ((rc = names(req, 1, &ns, &name, err))) return rc;
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(req, "schema");
        char *text = schema ? cJSON_PrintUnformatted(schema) : NULL, *canon = NULL;
        rc = schemaCanonical(text ? text : "", &canon, err);
        cJSON_free(text);
        if (rc) {
            err->status = "invalid_argument"; /* a bad schema is the request's fault */
            return err->code;
        }
        /* a schema no snapshot could carry is refused now, not at every
         * later snapshot */
        if ((int64_t)strlen(canon) > ctx->bounds.max_schema_bytes) {
            cJSON_free(canon);
            return errSetStatus(err, "payload_too_large", "the schema exceeds %lld bytes",
                                (long long)ctx->bounds.max_schema_bytes);
        }
        rc = registryCreateTable(ctx->reg, ns, name, canon, &a, err);
        cJSON_free(canon);
        if (rc) return rc;
        *answer = generationAnswer(a);
        return 0;
    }
    if (strcmp(action, "grant") == 0 || strcmp(action, "revoke") == 0)
        return grantAction(ctx, action[0] == 'r', req, answer, err);
    if (strcmp(action, "grants") == 0) return grantsAction(ctx, req, answer, err);
    if (strcmp(action, "drop_table") == 0) {
        if ((rc = names(req, 1, &ns, &name, err)) || (rc = registryDropTable(ctx->reg, ns, name, &a, err)))
            return rc;
        *answer = generationAnswer(a);
        return 0;
    }
    /* whoami */
    *answer = cJSON_CreateObject();
    cJSON_AddStringToObject(*answer, "principal", ctx->principal);
    cJSON_AddStringToObject(*answer, "role", ctx->role);
    if (ctx->stage_url) cJSON_AddStringToObject(*answer, "stage", ctx->stage_url);
    cJSON *list = cJSON_AddArrayToObject(*answer, "actions");
    for (size_t i = 0; i < NACTIONS; i++)
        if (actionsAllowed(ctx->role, actions[i].name))
            cJSON_AddItemToArray(list, cJSON_CreateString(actions[i].name));
    /* a user's grants (what scopes its actions); other roles' are by role */
    if (scoped(ctx)) {
        cJSON *grants = NULL;
        if ((rc = registryGrants(ctx->reg, NULL, NULL, ctx->principal, ctx->role, &grants, err))) {
            cJSON_Delete(*answer);
            *answer = NULL;
            return rc;
        }
        cJSON_AddItemToObject(*answer, "grants", grants);
    }
    return 0;
}

int actionsHandle(const actionContext *ctx, const char *action, const char *body, size_t len,
                  cJSON **answer, lakeError *err) {
    *answer = NULL;
    /* strict JSON (core/jsonstrict.h): no string cut at a \u0000, no key
     * given twice for the dispatch to pick one of, nothing after it */
    jsonFault f;
    cJSON *req = len ? jsonStrictParse(body, len, NULL, NULL, &f) : cJSON_CreateObject();
    if (!req && (!len || f.nomem)) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    if (!cJSON_IsObject(req)) {
        char why[96];
        if (req) snprintf(why, sizeof why, "not an object");
        else jsonFaultText(&f, why, sizeof why);
        cJSON_Delete(req);
        return errSetStatus(err, "invalid_argument", "the request body must be one JSON object: %s", why);
    }
    int rc = actionsDispatch(ctx, action, req, answer, err);
    cJSON_Delete(req);
    return rc;
}

cJSON *actionsErrorAnswer(const lakeError *err, const char *request_id, int *http) {
    const char *code = errStatus(err);
    *http = statusHttp(code);
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", strcmp(code, "internal") == 0 ? "internal error" : err->msg);
    utf8OneLine(msg); /* it may quote what the client sent */
    cJSON *j = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(j, "error");
    if (!e || !cJSON_AddStringToObject(e, "code", code) ||
        !cJSON_AddStringToObject(e, "message", msg) ||
        !cJSON_AddStringToObject(e, "request_id", request_id)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}
