/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.h - the lake-metasrv HTTP server (libmicrohttpd), used only by
 * lake-metasrv's main.c.
 *
 * Serves GET /v1/health, GET /v1/actions, GET /v1/metrics and
 * POST /v1/actions/NAME over the registry at db, with TLS unless insecure
 * (loopback only), a thread pool that never waits on the registry (its
 * work runs in the lanes of regwork.h),
 * connection limits and timeouts, a request body cap answered with 413
 * before the body is read, snapshot permits held until the response is
 * sent, one log line per request on stderr, an audit row in the registry
 * for every mutating action and refusal (registry.h), an allowance of
 * failed authentications per client address (authlimit.h), a graceful drain on
 * SIGTERM/SIGINT, and the certificate and key read again on SIGHUP
 * (tlscreds.h).
 */
#ifndef LAKE_METASRV_SERVER_H
#define LAKE_METASRV_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/registry.h"
#include "core/error.h"

/* The TLS the server offers unless --tls-priority says otherwise
 * (lake-metasrv(8), TLS), as Mozilla's "intermediate" profile: TLS 1.2 and
 * 1.3 only; ECDHE key exchange (no static RSA, no DHE: every TLS 1.2 client
 * does ECDHE, and DHE would need parameters of its own); AEAD ciphers only
 * (no CBC, no SHA-1 MAC); X25519, P-256 and P-384; and the server's order
 * wins over the client's. */
#define SERVER_TLS_PRIORITY                                                                   \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:" \
    "+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-GCM:-MAC-ALL:+AEAD:-GROUP-ALL:+GROUP-X25519:"   \
    "+GROUP-SECP256R1:+GROUP-SECP384R1:%SERVER_PRECEDENCE"

typedef struct serverConfig {
    const char *db;          /* the registry: sqlite:PATH or postgresql://… */
    const char *host;        /* as given in --listen */
    unsigned port;           /* 0: ephemeral */
    const char *tls_cert;    /* PEM files; NULL with insecure */
    const char *tls_key;
    const char *tls_priority; /* GnuTLS priority string; NULL with insecure */
    int insecure;
    unsigned threads;
    unsigned max_connections;
    unsigned timeout_s;      /* per connection, idle */
    size_t max_body;
    unsigned permits;        /* concurrent catalog_snapshot builds */
    snapshotBounds bounds;
    unsigned drain_s;        /* longest wait for in-flight requests */
    unsigned pool;           /* registry workers, half for reads and half for writes */
    unsigned queue_wait_ms;   /* longest wait for a worker in a lane's queue, then 503 */
    unsigned max_waiting;    /* requests queued or running on the registry, per lane */
    int64_t presign_default; /* seconds a vended URL lasts when none is asked */
    int64_t presign_max;     /* seconds a vended URL may last at most */
    int64_t retention;       /* seconds: expire without older_than (and so gc) uses it */
    int64_t audit_retention; /* seconds an audit row is kept (pruned at start and hourly) */
    unsigned auth_failures;  /* failed authentications a minute per address (authlimit.h); 0: no limit */
} serverConfig;

/* Run until SIGTERM or SIGINT (SIGHUP: reload the certificate and key);
 * prints "listening on URL" first on stdout.
 * Returns 0 after a clean drain. */
int serverRun(const serverConfig *cfg, lakeError *err);

#endif
