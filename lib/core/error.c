/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * error.c - recording failures in a lakeError.
 */
#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

void errClear(lakeError *e) {
    if (!e) return;
    e->code = LAKE_OK;
    e->msg[0] = '\0';
    e->cause[0] = '\0';
    e->status = NULL;
}

/* A message is one line of printable text, whatever a cause or the user's
 * input smuggled in (utf8Fold): no line break, no escape sequence reaching
 * a terminal or a log line, no invalid UTF-8. */
static void oneLine(lakeError *e) {
    char tmp[sizeof e->msg];
    size_t n = utf8Fold(e->msg, tmp, sizeof tmp);
    memcpy(e->msg, tmp, n + 1);
}

static void errVSet(lakeError *e, lakeCode code, const char *fmt, va_list ap) {
    e->code = code;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    oneLine(e);
}

int errSet(lakeError *e, lakeCode code, const char *fmt, ...) {
    if (!e) return code;
    va_list ap;
    va_start(ap, fmt);
    errVSet(e, code, fmt, ap);
    va_end(ap);
    e->cause[0] = '\0';
    e->status = NULL;
    return code;
}

static const struct {
    const char *status;
    int http;
    lakeCode exit;
} statuses[] = {
    {"invalid_argument", 400, LAKE_EDATA},
    {"unauthenticated", 401, LAKE_EPERM},
    {"permission_denied", 403, LAKE_EPERM},
    {"not_found", 404, LAKE_ENOINPUT},
    {"conflict", 409, LAKE_ETEMP},
    /* a version past its retention: gone, and gone for good (HTTP's 410) */
    {"expired", 410, LAKE_EEXPIRED},
    {"failed_precondition", 412, LAKE_EFAIL},
    {"payload_too_large", 413, LAKE_EFAIL},
    /* an address past its allowance of failed authentications (lake-metasrv(8)) */
    {"resource_exhausted", 429, LAKE_ETEMP},
    {"unavailable", 503, LAKE_ETEMP},
    {"internal", 500, LAKE_EFAIL},
};
#define NSTATUSES (sizeof statuses / sizeof statuses[0])

static int statusIndex(const char *status) {
    for (size_t i = 0; status && i < NSTATUSES; i++)
        if (strcmp(statuses[i].status, status) == 0) return (int)i;
    return NSTATUSES - 1; /* internal */
}

int statusHttp(const char *status) { return statuses[statusIndex(status)].http; }

int errSetStatus(lakeError *e, const char *status, const char *fmt, ...) {
    int i = statusIndex(status);
    if (!e) return statuses[i].exit;
    va_list ap;
    va_start(ap, fmt);
    errVSet(e, statuses[i].exit, fmt, ap);
    va_end(ap);
    e->cause[0] = '\0';
    e->status = statuses[i].status;
    return e->code;
}

const char *errStatus(const lakeError *e) {
    if (e->status) return e->status;
    switch (e->code) {
    case LAKE_EUSAGE:
    case LAKE_EDATA: return "invalid_argument";
    case LAKE_ENOINPUT: return "not_found";
    case LAKE_EEXPIRED: return "expired";
    case LAKE_ETEMP: return "unavailable";
    case LAKE_EPERM: return "permission_denied";
    case LAKE_ECONFIG: return "failed_precondition";
    default: return "internal";
    }
}

int errSetErrno(lakeError *e, lakeCode code, int errnum, const char *fmt, ...) {
    if (!e) return code;
    va_list ap;
    va_start(ap, fmt);
    errVSet(e, code, fmt, ap);
    va_end(ap);
    size_t n = strlen(e->msg);
    snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(errnum));
    snprintf(e->cause, sizeof e->cause, "errno %d", errnum);
    e->status = NULL;
    return code;
}

void errPrefix(lakeError *e, const char *fmt, ...) {
    if (!e) return;
    char prefix[256], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* A long message is cut, never overflowed. */
    if (snprintf(e->msg, sizeof e->msg, "%s: %s", prefix, old) >= (int)sizeof e->msg)
        e->msg[sizeof e->msg - 1] = '\0';
    oneLine(e);
}

lakeCode errCodeForErrno(int errnum) {
    return (errnum == ENOENT || errnum == ENOTDIR) ? LAKE_ENOINPUT : LAKE_EFAIL;
}
