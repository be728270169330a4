/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * error.h - the one status type of lake.
 *
 * Every function below main() that can fail takes a lakeError * and returns
 * an int: 0 on success, otherwise the stable code it stored in the error.
 * The code *is* the process exit status of DESIGN §1, so main() maps an
 * error to an exit status exactly once: exit(err.code).  The message is a
 * human one-liner for stderr; the cause (errno, curl, SQLite, HTTP status)
 * is kept apart for logs and traces.
 */
#ifndef LAKE_ERROR_H
#define LAKE_ERROR_H

#include <stddef.h>

typedef enum {
    LAKE_OK = 0,
    LAKE_EFAIL = 1,      /* failed for a reason not listed below */
    LAKE_EUSAGE = 64,    /* bad option or argument */
    LAKE_EDATA = 65,     /* malformed input, digest mismatch, outside stage */
    LAKE_ENOINPUT = 66,  /* a named input does not exist */
    LAKE_EEXPIRED = 67,  /* a table version past its retention: expired */
    LAKE_EUNAVAIL = 69,  /* authority or object store unreachable */
    LAKE_ETEMP = 75,     /* temporary failure, retry later */
    LAKE_EPERM = 77,     /* unauthenticated or permission denied */
    LAKE_ECONFIG = 78    /* configuration error */
} lakeCode;

typedef struct lakeError {
    lakeCode code;
    char msg[512];   /* one line, shown to the user: folded by utf8Fold
                        (line breaks to a blank, controls and bad UTF-8
                        to \xNN, C1 controls to \u00NN) */
    char cause[256]; /* detail for logs: "errno 2", "curl 7", "sqlite 5" */
    const char *status; /* action error code ("not_found"…) or NULL */
} lakeError;

/* Clear an error before use (not needed for a zeroed struct). */
void errClear(lakeError *e);

/* Record code and a printf-style message; returns code so callers can
 * write "return errSet(err, LAKE_EDATA, "...")".  A NULL e is allowed. */
int errSet(lakeError *e, lakeCode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like errSet, and appends ": strerror(errnum)" and records the errno. */
int errSetErrno(lakeError *e, lakeCode code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Record an action error (DESIGN §5): status is one of invalid_argument,
 * unauthenticated, permission_denied, not_found, conflict,
 * failed_precondition, payload_too_large, resource_exhausted, unavailable,
 * expired, internal; the exit code follows from it (DESIGN §1: 400 -> 65,
 * 401/403 -> 77, 404 -> 66, 410 expired -> 67, 409/429/503 -> 75, the
 * rest -> 1). */
int errSetStatus(lakeError *e, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The HTTP status of an action error code; an unknown code is treated as
 * internal (500). */
int statusHttp(const char *status);
/* The action error code for an error: its status if set, else derived from
 * its exit code. */
const char *errStatus(const lakeError *e);

/* Prefix the message with "prefix: " (e.g. the input name) keeping code. */
void errPrefix(lakeError *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The code a failed open()/stat() errno maps to: a missing name (ENOENT,
 * ENOTDIR) is 66; anything else, permissions included, is a plain 1 (77 is
 * kept for the lake's own authentication). */
lakeCode errCodeForErrno(int errnum);

#endif
