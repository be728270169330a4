/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tap.h - the smallest TAP producer: ok(cond, name...), then tapDone().
 * tests/run counts the "ok" / "not ok" lines.
 */
#ifndef LAKE_TAP_H
#define LAKE_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tapCount, tapFailed;

__attribute__((format(printf, 2, 3))) static int ok(int cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%sok %d - ", cond ? "" : "not ", ++tapCount);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!cond) tapFailed++;
    return cond;
}

static int tapDone(void) {
    printf("1..%d\n", tapCount);
    return tapFailed ? 1 : 0;
}

#endif
