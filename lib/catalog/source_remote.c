/*
 * source_remote.c - the remote CatalogSource: lake-metasrv over HTTPS.
 *
 * Every call is POST /v1/actions/NAME with one JSON object; the answer is
 * one JSON object or an error object whose code becomes the exit status
 * (core/http).  Connections are opened lazily, so a command answered from
 * a fresh cache makes no connection at all.
 *
 * With several endpoints (instances serving one catalog) a call tries the
 * preferred one, then the rest in order, each with a short connect timeout
 * (source.h says when it moves on).  An endpoint that fails stays in the
 * order: the next call tries it again, because a client process is short.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/source_impl.h"
#include "core/http.h"
#include "core/log.h"
#include "core/sha256.h"

typedef struct remoteSource {
    catalogSource base;
    char *endpoints[CONFIG_MAX_ENDPOINTS]; /* without a trailing slash */
    httpClient *http[CONFIG_MAX_ENDPOINTS];
    size_t n;
    size_t first;    /* tried first: the preferred endpoint */
    int answered;    /* index of the endpoint that answered last, or -1 */
    char *token;
    char *ca_file;
    size_t max_response;
    long connect_timeout_ms; /* 0: the default for the number of endpoints */
} remoteSource;

/* Calls whose repetition adds nothing: asking another instance after a
 * lost answer or a 503 cannot do anything twice (append, compact: DESIGN §5). */
static int repeatable(const char *action) {
    static const char *const safe[] = {"catalog_snapshot", "resolve", "whoami", "references", "append", "compact",
                                       "presign_get", "upload_parts", "upload_complete", "upload_abort"};
    for (size_t i = 0; i < sizeof safe / sizeof safe[0]; i++)
        if (strcmp(action, safe[i]) == 0) return 1;
    return 0;
}

static int callOne(remoteSource *rs, size_t i, const char *action, const cJSON *req, cJSON **answer,
                   lakeError *err) {
    if (!rs->http[i]) {
        httpOptions opt = {.ca_file = rs->ca_file, .token = rs->token, .max_response = rs->max_response,
                           .connect_timeout_ms = rs->connect_timeout_ms};
        if (!opt.connect_timeout_ms && rs->n > 1) opt.connect_timeout_ms = HTTP_FAILOVER_CONNECT_TIMEOUT_MS;
        if (httpOpen(rs->endpoints[i], &opt, &rs->http[i], err)) return err->code;
    }
    char path[128];
    snprintf(path, sizeof path, "/v1/actions/%s", action);
    return httpPostJson(rs->http[i], path, req, answer, err);
}

static int remoteCall(catalogSource *s, const char *action, const cJSON *req, cJSON **answer,
                      lakeError *err) {
    remoteSource *rs = (remoteSource *)s;
    int rc = 0;
    size_t k;
    for (k = 0; k < rs->n; k++) {
        size_t i = k == 0 ? rs->first : (k <= rs->first ? k - 1 : k);
        rc = callOne(rs, i, action, req, answer, err);
        if (!rc) {
            rs->answered = (int)i;
            return 0;
        }
        int unreached = rs->http[i] && !httpReached(rs->http[i]);
        int retry = (rc == LAKE_EUNAVAIL && unreached) ||
                    (repeatable(action) && (rc == LAKE_EUNAVAIL ||
                                            (err->status && strcmp(err->status, "unavailable") == 0)));
        if (!retry) break;
        if (k + 1 < rs->n)
            traceLine("source", "%s at %s -> error %s, trying the next endpoint", action,
                      rs->endpoints[i], rc == LAKE_EUNAVAIL ? "unreachable" : errStatus(err));
    }
    if (rc == LAKE_EUNAVAIL && rs->n > 1 && k == rs->n) /* each was tried */
        errSet(err, LAKE_EUNAVAIL, "%s: none of the %zu endpoints answered", rs->base.name, rs->n);
    return rc;
}

static const char *remoteEndpoint(const catalogSource *s) {
    const remoteSource *rs = (const remoteSource *)s;
    return rs->answered >= 0 ? rs->endpoints[rs->answered] : NULL;
}

static void remotePrefer(catalogSource *s, const char *endpoint) {
    remoteSource *rs = (remoteSource *)s;
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->endpoints[i], endpoint) == 0) rs->first = i;
}

static void remoteClose(catalogSource *s) {
    remoteSource *rs = (remoteSource *)s;
    for (size_t i = 0; i < rs->n; i++) {
        httpClose(rs->http[i]);
        free(rs->endpoints[i]);
    }
    if (rs->token) memset(rs->token, 0, strlen(rs->token));
    free(rs->token);
    free(rs->ca_file);
    free(rs->base.name);
    free(rs->base.key);
    free(rs);
}

static const sourceOps remoteOps = {remoteCall, remoteClose, remoteEndpoint, remotePrefer};

static int byText(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a,b,c" (caller frees), NULL when out of memory */
static char *joined(char *const *list, size_t n) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    for (size_t i = 0; i < n; i++) fprintf(f, "%s%s", i ? "," : "", list[i]);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* 64 hex digits of SHA-256 over a label and the token: names the
 * principal in the cache directory without holding anything that would
 * authenticate (nor the hash the registry keeps of the token). */
static int principalHash(const char *token, char hex[SHA256_HEX_LEN + 1]) {
    static const char label[] = "lake cache principal\n";
    sha256Ctx *h = sha256New();
    if (!h) return -1;
    sha256Update(h, label, sizeof label - 1);
    sha256Update(h, token, strlen(token));
    sha256FinalHex(h, hex);
    sha256Free(h);
    return 0;
}

int sourceRemoteOpen(const lakeConfig *cfg, catalogSource **out, lakeError *err) {
    *out = NULL;
    char *token = NULL;
    if (configRemote(cfg, &token, err)) return err->code;
    remoteSource *rs = calloc(1, sizeof *rs);
    if (!rs) {
        free(token);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    rs->base.ops = &remoteOps;
    rs->token = token;
    rs->answered = -1;
    rs->max_response = (size_t)cfg->max_response;
    if (configEndpoints(cfg, rs->endpoints, &rs->n, err)) {
        remoteClose(&rs->base);
        return err->code;
    }
    /* name: the endpoints as given; key: the same set in any order names
     * the same catalog, and the principal (a hash of its token, never the
     * token) its own cache, so that no principal is served what another's
     * call returned (DESIGN §5) */
    char *sorted[CONFIG_MAX_ENDPOINTS], key[40], principal[SHA256_HEX_LEN + 1], both[96];
    memcpy(sorted, rs->endpoints, rs->n * sizeof *sorted);
    qsort(sorted, rs->n, sizeof *sorted, byText);
    char *set = joined(sorted, rs->n);
    rs->base.name = joined(rs->endpoints, rs->n);
    if (set && principalHash(token, principal) == 0) {
        sourceMakeKey(key, "remote", set);
        snprintf(both, sizeof both, "%s-%.16s", key, principal);
        rs->base.key = strdup(both);
    }
    free(set);
    if (cfg->ca_file) rs->ca_file = strdup(cfg->ca_file);
    rs->connect_timeout_ms = cfg->connect_timeout * 1000;
    if (!rs->base.name || !rs->base.key || (cfg->ca_file && !rs->ca_file)) {
        remoteClose(&rs->base);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    *out = &rs->base;
    return 0;
}
