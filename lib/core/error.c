/*
 * error.c - recording failures in a lakeError.
 */
#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void errClear(lakeError *e) {
    if (!e) return;
    e->code = LAKE_OK;
    e->msg[0] = '\0';
    e->cause[0] = '\0';
}

static void errVSet(lakeError *e, lakeCode code, const char *fmt, va_list ap) {
    e->code = code;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    /* A message is one line: fold any newline a cause smuggled in. */
    for (char *p = e->msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

int errSet(lakeError *e, lakeCode code, const char *fmt, ...) {
    if (!e) return code;
    va_list ap;
    va_start(ap, fmt);
    errVSet(e, code, fmt, ap);
    va_end(ap);
    e->cause[0] = '\0';
    return code;
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
}

lakeCode errCodeForErrno(int errnum) {
    return (errnum == ENOENT || errnum == ENOTDIR) ? LAKE_ENOINPUT : LAKE_EFAIL;
}
