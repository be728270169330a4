/*
 * source_remote.c - the remote CatalogSource: lake-metasrv over HTTPS.
 *
 * Every call is POST /v1/actions/NAME with one JSON object; the answer is
 * one JSON object or an error object whose code becomes the exit status
 * (core/http).  The connection is opened lazily, so a command answered from
 * a fresh cache makes no connection at all.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/source_impl.h"
#include "core/http.h"

typedef struct remoteSource {
    catalogSource base;
    char *endpoint; /* without a trailing slash */
    char *token;
    char *ca_file;
    size_t max_response;
    long connect_timeout_ms;
    httpClient *http;
} remoteSource;

static int remoteCall(catalogSource *s, const char *action, const cJSON *req, cJSON **answer,
                      lakeError *err) {
    remoteSource *rs = (remoteSource *)s;
    if (!rs->http) {
        httpOptions opt = {.ca_file = rs->ca_file, .token = rs->token, .max_response = rs->max_response,
                           .connect_timeout_ms = rs->connect_timeout_ms};
        if (httpOpen(rs->endpoint, &opt, &rs->http, err)) return err->code;
    }
    char path[128];
    snprintf(path, sizeof path, "/v1/actions/%s", action);
    return httpPostJson(rs->http, path, req, answer, err);
}

static void remoteClose(catalogSource *s) {
    remoteSource *rs = (remoteSource *)s;
    httpClose(rs->http);
    if (rs->token) memset(rs->token, 0, strlen(rs->token));
    free(rs->token);
    free(rs->endpoint);
    free(rs->ca_file);
    free(rs->base.name);
    free(rs->base.key);
    free(rs);
}

static const sourceOps remoteOps = {remoteCall, remoteClose};

int sourceRemoteOpen(const lakeConfig *cfg, catalogSource **out, lakeError *err) {
    *out = NULL;
    char *token = NULL;
    if (configRemote(cfg, &token, err)) return err->code;
    remoteSource *rs = calloc(1, sizeof *rs);
    char key[40];
    if (!rs) {
        free(token);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    rs->base.ops = &remoteOps;
    rs->token = token;
    rs->endpoint = strdup(cfg->metasrv);
    if (rs->endpoint) {
        size_t n = strlen(rs->endpoint);
        if (n && rs->endpoint[n - 1] == '/') rs->endpoint[n - 1] = '\0';
        sourceMakeKey(key, "remote", rs->endpoint);
        rs->base.name = strdup(rs->endpoint);
        rs->base.key = strdup(key);
    }
    if (cfg->ca_file) rs->ca_file = strdup(cfg->ca_file);
    rs->max_response = (size_t)cfg->max_response;
    rs->connect_timeout_ms = cfg->connect_timeout * 1000;
    if (!rs->endpoint || !rs->base.name || !rs->base.key || (cfg->ca_file && !rs->ca_file)) {
        remoteClose(&rs->base);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    *out = &rs->base;
    return 0;
}
