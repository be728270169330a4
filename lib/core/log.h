/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.h - diagnostics on stderr, prefixed with the program name.
 *
 * stdout carries data only; everything a person reads goes to stderr as
 * "prog: message".  -q silences warnings and notes, never errors.
 * LAKE_TRACE=1 adds one "trace: ..." line per call to the metadata source
 * or the object store (DESIGN §10), which tests count to see what a command
 * really cost.
 */
#ifndef LAKE_LOG_H
#define LAKE_LOG_H

#include "core/error.h"

/* Set the program name used as prefix (basename of argv[0] is fine). */
void logInit(const char *progname);

/* Where this thread's error and warning lines go in place of stderr (the
 * public library, lib/api: never print unless asked): fn gets the folded
 * text without the program's name; a NULL fn drops them.  s NULL: stderr
 * again.  Returns the sink that was set, to be put back. */
typedef struct logSink {
    void (*fn)(void *ctx, const char *line);
    void *ctx;
} logSink;
const logSink *logSinkSet(const logSink *s);
/* This thread's sink, or NULL (stderr): what core/thread.h's threads
 * start with. */
const logSink *logSinkGet(void);
const char *logProgname(void);
void logSetQuiet(int quiet);
int logQuiet(void);

/* "prog: message" for an error; always printed, even with -q. */
void logError(const lakeError *e);
void logErrorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* True once logError or logErrorf has printed an error. */
int logErrored(void);
/* "prog: message" for a warning; dropped with -q. */
void logWarn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A warning line of the public library's (lake_set_warn's callback: ctx
 * unused) printed as the program's own, on stderr: "prog: line",
 * dropped with -q. */
void logWarnLine(void *ctx, const char *line);

/* True when LAKE_TRACE is set to a non-empty value other than "0". */
int traceEnabled(void);
/* "trace: <kind> <rest>" where kind is "source" or "stage". */
void traceLine(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
