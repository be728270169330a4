/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.h - a small JSON-over-HTTPS client on libcurl, for the metadata
 * authority (DESIGN §5).
 *
 * Promises: TLS peers are verified (against ca_file when given, else the
 * system store); every request has a connect timeout and a total timeout;
 * request and response bodies are bounded (a larger response is an error,
 * never a truncated answer); an answer is exactly one well-formed JSON
 * object.  Errors map to the exit codes of DESIGN §1: cannot connect or
 * time out -> 69; an error object from the server -> its code's status
 * (errSetStatus); anything else malformed -> 1.
 */
#ifndef LAKE_HTTP_H
#define LAKE_HTTP_H

#include <stddef.h>

#include "core/error.h"

struct cJSON;

typedef struct httpClient httpClient;

typedef struct httpOptions {
    const char *ca_file;     /* NULL: the system store */
    const char *token;       /* bearer token, NULL for none */
    long connect_timeout_ms; /* 0: HTTP_CONNECT_TIMEOUT_MS */
    long timeout_ms;         /* 0: HTTP_TIMEOUT_MS */
    size_t max_response;     /* 0: HTTP_MAX_RESPONSE */
} httpOptions;

#define HTTP_CONNECT_TIMEOUT_MS 2000
/* per endpoint, when the client has others to try */
#define HTTP_FAILOVER_CONNECT_TIMEOUT_MS 1000
#define HTTP_TIMEOUT_MS 30000
#define HTTP_MAX_RESPONSE (72u * 1024 * 1024)

/* A client for base (e.g. "https://lake.example:7700"); one connection is
 * kept alive across calls. */
int httpOpen(const char *base, const httpOptions *opt, httpClient **out, lakeError *err);
void httpClose(httpClient *h);

/* POST body (a JSON object; NULL sends {}) to base + path and decode the
 * answer.  *answer is a new object on success. */
int httpPostJson(httpClient *h, const char *path, const struct cJSON *body,
                 struct cJSON **answer, lakeError *err);

/* After a failed httpPostJson: 0 when the request never reached the server
 * (no connection, the TLS handshake failed), so that no effect of it can
 * exist and another server may be asked; 1 when it may have (it was sent,
 * in whole or in part, or answered). */
int httpReached(const httpClient *h);

/* The seconds the last answer's Retry-After asked the client to wait
 * (a number of seconds or an HTTP date, as libcurl reads it), at most
 * HTTP_RETRY_AFTER_MAX; 0 when it had none, or there was no answer. */
#define HTTP_RETRY_AFTER_MAX 3600L
long httpRetryAfter(const httpClient *h);

#endif
