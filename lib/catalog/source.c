/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * source.c - choosing a CatalogSource, tracing calls, typed wrappers.
 */
#include "catalog/source.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/source_impl.h"
#include "core/jsonstrict.h"
#include "core/log.h"

int sourceOpen(const lakeConfig *cfg, catalogSource **out, lakeError *err) {
    *out = NULL;
    if (!configIsLocal(cfg)) return sourceRemoteOpen(cfg, out, err);
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/registry.db", cfg->home) >= (int)sizeof path)
        return errSet(err, LAKE_ECONFIG, "home: path too long");
    if (sourceLocalOpen(path, cfg->stage, out, err)) return err->code;
    sourceLocalRetention(*out, cfg->retention);
    return 0;
}

void sourceClose(catalogSource *s) {
    if (s) s->ops->close(s);
}

const char *sourceName(const catalogSource *s) { return s->name; }
const char *sourceKey(const catalogSource *s) { return s->key; }

const char *sourceEndpoint(const catalogSource *s) {
    return s->ops->endpoint ? s->ops->endpoint(s) : NULL;
}

void sourcePrefer(catalogSource *s, const char *endpoint) {
    if (s->ops->prefer && endpoint) s->ops->prefer(s, endpoint);
}

void sourceNoRetry(catalogSource *s, int on) {
    if (s->ops->no_retry) s->ops->no_retry(s, on);
}

/* A number of a traced request or answer, printed with %.0f: -1 when
 * absent or not a number, and never converted to an integer type (a
 * server's answer may hold any double). */
static double num(const cJSON *v) {
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The facts of a request worth a trace line. */
static void requestFacts(const char *action, const cJSON *req, char *buf, size_t n) {
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(req, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
    const cJSON *known = cJSON_GetObjectItemCaseSensitive(req, "known_generation");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(req, "version");
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(req, "expected_version");
    buf[0] = '\0';
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(req, "after");
    if (strcmp(action, "catalog_snapshot") == 0 && known)
        snprintf(buf, n, " known=%.0f", num(known));
    else if (strcmp(action, "list_tables") == 0 && cJSON_IsString(after)) /* a later page */
        snprintf(buf, n, " after=%s", after->valuestring);
    else if (strcmp(action, "list_tables") == 0 && known) /* a conditional first page */
        snprintf(buf, n, " known=%.0f", num(known));
    else if (cJSON_IsString(ns))
        snprintf(buf, n, " %s%s%s", ns->valuestring, cJSON_IsString(name) ? "." : "",
                 cJSON_IsString(name) ? name->valuestring : "");
    size_t len = strlen(buf);
    const cJSON *known_version = cJSON_GetObjectItemCaseSensitive(req, "known_version");
    if (known_version) snprintf(buf + len, n - len, " known=%.0f", num(known_version));
    else if (ver) snprintf(buf + len, n - len, " version=%.0f", num(ver));
    else if (exp) snprintf(buf + len, n - len, " expected=%.0f", num(exp));
}

static void answerOutcome(const cJSON *ans, char *buf, size_t n) {
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(ans, "status");
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(ans, "generation");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(ans, "version");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(ans, "entries");
    if (cJSON_IsString(status) && strcmp(status->valuestring, "snapshot") == 0)
        snprintf(buf, n, "snapshot generation=%.0f entries=%d", num(gen), cJSON_GetArraySize(entries));
    else if (cJSON_IsString(status) && !gen && cJSON_IsNumber(ver)) /* a conditional resolve */
        snprintf(buf, n, "%s version=%.0f", status->valuestring, num(ver));
    else if (cJSON_IsString(status))
        snprintf(buf, n, "%s generation=%.0f", status->valuestring, num(gen));
    else if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(ans, "tables")))
        snprintf(buf, n, "generation=%.0f tables=%d more=%s", num(gen),
                 cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ans, "tables")),
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "more")) ? "yes" : "no");
    else if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(ans, "locations")))
        snprintf(buf, n, "locations=%d more=%s",
                 cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ans, "locations")),
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "more")) ? "yes" : "no");
    else if (cJSON_IsNumber(ver))
        snprintf(buf, n, "version=%.0f", num(ver));
    else if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ans, "expired")))
        snprintf(buf, n, "expired=%.0f", num(cJSON_GetObjectItemCaseSensitive(ans, "expired")));
    else if (cJSON_IsNumber(gen))
        snprintf(buf, n, "generation=%.0f", num(gen));
    else
        snprintf(buf, n, "ok");
}

int sourceCall(catalogSource *s, const char *action, const cJSON *req, cJSON **answer,
               lakeError *err) {
    int rc = s->ops->call(s, action, req, answer, err);
    if (traceEnabled()) {
        char facts[256], outcome[128];
        requestFacts(action, req, facts, sizeof facts);
        if (rc) snprintf(outcome, sizeof outcome, "error %s", rc == LAKE_EUNAVAIL ? "unreachable" : errStatus(err));
        else answerOutcome(*answer, outcome, sizeof outcome);
        traceLine("source", "%s%s -> %s", action, facts, outcome);
    }
    return rc;
}

/* Call, then take the integer field key of the answer into *out. */
/* sourceCall with req, which it frees (NULL: out of memory building it). */
static int callOwned(catalogSource *s, const char *action, cJSON *req, cJSON **answer, lakeError *err) {
    int rc = req ? sourceCall(s, action, req, answer, err) : errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    cJSON_Delete(req);
    return rc;
}

static int callForInt(catalogSource *s, const char *action, cJSON *req, const char *key,
                      int64_t *out, lakeError *err) {
    cJSON *ans = NULL;
    int rc = callOwned(s, action, req, &ans, err);
    if (!rc) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ans, key);
        if (!jsonWhole(v, INT64_MIN, out)) rc = errSetStatus(err, "internal", "%s: the answer has no %s", action, key);
    }
    cJSON_Delete(ans);
    return rc;
}

static cJSON *namesRequest(const char *ns, const char *name) {
    cJSON *req = cJSON_CreateObject();
    if (req && !cJSON_AddStringToObject(req, "namespace", ns)) { cJSON_Delete(req); return NULL; }
    if (req && name && !cJSON_AddStringToObject(req, "name", name)) { cJSON_Delete(req); return NULL; }
    return req;
}

int sourceSnapshot(catalogSource *s, int64_t known, int64_t max_entries, int64_t max_bytes,
                   cJSON **answer, lakeError *err) {
    cJSON *req = cJSON_CreateObject();
    cJSON_AddNumberToObject(req, "known_generation", (double)known);
    cJSON_AddNumberToObject(req, "max_entries", (double)max_entries);
    cJSON_AddNumberToObject(req, "max_bytes", (double)max_bytes);
    int rc = sourceCall(s, "catalog_snapshot", req, answer, err);
    cJSON_Delete(req);
    return rc;
}

int sourceResolve(catalogSource *s, const char *ns, const char *name, int64_t version,
                  cJSON **answer, lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req && version >= 0) cJSON_AddNumberToObject(req, "version", (double)version);
    return callOwned(s, "resolve", req, answer, err);
}

int sourceResolveAt(catalogSource *s, const char *ns, const char *name, const char *at, cJSON **answer,
                    lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req && !cJSON_AddStringToObject(req, "timestamp", at)) {
        cJSON_Delete(req);
        req = NULL;
    }
    return callOwned(s, "resolve", req, answer, err);
}

int sourceHistory(catalogSource *s, const char *ns, const char *name, int64_t after, cJSON **answer,
                  lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req && !cJSON_AddNumberToObject(req, "after", (double)after)) {
        cJSON_Delete(req);
        req = NULL;
    }
    return callOwned(s, "history", req, answer, err);
}

int sourceHistoryAll(catalogSource *s, const char *ns, const char *name, cJSON **versions, lakeError *err) {
    int rc = 0, more = 1;
    int64_t after = -1;
    cJSON *all = cJSON_CreateArray();
    if (!all) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "history");
    while (!rc && more) {
        cJSON *page = NULL, *v;
        if ((rc = sourceHistory(s, ns, name, after, &page, err))) break;
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(page, "versions");
        more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "more"));
        if (!cJSON_IsArray(list) || (more && cJSON_GetArraySize(list) == 0))
            rc = errSet(err, LAKE_EFAIL, "%s.%s: a malformed history answer", ns, name);
        cJSON_ArrayForEach(v, list) {
            if (rc) break;
            int64_t n;
            cJSON *copy = NULL;
            if (!jsonWhole(cJSON_GetObjectItemCaseSensitive(v, "version"), 0, &n) || n <= after)
                rc = errSet(err, LAKE_EFAIL, "%s.%s: a malformed history answer", ns, name);
            else if (!(copy = cJSON_Duplicate(v, 1)) || !cJSON_AddItemToArray(all, copy)) {
                cJSON_Delete(copy);
                rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "history");
            }
            after = n;
        }
        cJSON_Delete(page);
    }
    if (rc) {
        cJSON_Delete(all);
        all = NULL;
    }
    *versions = all;
    return rc;
}

int sourceResolveChanged(catalogSource *s, const char *ns, const char *name, const char *known_id,
                         int64_t known_version, cJSON **answer, lakeError *err) {
    if (!s->unconditional) {
        cJSON *req = namesRequest(ns, name);
        if (!req || !cJSON_AddStringToObject(req, "known_id", known_id) ||
            !cJSON_AddNumberToObject(req, "known_version", (double)known_version)) {
            cJSON_Delete(req);
            return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
        }
        int rc = sourceCall(s, "resolve", req, answer, err);
        cJSON_Delete(req);
        if (!rc || !err->status || strcmp(err->status, "invalid_argument") != 0) return rc;
        /* a lake-metasrv older than conditional resolves refuses the
         * fields: ask as before, and only so for the rest of the process */
        s->unconditional = 1;
        errClear(err);
    }
    return sourceResolve(s, ns, name, -1, answer, err);
}

int sourceAppend(catalogSource *s, const char *ns, const char *name, int64_t expected,
                 const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req) {
        cJSON_AddNumberToObject(req, "expected_version", (double)expected);
        cJSON_AddItemToObject(req, "segments", cJSON_Duplicate(segments, 1));
        cJSON_AddItemToObject(req, "files", files ? cJSON_Duplicate(files, 1) : cJSON_CreateArray());
    }
    return callForInt(s, "append", req, "version", version, err);
}

/* compact, or rewrite with operation: segments in place of replace. */
static int replaceCall(catalogSource *s, const char *action, const char *operation, const char *ns, const char *name,
                       int64_t expected, const cJSON *replace, const cJSON *segments, const cJSON *files,
                       int64_t *version, lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req) {
        cJSON_AddNumberToObject(req, "expected_version", (double)expected);
        if (operation) cJSON_AddStringToObject(req, "operation", operation);
        cJSON_AddItemToObject(req, "replace", cJSON_Duplicate(replace, 1));
        cJSON_AddItemToObject(req, "segments", cJSON_Duplicate(segments, 1));
        cJSON_AddItemToObject(req, "files", files ? cJSON_Duplicate(files, 1) : cJSON_CreateArray());
    }
    return callForInt(s, action, req, "version", version, err);
}

int sourceCompact(catalogSource *s, const char *ns, const char *name, int64_t expected, const cJSON *replace,
                  const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    return replaceCall(s, "compact", NULL, ns, name, expected, replace, segments, files, version, err);
}

int sourceRewrite(catalogSource *s, const char *ns, const char *name, int64_t expected, const char *operation,
                  const cJSON *replace, const cJSON *segments, const cJSON *files, int64_t *version, lakeError *err) {
    return replaceCall(s, "rewrite", operation, ns, name, expected, replace, segments, files, version, err);
}

int sourceRollback(catalogSource *s, const char *ns, const char *name, int64_t expected, int64_t to,
                   int64_t *version, lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req) {
        cJSON_AddNumberToObject(req, "expected_version", (double)expected);
        cJSON_AddNumberToObject(req, "version", (double)to);
    }
    return callForInt(s, "rollback", req, "version", version, err);
}

int sourceAlter(catalogSource *s, const char *ns, const char *name, const char *op, const char *column,
                const char *to, int64_t *version, lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req) {
        cJSON_AddStringToObject(req, "operation", op);
        cJSON_AddStringToObject(req, "column", column);
        if (to) cJSON_AddStringToObject(req, "to", to);
    }
    return callForInt(s, "alter", req, "version", version, err);
}

int sourceCreateNamespace(catalogSource *s, const char *ns, int64_t *generation, lakeError *err) {
    return callForInt(s, "create_namespace", namesRequest(ns, NULL), "generation", generation, err);
}

int sourceCreateTable(catalogSource *s, const char *ns, const char *name, const char *schema_json,
                      int64_t *generation, lakeError *err) {
    cJSON *req = namesRequest(ns, name);
    if (req) cJSON_AddItemToObject(req, "schema", cJSON_Parse(schema_json));
    return callForInt(s, "create_table", req, "generation", generation, err);
}

int sourceDropTable(catalogSource *s, const char *ns, const char *name, int64_t *generation,
                    lakeError *err) {
    return callForInt(s, "drop_table", namesRequest(ns, name), "generation", generation, err);
}

int sourceReferences(catalogSource *s, const char *after, int64_t limit, cJSON **answer, lakeError *err) {
    cJSON *req = cJSON_CreateObject();
    if (req && ((after && *after && !cJSON_AddStringToObject(req, "after", after)) ||
                !cJSON_AddNumberToObject(req, "limit", (double)limit))) {
        cJSON_Delete(req);
        req = NULL;
    }
    int rc = callOwned(s, "references", req, answer, err);
    if (!rc && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(*answer, "locations"))) {
        cJSON_Delete(*answer);
        *answer = NULL;
        rc = errSetStatus(err, "internal", "references: the answer has no locations");
    }
    return rc;
}

int sourceExpire(catalogSource *s, const char *ns, const char *name, int64_t older_than, int64_t *expired,
                 lakeError *err) {
    cJSON *req = ns ? namesRequest(ns, name) : cJSON_CreateObject();
    if (req && older_than >= 0 && !cJSON_AddNumberToObject(req, "older_than", (double)older_than)) {
        cJSON_Delete(req);
        req = NULL;
    }
    return callForInt(s, "expire", req, "expired", expired, err);
}

int sourceOutage(const lakeError *err) {
    if (err->code == LAKE_EUNAVAIL || err->code == LAKE_ETEMP) return 1;
    /* a plain failure is an outage unless the source said what was wrong
     * (failed_precondition, payload_too_large: serving stale would hide it) */
    return err->code == LAKE_EFAIL && (!err->status || strcmp(err->status, "internal") == 0);
}
