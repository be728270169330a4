/*
 * server.h - the lake-metasrv HTTP server (libmicrohttpd), used only by
 * lake-metasrv's main.c.
 *
 * Serves GET /v1/health, GET /v1/actions, GET /v1/metrics and
 * POST /v1/actions/NAME over the registry at db, with TLS unless insecure
 * (loopback only), a thread pool sharing a pool of registry connections,
 * connection limits and timeouts, a request body cap answered with 413
 * before the body is read, snapshot permits held until the response is
 * sent, one log line per request on stderr, and a graceful drain on
 * SIGTERM/SIGINT.
 */
#ifndef LAKE_METASRV_SERVER_H
#define LAKE_METASRV_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/registry.h"
#include "core/error.h"

typedef struct serverConfig {
    const char *db;          /* the registry: sqlite:PATH or postgresql://… */
    const char *host;        /* as given in --listen */
    unsigned port;           /* 0: ephemeral */
    const char *tls_cert;    /* PEM files; NULL with insecure */
    const char *tls_key;
    int insecure;
    unsigned threads;
    unsigned max_connections;
    unsigned timeout_s;      /* per connection, idle */
    size_t max_body;
    unsigned permits;        /* concurrent catalog_snapshot builds */
    snapshotBounds bounds;
    unsigned drain_s;        /* longest wait for in-flight requests */
    unsigned pool;           /* registry connections at most */
    unsigned pool_wait_ms;   /* longest wait for a free one, then 503 */
} serverConfig;

/* Run until SIGTERM or SIGINT; prints "listening on URL" first on stdout.
 * Returns 0 after a clean drain. */
int serverRun(const serverConfig *cfg, lakeError *err);

#endif
