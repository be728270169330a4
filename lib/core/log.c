/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.c - stderr diagnostics and LAKE_TRACE lines.
 */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

static const char *progname = "lake";
static int quiet;
static int errored; /* an error line was printed */
/* this thread's sink (logSinkSet), or NULL: stderr */
static _Thread_local const logSink *sink;

const logSink *logSinkSet(const logSink *s) {
    const logSink *old = sink;
    sink = s;
    return old;
}

const logSink *logSinkGet(void) { return sink; }

void logInit(const char *name) {
    const char *slash = strrchr(name, '/');
    progname = slash ? slash + 1 : name;
}

const char *logProgname(void) { return progname; }
void logSetQuiet(int q) { quiet = q; }
int logQuiet(void) { return quiet; }
int logErrored(void) { return errored; }

/* The one way a line reaches stderr: "prefix: text", folded by utf8Fold
 * (whatever input the text quotes cannot break the line, reach the
 * terminal as an escape, or be invalid UTF-8), in one fprintf so that
 * concurrent writers do not interleave words. */
static void logLine(const char *prefix, const char *text) {
    char folded[2048];
    utf8Fold(text, folded, sizeof folded);
    if (sink) {
        if (sink->fn) sink->fn(sink->ctx, folded);
        return;
    }
    fprintf(stderr, "%s: %s\n", prefix, folded);
}

static void logV(const char *fmt, va_list ap) {
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    logLine(progname, line);
}

void logError(const lakeError *e) {
    errored = 1;
    logLine(progname, e->msg[0] ? e->msg : "failed");
}

void logErrorf(const char *fmt, ...) {
    errored = 1;
    va_list ap;
    va_start(ap, fmt);
    logV(fmt, ap);
    va_end(ap);
}

void logWarn(const char *fmt, ...) {
    if (quiet) return;
    va_list ap;
    va_start(ap, fmt);
    logV(fmt, ap);
    va_end(ap);
}

int traceEnabled(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *v = getenv("LAKE_TRACE");
        cached = v && *v && strcmp(v, "0") != 0;
    }
    return cached;
}

void traceLine(const char *kind, const char *fmt, ...) {
    if (!traceEnabled()) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char folded[2048];
    utf8Fold(line, folded, sizeof folded);
    fprintf(stderr, "trace: %s %s\n", kind, folded);
}

void logWarnLine(void *ctx, const char *line) {
    (void)ctx;
    const logSink *old = logSinkSet(NULL);
    logWarn("%s", line);
    logSinkSet(old);
}
