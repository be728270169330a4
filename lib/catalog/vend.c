/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vend.c - the client's side of vended access: a stageVendor that asks
 * lake-metasrv for the URLs (DESIGN §4, §5: presign_get, upload_begin,
 * upload_parts, upload_complete, upload_abort), and the choice of whether
 * a command's stage uses it.
 *
 * The vendor owns a source of its own (its own connection), guarded by a
 * mutex: the upload engine asks for part URLs from its sending thread
 * while the command's own source may be busy elsewhere.
 */
#include "catalog/vend.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/cache.h"
#include "catalog/source.h"

typedef struct vendor {
    catalogSource *src;
    pthread_mutex_t mu;
    char *table; /* NS.T the command's files are for (a user needs write on it); may be NULL */
} vendor;

static int call(vendor *v, const char *action, cJSON *req, cJSON **ans, lakeError *err) {
    if (!req) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", action);
    pthread_mutex_lock(&v->mu);
    int rc = sourceCall(v->src, action, req, ans, err);
    pthread_mutex_unlock(&v->mu);
    cJSON_Delete(req);
    return rc;
}

/* The string field key of an answer, copied into *out. */
static int answerString(const cJSON *ans, const char *action, const char *key, char **out, lakeError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ans, key);
    *out = NULL;
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return errSetStatus(err, "internal", "%s: the answer has no %s", action, key);
    if (!(*out = strdup(v->valuestring))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", action);
    return 0;
}

static cJSON *uploadReq(const stageUpload *u) {
    cJSON *r = cJSON_CreateObject();
    if (r && (!cJSON_AddStringToObject(r, "location", u->location) ||
              !cJSON_AddStringToObject(r, "upload_id", u->upload_id) ||
              !cJSON_AddStringToObject(r, "ticket", u->ticket))) {
        cJSON_Delete(r);
        r = NULL;
    }
    return r;
}

static cJSON *putReq(const vendor *v, const stagePutReq *p) {
    cJSON *r = cJSON_CreateObject();
    int ok = r && cJSON_AddStringToObject(r, "content_type", p->content_type);
    if (ok && v->table && !p->key_dir) ok = cJSON_AddStringToObject(r, "table", v->table) != NULL;
    if (ok && p->key_dir) ok = cJSON_AddStringToObject(r, "dir", p->key_dir) != NULL;
    if (ok && p->sha256) ok = cJSON_AddStringToObject(r, "sha256", p->sha256) != NULL;
    if (ok && p->md5) ok = cJSON_AddStringToObject(r, "md5", p->md5) && cJSON_AddNumberToObject(r, "size", (double)p->size);
    if (!ok) {
        cJSON_Delete(r);
        r = NULL;
    }
    return r;
}

static int vGet(void *ctx, const char *location, int64_t expires, char **url, lakeError *err) {
    cJSON *r = cJSON_CreateObject(), *ans = NULL;
    if (r && (!cJSON_AddStringToObject(r, "location", location) ||
              (expires && !cJSON_AddNumberToObject(r, "expires", (double)expires)))) {
        cJSON_Delete(r);
        r = NULL;
    }
    int rc = call(ctx, "presign_get", r, &ans, err);
    if (!rc) rc = answerString(ans, "presign_get", "url", url, err);
    cJSON_Delete(ans);
    return rc;
}

static int vPut(void *ctx, const stagePutReq *req, char **location, char **url, lakeError *err) {
    cJSON *ans = NULL;
    *location = *url = NULL;
    int rc = call(ctx, "upload_begin", putReq(ctx, req), &ans, err);
    if (!rc) rc = answerString(ans, "upload_begin", "location", location, err);
    if (!rc) rc = answerString(ans, "upload_begin", "url", url, err);
    cJSON_Delete(ans);
    if (rc) {
        free(*location);
        *location = NULL;
    }
    return rc;
}

static int vBegin(void *ctx, const stagePutReq *req, stageUpload *out, lakeError *err) {
    cJSON *ans = NULL;
    char *ticket = NULL;
    memset(out, 0, sizeof *out);
    int rc = call(ctx, "upload_begin", putReq(ctx, req), &ans, err);
    if (!rc) rc = answerString(ans, "upload_begin", "location", &out->location, err);
    if (!rc) rc = answerString(ans, "upload_begin", "upload_id", &out->upload_id, err);
    if (!rc) rc = answerString(ans, "upload_begin", "ticket", &ticket, err);
    if (!rc && strlen(ticket) != STAGE_TICKET_LEN)
        rc = errSetStatus(err, "internal", "upload_begin: a malformed ticket");
    if (!rc) memcpy(out->ticket, ticket, STAGE_TICKET_LEN + 1);
    free(ticket);
    cJSON_Delete(ans);
    if (rc) stageUploadClear(out);
    return rc;
}

static int vParts(void *ctx, const stageUpload *u, const stagePartReq *parts, size_t n, char **urls,
                  lakeError *err) {
    cJSON *r = uploadReq(u), *list = r ? cJSON_AddArrayToObject(r, "parts") : NULL, *ans = NULL;
    for (size_t i = 0; list && i < n; i++) {
        cJSON *p = cJSON_CreateObject();
        if (!p || !cJSON_AddItemToArray(list, p) || !cJSON_AddNumberToObject(p, "number", parts[i].number) ||
            !cJSON_AddNumberToObject(p, "size", (double)parts[i].size) ||
            !cJSON_AddStringToObject(p, "md5", parts[i].md5))
            list = NULL;
    }
    if (!list) {
        cJSON_Delete(r);
        r = NULL;
    }
    for (size_t i = 0; i < n; i++) urls[i] = NULL;
    int rc = call(ctx, "upload_parts", r, &ans, err);
    const cJSON *got = cJSON_GetObjectItemCaseSensitive(ans, "urls");
    if (!rc && (!cJSON_IsArray(got) || cJSON_GetArraySize(got) != (int)n))
        rc = errSetStatus(err, "internal", "upload_parts: the answer has not %zu urls", n);
    for (size_t i = 0; !rc && i < n; i++) {
        const cJSON *s = cJSON_GetArrayItem(got, (int)i);
        if (!cJSON_IsString(s)) rc = errSetStatus(err, "internal", "upload_parts: a url is not a string");
        else if (!(urls[i] = strdup(s->valuestring))) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "upload_parts");
    }
    if (rc)
        for (size_t i = 0; i < n; i++) {
            free(urls[i]);
            urls[i] = NULL;
        }
    cJSON_Delete(ans);
    return rc;
}

static int vComplete(void *ctx, const stageUpload *u, int64_t size, int nparts, char *const *etags,
                     lakeError *err) {
    cJSON *r = uploadReq(u), *list = r ? cJSON_AddArrayToObject(r, "parts") : NULL, *ans = NULL;
    if (list && size >= 0 && !cJSON_AddNumberToObject(r, "size", (double)size)) list = NULL;
    for (int i = 0; list && i < nparts; i++) {
        cJSON *p = cJSON_CreateObject();
        if (!p || !cJSON_AddItemToArray(list, p) || !cJSON_AddNumberToObject(p, "number", i + 1) ||
            !cJSON_AddStringToObject(p, "etag", etags[i]))
            list = NULL;
    }
    if (!list) {
        cJSON_Delete(r);
        r = NULL;
    }
    int rc = call(ctx, "upload_complete", r, &ans, err);
    cJSON_Delete(ans);
    return rc;
}

static int vAbort(void *ctx, const stageUpload *u, lakeError *err) {
    cJSON *ans = NULL;
    int rc = call(ctx, "upload_abort", uploadReq(u), &ans, err);
    cJSON_Delete(ans);
    return rc;
}

static void vFree(void *ctx) {
    vendor *v = ctx;
    if (!v) return;
    sourceClose(v->src);
    pthread_mutex_destroy(&v->mu);
    free(v->table);
    free(v);
}

/* Whether a command's S3 stage goes through the server: s3_access, else
 * vended exactly when the environment holds no AWS keys. */
static int wantVended(const lakeConfig *cfg) {
    if (cfg->s3_access) return strcmp(cfg->s3_access, "vended") == 0;
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    return !(id && *id && secret && *secret);
}

int catalogStageOpen(const lakeConfig *cfg, catalogCache *cache, const char *table, stage **out, lakeError *err) {
    char *url = NULL;
    *out = NULL;
    int rc = catalogStageUrl(cfg, cache, &url, err);
    if (!rc) rc = stageOpen(url, out, err);
    int s3 = url && strncmp(url, "s3://", 5) == 0;
    free(url);
    if (rc || !s3 || !wantVended(cfg)) return rc;
    if (configIsLocal(cfg)) {
        /* embedded: nobody to ask; with s3_access=vended that is a mistake */
        if (cfg->s3_access) rc = errSet(err, LAKE_ECONFIG, "s3_access=vended needs a metadata server (metasrv)");
    } else {
        vendor *v = calloc(1, sizeof *v);
        if (!v) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
        else pthread_mutex_init(&v->mu, NULL);
        if (!rc && table && !(v->table = strdup(table))) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
            vFree(v);
        }
        if (!rc && (rc = sourceOpen(cfg, &v->src, err))) vFree(v);
        stageVendor sv = {v, vGet, vPut, vBegin, vParts, vComplete, vAbort, vFree};
        if (!rc && (rc = stageSetVendor(*out, &sv, err))) vFree(v);
    }
    if (rc) {
        stageClose(*out);
        *out = NULL;
    }
    return rc;
}
