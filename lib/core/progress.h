/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * progress.h - a one-line progress bar on stderr.
 *
 * Drawn only when stderr is a terminal and the work has run for more than
 * a second (PROGRESS_AUTO), or always (PROGRESS_ON, --progress), or never
 * (PROGRESS_OFF, --no-progress or -q).  Redrawn at most ten times a second;
 * costs one clock read per update otherwise.  A bar that counts rows too
 * (lake-query --import) shows "N rows" before the bytes.
 */
#ifndef LAKE_PROGRESS_H
#define LAKE_PROGRESS_H

#include <stdint.h>

typedef enum { PROGRESS_AUTO, PROGRESS_ON, PROGRESS_OFF } progressMode;

typedef struct progress {
    progressMode mode;
    const char *label;
    int64_t total;   /* -1 when unknown */
    int64_t done;
    int64_t rows;    /* -1 until progressRows is called */
    double start;
    double last_draw;
    int drawn;
} progress;

void progressStart(progress *p, progressMode mode, const char *label, int64_t total);
/* n more bytes done. */
void progressAdd(progress *p, int64_t n);
/* n more rows done (the bar shows the count from the first call on). */
void progressRows(progress *p, int64_t n);
/* Erase the bar if one was drawn. */
void progressEnd(progress *p);
/* Whether a bar is on stderr now (safe to call from a signal handler,
 * which erases it before saying why the program stops). */
int progressOnScreen(void);

#endif
