/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c - JSON calls over libcurl with timeouts, ceilings and verification.
 */
#include "core/http.h"

#include <cjson/cJSON.h>
#include "core/curl.h"
#include "core/jsonstrict.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct httpClient {
    CURL *curl;
    char *base;
    struct curl_slist *headers;
    httpOptions opt;
    int reached; /* the last request may have reached the server */
    long retry_after; /* seconds, from the last answer's Retry-After; 0: none */
    char errbuf[CURL_ERROR_SIZE]; /* curl's words for the last failure */
};

typedef struct sink {
    char *buf;
    size_t len, cap, max;
    int overflow;
} sink;

static size_t onData(char *p, size_t size, size_t n, void *ctx) {
    sink *s = ctx;
    size_t bytes = size * n;
    if (s->len + bytes > s->max) {
        s->overflow = 1;
        return 0; /* aborts the transfer: never a truncated answer */
    }
    if (s->len + bytes + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + bytes + 1) cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b) return 0;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, bytes);
    s->len += bytes;
    s->buf[s->len] = '\0';
    return bytes;
}

int httpOpen(const char *base, const httpOptions *opt, httpClient **out, lakeError *err) {
    static int inited;
    *out = NULL;
    const char *why = lakeCurlReady(); /* an error, not curl.h's exit */
    if (why) return errSet(err, LAKE_EFAIL, "%s", why);
    if (!inited) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = 1;
    }
    *out = NULL;
    httpClient *h = calloc(1, sizeof *h);
    if (!h || !(h->base = strdup(base)) || !(h->curl = curl_easy_init())) {
        httpClose(h);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "http");
    }
    h->opt = *opt;
    if (!h->opt.connect_timeout_ms) h->opt.connect_timeout_ms = HTTP_CONNECT_TIMEOUT_MS;
    if (!h->opt.timeout_ms) h->opt.timeout_ms = HTTP_TIMEOUT_MS;
    if (!h->opt.max_response) h->opt.max_response = HTTP_MAX_RESPONSE;
    h->headers = curl_slist_append(NULL, "Content-Type: application/json");
    h->headers = curl_slist_append(h->headers, "Accept: application/json");
    h->headers = curl_slist_append(h->headers, "Expect:"); /* no 100-continue round trip */
    if (opt->token) {
        size_t n = strlen(opt->token) + sizeof "Authorization: Bearer ";
        char *line = malloc(n);
        if (line) {
            snprintf(line, n, "Authorization: Bearer %s", opt->token);
            h->headers = curl_slist_append(h->headers, line);
            memset(line, 0, n);
            free(line);
        }
    }
    CURL *c = h->curl;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->opt.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->opt.timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    if (opt->ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, opt->ca_file);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onData);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
    *out = h;
    return 0;
}

void httpClose(httpClient *h) {
    if (!h) return;
    if (h->curl) curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    free(h->base);
    free(h);
}

/* Why a transfer failed, in words that point at the fix: curl's own
 * detail (its error buffer, the system's errno), and for the mistakes
 * people make, what to change. */
static void transferCause(httpClient *h, CURLcode cc, char *buf, size_t n) {
    long oserr = 0;
    curl_easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &oserr);
    const char *detail = h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc);
    int plain = strncmp(h->base, "http://", 7) == 0;
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
        snprintf(buf, n, "%s", oserr ? strerror((int)oserr) : detail);
        break;
    case CURLE_COULDNT_RESOLVE_HOST: snprintf(buf, n, "cannot resolve the host name: %s", detail); break;
    case CURLE_OPERATION_TIMEDOUT:
        if (!h->reached)
            snprintf(buf, n, "no connection within %ld ms; LAKE_CONNECT_TIMEOUT sets the limit",
                     h->opt.connect_timeout_ms);
        else
            snprintf(buf, n, "no answer within %ld ms", h->opt.timeout_ms);
        break;
    case CURLE_GOT_NOTHING:
        snprintf(buf, n, "the server closed the connection without an answer%s",
                 plain ? "; if it serves TLS, the URL must start https://" : "");
        break;
    case CURLE_SSL_CONNECT_ERROR:
        snprintf(buf, n, "TLS handshake failed (%s); is it a plain http:// server?", detail);
        break;
    default: snprintf(buf, n, "%s", detail); break;
    }
}

/* The error of a failed transfer. */
static int transferError(httpClient *h, CURLcode cc, const sink *s, lakeError *err) {
    int rc;
    char cause[400];
    transferCause(h, cc, cause, sizeof cause);
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
        rc = errSet(err, LAKE_EUNAVAIL, "%s unreachable (%s)", h->base, cause);
        break;
    case CURLE_URL_MALFORMAT:
        rc = errSet(err, LAKE_ECONFIG, "%s: not a usable URL", h->base);
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
        if (h->opt.ca_file)
            rc = errSet(err, LAKE_ECONFIG, "%s: TLS verification failed (%s): LAKE_CA_FILE %s did not sign the "
                        "server's certificate", h->base, cause, h->opt.ca_file);
        else
            rc = errSet(err, LAKE_ECONFIG, "%s: TLS verification failed (%s): set LAKE_CA_FILE (ca_file) to "
                        "the CA certificate that signed the server's", h->base, cause);
        break;
    case CURLE_WRITE_ERROR:
        if (s->overflow) {
            rc = errSetStatus(err, "payload_too_large", "%s: answer larger than %zu bytes", h->base, s->max);
            break;
        }
        /* fall through */
    default:
        rc = errSet(err, LAKE_EUNAVAIL, "%s: %s", h->base, cause);
    }
    if (err) snprintf(err->cause, sizeof err->cause, "curl %d", (int)cc);
    return rc;
}

/* Decode the answer body: exactly one JSON object; an error object for a
 * non-2xx status. */
static int decode(httpClient *h, long status, const sink *s, cJSON **answer, lakeError *err) {
    jsonFault f = {.off = JSON_NO_OFFSET, .why = "an empty body"};
    cJSON *j = s->buf ? jsonStrictParse(s->buf, s->len, NULL, NULL, &f) : NULL;
    if (status >= 200 && status < 300) {
        if (!cJSON_IsObject(j)) {
            char why[96];
            if (j) snprintf(why, sizeof why, "not an object");
            else jsonFaultText(&f, why, sizeof why);
            cJSON_Delete(j);
            if (f.nomem) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", h->base);
            return errSet(err, LAKE_EFAIL, "%s: malformed answer (not one JSON object: %s)", h->base, why);
        }
        *answer = j;
        return 0;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(e, "request_id");
    int rc;
    if (cJSON_IsString(code) && cJSON_IsString(msg))
        rc = errSetStatus(err, code->valuestring, "%s", msg->valuestring);
    else if (status == 401) rc = errSetStatus(err, "unauthenticated", "%s: unauthenticated", h->base);
    else if (status == 403) rc = errSetStatus(err, "permission_denied", "%s: permission denied", h->base);
    else if (status == 404) rc = errSetStatus(err, "not_found", "%s: not found", h->base);
    else if (status == 503) rc = errSetStatus(err, "unavailable", "%s: busy, retry later", h->base);
    else if (status == 429) rc = errSetStatus(err, "resource_exhausted", "%s: too many requests, retry later", h->base);
    else rc = errSetStatus(err, "internal", "%s: HTTP status %ld", h->base, status);
    if (err && status == 429 && h->retry_after > 0) { /* when the server says the client may come back */
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (in %ld s)", h->retry_after);
    }
    if (err) {
        snprintf(err->cause, sizeof err->cause, "http %ld request_id %s", status,
                 cJSON_IsString(rid) ? rid->valuestring : "-");
    }
    cJSON_Delete(j);
    return rc;
}

static int perform(httpClient *h, const char *path, const char *body, cJSON **answer,
                   lakeError *err) {
    *answer = NULL;
    size_t n = strlen(h->base) + strlen(path) + 1;
    char *url = malloc(n);
    if (!url) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "http");
    snprintf(url, n, "%s%s", h->base, path);
    sink s = {.max = h->opt.max_response};
    CURL *c = h->curl;
    h->errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    int rc;
    h->reached = 1;
    h->retry_after = 0;
    if (cc != CURLE_OK) {
        /* no pre-transfer time: connecting or the handshake failed */
        curl_off_t pretransfer = 0;
        if (curl_easy_getinfo(c, CURLINFO_PRETRANSFER_TIME_T, &pretransfer) == CURLE_OK && pretransfer == 0)
            h->reached = 0;
        rc = transferError(h, cc, &s, err);
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_off_t after = 0;
        if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0)
            h->retry_after = after < HTTP_RETRY_AFTER_MAX ? (long)after : HTTP_RETRY_AFTER_MAX;
        rc = decode(h, status, &s, answer, err);
    }
    free(s.buf);
    free(url);
    return rc;
}

int httpPostJson(httpClient *h, const char *path, const cJSON *body, cJSON **answer,
                 lakeError *err) {
    char *text = body ? cJSON_PrintUnformatted(body) : strdup("{}");
    if (!text) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "http");
    int rc = perform(h, path, text, answer, err);
    cJSON_free(text);
    return rc;
}

int httpReached(const httpClient *h) { return h->reached; }

long httpRetryAfter(const httpClient *h) { return h->retry_after; }
